package norm

import (
	"slices"
	"testing"
	"unsafe"
)

// TestBroadcastRead: a parameter that the broadcast does not repeat is
// read where it lies; one it repeats is ops.BroadcastTo's copy; one that
// does not broadcast to the rows is an error either way.
func TestBroadcastRead(t *testing.T) {
	data := []float32{1, 2, 3, 4}
	cases := []struct {
		data       []float32
		shape, out []int
		want       []float32
		same, bad  bool
	}{
		{data, []int{4}, []int{4}, data, true, false},
		{data, []int{4}, []int{1, 4}, data, true, false},
		{data, []int{2, 2}, []int{2, 2}, data, true, false},
		{data, []int{1, 4}, []int{4}, nil, false, true},
		{data, []int{4, 1}, []int{1, 4}, nil, false, true},
		{data[:2], []int{2, 1}, []int{2, 2}, []float32{1, 1, 2, 2}, false, false},
		{data[:2], []int{2}, []int{2, 2}, []float32{1, 2, 1, 2}, false, false},
		{data[:1], []int{1}, []int{3}, []float32{1, 1, 1}, false, false},
	}
	for _, c := range cases {
		got, err := broadcastRead(c.data, c.shape, c.out)
		if c.bad {
			if err == nil {
				t.Errorf("%v to %v: no error", c.shape, c.out)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%v to %v: %v, %v; want %v", c.shape, c.out, got, err, c.want)
			continue
		}
		if same := unsafe.SliceData(got) == unsafe.SliceData(c.data); same != c.same {
			t.Errorf("%v to %v: reads the parameter in place: %v, want %v", c.shape, c.out, same, c.same)
		}
	}
}
