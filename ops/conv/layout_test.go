package conv

import (
	"testing"

	"github.com/quantserve/quantserve/tensor"
)

// TestExpandScale holds expandScale to its definition, value (i, j) of an
// image of n×c channels being the scale's (i mod dn, j mod dc), for
// scales per image and channel, per channel, per image, of one value, and
// of lower rank than the image.
func TestExpandScale(t *testing.T) {
	img := []int{3, 5, 2, 2}
	for _, shape := range [][]int{{3, 5, 1, 1}, {1, 5, 1, 1}, {3, 1, 1, 1}, {1, 1, 1, 1}, {5, 1, 1}, {1, 1}} {
		size, _ := tensor.NumElements(shape)
		v := make([]float32, size)
		for i := range v {
			v[i] = float32(i) + 0.5
		}
		s := tensor.From(shape, v)
		off := len(img) - len(shape)
		dn, dc := 1, 1
		if off <= 0 {
			dn = shape[-off]
		}
		if off <= 1 {
			dc = shape[1-off]
		}
		got := expandScale(s, img)
		if len(got) != img[0]*img[1] {
			t.Fatalf("scale %v: %d values, want %d", shape, len(got), img[0]*img[1])
		}
		for i := 0; i < img[0]; i++ {
			for j := 0; j < img[1]; j++ {
				if want := v[i%dn*dc+j%dc]; got[i*img[1]+j] != want {
					t.Fatalf("scale %v: (%d, %d) = %v, want %v", shape, i, j, got[i*img[1]+j], want)
				}
			}
		}
	}
}
