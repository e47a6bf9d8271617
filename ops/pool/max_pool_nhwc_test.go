package pool

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestMaxPoolNHWCMatchesONNX runs quantserve's channels-last MaxPool on
// every kernel table over windows with pads, strides, dilations,
// ceil_mode and auto_pad (NaN and infinities among the values), against
// ONNX's MaxPool on the same image in NCHW: the same shape and the same
// bits, on one thread and two alike; with nchw_out, ONNX's output itself.
func TestMaxPoolNHWCMatchesONNX(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	var tables []*ops.Context
	for _, tb := range dispatch.Available() {
		e := gemm.New(tb, 1)
		defer e.Close()
		tables = append(tables, ops.NewContext(context.Background(), e, false))
	}
	type window struct {
		kernel, pads, strides, dilations []int64
		ceil                             bool
		autoPad                          string
	}
	windows := []window{
		{kernel: []int64{3, 3}, pads: []int64{1, 1, 1, 1}, strides: []int64{2, 2}}, // ResNet's stem
		{kernel: []int64{2, 2}, strides: []int64{2, 2}},
		{kernel: []int64{3, 3}},
		{kernel: []int64{3, 2}, pads: []int64{0, 1, 2, 0}, strides: []int64{1, 2}},
		{kernel: []int64{3, 3}, pads: []int64{1, 1, 1, 1}, strides: []int64{2, 2}, ceil: true},
		{kernel: []int64{2, 3}, dilations: []int64{2, 1}, strides: []int64{1, 3}, ceil: true},
		{kernel: []int64{2, 3}, dilations: []int64{1, 2}, pads: []int64{0, 2, 1, 1}, strides: []int64{1, 2}},
		{kernel: []int64{3, 3}, strides: []int64{2, 2}, autoPad: "SAME_UPPER"},
		{kernel: []int64{4, 1}, strides: []int64{3, 1}, autoPad: "SAME_LOWER"},
		{kernel: []int64{1, 1}},
	}
	shapes := [][]int{{1, 1, 5, 5}, {1, 64, 14, 14}, {2, 3, 7, 9}, {1, 17, 6, 11}, {3, 8, 4, 4}, {1, 130, 5, 6}}
	for _, wd := range windows {
		attrs := []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", wd.kernel...)}
		if wd.pads != nil {
			attrs = append(attrs, opstest.AttrInts("pads", wd.pads...))
		}
		if wd.strides != nil {
			attrs = append(attrs, opstest.AttrInts("strides", wd.strides...))
		}
		if wd.dilations != nil {
			attrs = append(attrs, opstest.AttrInts("dilations", wd.dilations...))
		}
		if wd.ceil {
			attrs = append(attrs, opstest.AttrInt("ceil_mode", 1))
		}
		if wd.autoPad != "" {
			attrs = append(attrs, opstest.AttrString("auto_pad", wd.autoPad))
		}
		nchw, err := compile(22, "MaxPool", 1, 1, attrs...)
		if err != nil {
			t.Fatal(err)
		}
		nhwc, _, err := opstest.Compile(opstest.Node{Domain: ops.RewriteDomain, Op: "MaxPool", Opset: 1, Outputs: 1, Attrs: attrs}, 1)
		if err != nil {
			t.Fatal(err)
		}
		toNCHW, _, err := opstest.Compile(opstest.Node{Domain: ops.RewriteDomain, Op: "MaxPool", Opset: 1, Outputs: 1,
			Attrs: append(slices.Clone(attrs), opstest.AttrInt("nchw_out", 1))}, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, shape := range shapes {
			what := fmt.Sprintf("MaxPool %+v %v", wd, shape)
			x := opstest.Normal(r, shape...)
			xv := x.Data.([]float32)
			for i := range xv {
				switch r.IntN(50) {
				case 0:
					xv[i] = float32(math.NaN())
				case 1:
					xv[i] = float32(math.Inf(-1))
				case 2:
					xv[i] = float32(math.Inf(1))
				case 3:
					xv[i] = float32(math.Copysign(0, -1))
				}
			}
			want, err := nchw.Run(opstest.Background(), []*tensor.Tensor{x})
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			wl := channelsLast(want[0])
			xl := channelsLast(x)
			orig := slices.Clone(xl.Data.([]float32))
			for _, oc := range tables {
				got, err := nhwc.Run(oc, []*tensor.Tensor{xl})
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if !slices.Equal(got[0].Shape, wl.Shape) {
					t.Fatalf("%s: shape %v, ONNX's channels-last %v", what, got[0].Shape, wl.Shape)
				}
				sameBits(t, fmt.Sprintf("%s on %v", what, oc.Engine().Table()), got[0].Data.([]float32), wl.Data.([]float32))
				got, err = toNCHW.Run(oc, []*tensor.Tensor{xl})
				if err != nil {
					t.Fatalf("%s nchw_out: %v", what, err)
				}
				if !slices.Equal(got[0].Shape, want[0].Shape) {
					t.Fatalf("%s nchw_out: shape %v, ONNX's %v", what, got[0].Shape, want[0].Shape)
				}
				sameBits(t, fmt.Sprintf("%s nchw_out on %v", what, oc.Engine().Table()), got[0].Data.([]float32), want[0].Data.([]float32))
			}
			if !sameFloats(xl.Data.([]float32), orig) {
				t.Fatalf("%s: input modified", what)
			}
		}
		opstest.SplitRun(t, "MaxPool channels-last", nhwc, channelsLast(opstest.Normal(r, 2, 64, 40, 40)))
		opstest.SplitRun(t, "MaxPool channels-last to NCHW", toNCHW, channelsLast(opstest.Normal(r, 2, 130, 40, 40)))
	}
}

// TestMaxPoolNHWCRefusals: an input that is not a float32 image of rank
// 4, or smaller than the window, is an input error, never a panic; a
// kernel not of two axes is refused at build.
func TestMaxPoolNHWCRefusals(t *testing.T) {
	k := opstest.AttrInts("kernel_shape", 3, 3)
	n := opstest.Node{Domain: ops.RewriteDomain, Op: "MaxPool", Opset: 1, Outputs: 1, Attrs: []*onnxpb.Attribute{k}}
	opstest.WantInputError(t, n, "float32", tensor.From([]int{1, 4, 4, 2}, make([]float64, 32)))
	opstest.WantInputError(t, n, "rank-4", tensor.From([]int{4, 4, 2}, make([]float32, 32)))
	opstest.WantInputError(t, n, "smaller than the window", tensor.From([]int{1, 2, 5, 2}, make([]float32, 20)))
	if _, _, err := opstest.Compile(opstest.Node{Domain: ops.RewriteDomain, Op: "MaxPool", Opset: 1, Outputs: 1, Attrs: []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 3)}}, 1); err == nil {
		t.Error("a 1-D kernel compiled")
	}
	got := opstest.Run1(t, n, tensor.From([]int{0, 4, 4, 3}, make([]float32, 0)))
	if !slices.Equal(got.Shape, []int{0, 2, 2, 3}) {
		t.Errorf("MaxPool of [0 4 4 3]: shape %v, want [0 2 2 3]", got.Shape)
	}
}

// BenchmarkMaxPoolNHWC is ResNet's stem pool (3×3, stride 2, pads 1 over
// 1×64×112×112): ONNX's MaxPool on the image in NCHW against quantserve's
// on the image channels-last.
func BenchmarkMaxPoolNHWC(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 5))
	attrs := []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 3, 3), opstest.AttrInts("pads", 1, 1, 1, 1), opstest.AttrInts("strides", 2, 2)}
	nchw, err := compile(22, "MaxPool", 1, 1, attrs...)
	if err != nil {
		b.Fatal(err)
	}
	nhwc, _, err := opstest.Compile(opstest.Node{Domain: ops.RewriteDomain, Op: "MaxPool", Opset: 1, Outputs: 1, Attrs: attrs}, 1)
	if err != nil {
		b.Fatal(err)
	}
	x := opstest.Normal(r, 1, 64, 112, 112)
	xl := channelsLast(x)
	oc := opstest.Background()
	for _, v := range []struct {
		name string
		op   ops.Operator
		x    *tensor.Tensor
	}{{"nchw", nchw, x}, {"nhwc", nhwc, xl}} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.op.Run(oc, []*tensor.Tensor{v.x}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
