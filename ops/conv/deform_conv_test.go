package conv

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestDeformConv checks DeformConv against Conv: zero offsets sample the
// grid (Conv), a mask scales every tap, a whole-pixel offset shifts the
// input, and a half-pixel offset interpolates halfway.
func TestDeformConv(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	for _, c := range []struct {
		name        string
		x, w        []int
		group, og   int
		strides     []int
		pads        []int
		shift, mask float32 // offset along the last axis; mask value (0: none)
	}{
		{"grid 2-D groups", []int{2, 4, 7, 6}, []int{6, 2, 3, 2}, 2, 2, []int{2, 1}, []int{1, 1, 1, 0}, 0, 0},
		{"grid 1-D", []int{1, 3, 9}, []int{2, 3, 3}, 1, 3, []int{1}, []int{1, 1}, 0, 0},
		{"grid 3-D", []int{1, 2, 4, 5, 4}, []int{3, 2, 2, 3, 2}, 1, 1, []int{1, 1, 1}, []int{0, 1, 0, 1, 1, 1}, 0, 0},
		{"mask", []int{1, 4, 6, 6}, []int{4, 4, 3, 3}, 1, 2, []int{1, 1}, []int{1, 1, 1, 1}, 0, 0.5},
		{"whole-pixel offset", []int{1, 2, 6, 7}, []int{3, 2, 3, 3}, 1, 1, []int{1, 1}, []int{1, 1, 1, 1}, 1, 0},
		{"half-pixel offset", []int{1, 2, 6, 7}, []int{3, 2, 3, 3}, 1, 1, []int{1, 1}, []int{1, 1, 1, 1}, 0.5, 0.75},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := len(c.x) - 2
			xv, wv, bv := randomFloats(r, c.x), randomFloats(r, c.w), randomFloats(r, []int{c.w[0]})
			dil := make([]int, d)
			for i := range dil {
				dil[i] = 1
			}
			conv := func(shiftPads int) refResult {
				p := slices.Clone(c.pads)
				p[d-1] -= shiftPads
				p[2*d-1] += shiftPads
				return refConvolve(xv, c.x, wv, c.w, bv, c.group, c.strides, dil, p, false)
			}
			base := conv(0)
			out := base.shape[2:]
			kk := ops.ProdInts(c.w[2:])
			offShape := append([]int{c.x[0], c.og * kk * d}, out...)
			off := make([]float32, ops.ProdInts(offShape))
			osz := ops.ProdInts(out)
			for i := range off {
				if (i/osz)%d == d-1 {
					off[i] = c.shift
				}
			}
			i64 := ints64
			attrs := []*onnxpb.Attribute{opstest.AttrInt("group", int64(c.group)), opstest.AttrInt("offset_group", int64(c.og)), opstest.AttrInts("strides", i64(c.strides)...), opstest.AttrInts("pads", i64(c.pads)...), opstest.AttrInts("kernel_shape", i64(c.w[2:])...)}
			in := []*tensor.Tensor{tensor.From(c.x, xv), tensor.From(c.w, wv), tensor.From(offShape, off), tensor.From([]int{c.w[0]}, bv)}
			if c.mask != 0 {
				ms := append([]int{c.x[0], c.og * kk}, out...)
				mv := make([]float32, ops.ProdInts(ms))
				for i := range mv {
					mv[i] = c.mask
				}
				in = append(in, tensor.From(ms, mv))
			}
			y, err := mustCompile(t, spec{op: "DeformConv", attrs: attrs, inputs: len(in)}).run1(in...)
			if err != nil {
				t.Fatal(err)
			}
			want := base
			scale := 1.0
			if c.mask != 0 {
				scale = float64(c.mask)
			}
			switch c.shift {
			case 1:
				want = conv(1)
			case 0.5:
				s1 := conv(1)
				want.y = slices.Clone(base.y)
				for i := range want.y {
					want.y[i] = (base.y[i] + s1.y[i]) / 2
					want.mag[i] = base.mag[i] + s1.mag[i]
				}
			}
			if scale != 1 {
				want.y = slices.Clone(want.y)
				for i := range want.y {
					b := float64(bv[i/osz%c.w[0]])
					want.y[i] = (want.y[i]-b)*scale + b
				}
			}
			want.check(t, y, false)
		})
	}
	// an offset of the wrong shape is an input error
	_, err := mustCompile(t, spec{op: "DeformConv", inputs: 4}).run(
		tensor.From([]int{1, 1, 3, 3}, make([]float32, 9)), tensor.From([]int{1, 1, 2, 2}, make([]float32, 4)),
		tensor.From([]int{1, 4, 2, 2}, make([]float32, 16)), tensor.From([]int{1}, make([]float32, 1)))
	if !errors.Is(err, ops.ErrInput) {
		t.Errorf("offset of 4 channels for 8: %v, want an input error", err)
	}
	// offset_group must be positive
	if _, err := compile(spec{op: "DeformConv", inputs: 3, attrs: []*onnxpb.Attribute{opstest.AttrInt("offset_group", 0)}}); err == nil {
		t.Error("offset_group 0: built")
	}
}

// TestDeformConvFloat64 runs DeformConv in FP64: computed in float32 and
// widened, the same values as the float32 run.
func TestDeformConvFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	xs, ws, offs := []int{1, 2, 5, 5}, []int{3, 2, 3, 3}, []int{1, 18, 3, 3}
	in := []*tensor.Tensor{tensor.From(xs, randomFloats(r, xs)), tensor.From(ws, randomFloats(r, ws)), tensor.From(offs, randomFloats(r, offs))}
	cp := mustCompile(t, spec{op: "DeformConv", inputs: 3})
	want, err := cp.run1(in...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = castTo(t, in[i], tensor.Float64)
	}
	got, err := cp.run1(in...)
	if err != nil {
		t.Fatal(err)
	}
	if got.DType != tensor.Float64 || !slices.Equal(got.Shape, want.Shape) {
		t.Fatalf("output %v%v", got.DType, got.Shape)
	}
	for i, v := range got.Data.([]float64) {
		if float32(v) != want.Data.([]float32)[i] {
			t.Fatalf("y[%d] = %v in FP64, %v in FP32", i, v, want.Data.([]float32)[i])
		}
	}
}
