package conv

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/tensor"
)

func convTransposeCases() []convCase {
	return []convCase{
		{name: "2-D output_padding", x: []int{1, 2, 5, 5}, w: []int{2, 3, 3, 3}, strides: []int{2, 2}, pads: []int{1, 1, 1, 1}, outPad: []int{1, 1}, bias: true, wantOut: []int{10, 10}, wantPBegin: []int{1, 1}},
		{name: "1-D dilated", x: []int{2, 3, 7}, w: []int{3, 2, 4}, strides: []int{3}, dil: []int{2}, wantOut: []int{25}, wantPBegin: []int{0}},
		{name: "3-D", x: []int{1, 2, 3, 4, 3}, w: []int{2, 2, 2, 3, 2}, strides: []int{2, 1, 2}, wantOut: []int{6, 6, 6}, wantPBegin: []int{0, 0, 0}},
		{name: "groups", x: []int{2, 4, 6, 6}, w: []int{4, 3, 3, 3}, group: 2, strides: []int{2, 2}, pads: []int{0, 1, 1, 0}, bias: true, wantOut: []int{12, 12}, wantPBegin: []int{0, 1}},
		{name: "depthwise", x: []int{1, 4, 5, 5}, w: []int{4, 1, 3, 3}, group: 4, strides: []int{2, 2}, wantOut: []int{11, 11}, wantPBegin: []int{0, 0}},
		{name: "many tiles", x: []int{1, 64, 20, 20}, w: []int{64, 32, 4, 4}, strides: []int{2, 2}, pads: []int{1, 1, 1, 1}, bias: true, wantOut: []int{40, 40}, wantPBegin: []int{1, 1}},
		{name: "output_shape beyond the natural size", x: []int{1, 2, 4, 4}, w: []int{2, 2, 3, 3}, strides: []int{2, 2}, outShape: []int{10, 9}, wantOut: []int{10, 9}, wantPBegin: []int{0, 0}},
		{name: "output_shape within it", x: []int{1, 2, 4, 4}, w: []int{2, 2, 3, 3}, strides: []int{2, 2}, outShape: []int{7, 8}, wantOut: []int{7, 8}, wantPBegin: []int{0, 0}},
		// 3 inputs, kernel 3, stride 2: 7 outputs in full, 6 kept; the odd
		// padding goes last for SAME_UPPER from opset 11, first before it.
		{name: "SAME_UPPER", x: []int{1, 2, 3, 3}, w: []int{2, 1, 3, 3}, strides: []int{2, 2}, autoPad: "SAME_UPPER", wantOut: []int{6, 6}, wantPBegin: []int{0, 0}},
		{name: "SAME_LOWER", x: []int{1, 2, 3, 3}, w: []int{2, 1, 3, 3}, strides: []int{2, 2}, autoPad: "SAME_LOWER", wantOut: []int{6, 6}, wantPBegin: []int{1, 1}},
		{name: "SAME_UPPER opset 10", opset: 10, x: []int{1, 2, 3, 3}, w: []int{2, 1, 3, 3}, strides: []int{2, 2}, autoPad: "SAME_UPPER", wantOut: []int{6, 6}, wantPBegin: []int{1, 1}},
		{name: "SAME_LOWER opset 10", opset: 10, x: []int{1, 2, 3, 3}, w: []int{2, 1, 3, 3}, strides: []int{2, 2}, autoPad: "SAME_LOWER", wantOut: []int{6, 6}, wantPBegin: []int{0, 0}},
		{name: "SAME_UPPER output_shape", x: []int{1, 2, 3, 3}, w: []int{2, 1, 3, 3}, strides: []int{2, 2}, autoPad: "SAME_UPPER", outShape: []int{5, 4}, wantOut: []int{5, 4}, wantPBegin: []int{1, 1}},
	}
}

// TestConvTransposeMatchesDefinition runs ConvTranspose cases as
// TestConvMatchesDefinition runs Conv's.
func TestConvTransposeMatchesDefinition(t *testing.T) {
	for _, c := range convTransposeCases() {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(len(c.name)), 6))
			x := tensor.From(c.x, randomFloats(r, c.x))
			w := tensor.From(c.w, randomFloats(r, c.w))
			var b *tensor.Tensor
			var bv []float32
			if c.bias {
				bv = randomFloats(r, []int{c.w[1] * max(c.group, 1)})
				b = tensor.From([]int{len(bv)}, bv)
			}
			group, strides, dil, _ := c.axes()
			ref := refConvTranspose(x.Data.([]float32), c.x, w.Data.([]float32), c.w, bv, group, strides, dil, c.wantPBegin, c.wantOut)
			opset := c.opset
			if opset == 0 {
				opset = 22
			}
			var int8Ref *tensor.Tensor
			for _, e := range engines() {
				for _, mode := range convModes {
					cp := compileMode(t, "ConvTranspose", opset, c.attrs(), w, b, mode, e)
					in := []*tensor.Tensor{x, w}
					if b != nil {
						in = append(in, b)
					}
					y, err := cp.run1(in...)
					if err != nil {
						t.Fatalf("%s %s: %v", engineName(e), mode, err)
					}
					int8 := mode != "input weight" && strings.Contains(cp.layers()[0], " int8")
					t.Run(engineName(e)+" "+mode, func(t *testing.T) { ref.check(t, y, int8) })
					if int8 {
						if int8Ref == nil {
							int8Ref = y
						} else if !slices.Equal(int8Ref.Data.([]float32), y.Data.([]float32)) {
							t.Errorf("%s: int8 results differ from the first table's", engineName(e))
						}
					}
				}
			}
			if c.name == "many tiles" && int8Ref == nil {
				t.Error("no int8 run: the layer stayed float32")
			}
		})
	}
}

// TestConvTransposeGeometry checks the geometry the operator reports for
// the gradient code: the convolution it is the adjoint of, with the
// padding its model's opset gives.
func TestConvTransposeGeometry(t *testing.T) {
	for _, c := range convTransposeCases() {
		opset := c.opset
		if opset == 0 {
			opset = 22
		}
		cp := mustCompile(t, spec{op: "ConvTranspose", opset: opset, attrs: c.attrs(), inputs: 2})
		g, err := cp.op.(*Transposed).Geometry(c.x, c.w)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(g.In, c.wantOut) || !slices.Equal(g.PadBegin, c.wantPBegin) || !slices.Equal(g.Out, c.x[2:]) || g.C != c.w[1]*max(c.group, 1) || g.M != c.x[1] {
			t.Errorf("%s: geometry %+v, want In %v PadBegin %v", c.name, *g, c.wantOut, c.wantPBegin)
		}
	}
}
