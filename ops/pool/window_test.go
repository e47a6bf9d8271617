package pool

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
)

// TestWindowAttributes: MaxPool's, AveragePool's and LpPool's window
// attributes parse into the Window their attributes embed, beside each
// one's own, and Window.Geometry lays them over an input as worked out
// by hand; an attribute of another pool is refused.
func TestWindowAttributes(t *testing.T) {
	window := []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 3, 2), opstest.AttrInts("strides", 2, 1), opstest.AttrInts("pads", 1, 0, 1, 1), opstest.AttrInts("dilations", 1, 2), opstest.AttrInt("ceil_mode", 1)}
	want := Window{AutoPad: "NOTSET", KernelShape: []int64{3, 2}, Strides: []int64{2, 1}, Pads: []int64{1, 0, 1, 1}, Dilations: []int64{1, 2}, CeilMode: true}
	for _, c := range []struct {
		op    string
		own   *onnxpb.Attribute
		check func(params any) (*Window, error)
	}{
		{"MaxPool", opstest.AttrInt("storage_order", 1), func(p any) (*Window, error) {
			a := p.(*MaxPoolAttrs)
			if a.StorageOrder != 1 {
				return nil, fmt.Errorf("storage_order %d", a.StorageOrder)
			}
			return &a.Window, nil
		}},
		{"AveragePool", opstest.AttrInt("count_include_pad", 1), func(p any) (*Window, error) {
			a := p.(*AveragePoolAttrs)
			if !a.CountIncludePad {
				return nil, errors.New("count_include_pad not set")
			}
			return &a.Window, nil
		}},
		{"LpPool", opstest.AttrInt("p", 3), func(p any) (*Window, error) {
			a := p.(*LpPoolAttrs)
			if a.P != 3 {
				return nil, fmt.Errorf("p %d", a.P)
			}
			return &a.Window, nil
		}},
	} {
		_, params, err := opstest.Compile(opstest.Node{Op: c.op, Opset: 22, Attrs: append(slices.Clone(window), c.own)}, 1)
		if err != nil {
			t.Fatalf("%s: %v", c.op, err)
		}
		w, err := c.check(params)
		if err != nil {
			t.Fatalf("%s: %v", c.op, err)
		}
		if fmt.Sprint(*w) != fmt.Sprint(want) {
			t.Errorf("%s window %+v, want %+v", c.op, *w, want)
		}
		// Along H: 7 rows, a 3-row window every 2 from row −1, ceil:
		// ⌈(7+2−3)/2⌉+1 = 4 outputs. Along W: 5 columns, 2 taps 2 apart
		// (extent 3) every column, one column of padding at the end:
		// 5+1−3+1 = 4 outputs.
		g, err := w.Geometry([]int{2, 3, 7, 5})
		if err != nil {
			t.Fatalf("%s geometry: %v", c.op, err)
		}
		if got := fmt.Sprint(g.N, g.C, g.In, g.Out, g.PadBegin, g.PadEnd); got != "2 3 [7 5] [4 4] [1 0] [1 1]" {
			t.Errorf("%s geometry: N C In Out PadBegin PadEnd = %s", c.op, got)
		}
		if _, err := w.Geometry([]int{2, 3, 7}); err == nil {
			t.Errorf("%s geometry of a rank-3 input for a 2-D kernel: no error", c.op)
		}
	}
	for _, c := range []struct {
		op    string
		other *onnxpb.Attribute
	}{
		{"MaxPool", opstest.AttrInt("count_include_pad", 1)},
		{"AveragePool", opstest.AttrInt("storage_order", 1)},
		{"LpPool", opstest.AttrInt("storage_order", 1)},
	} {
		_, _, err := opstest.Compile(opstest.Node{Op: c.op, Opset: 22, Attrs: []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 2), c.other}}, 1)
		if !errors.Is(err, onnx.ErrUnsupported) {
			t.Errorf("%s with %s: %v, want unsupported", c.op, c.other.Name, err)
		}
	}
}
