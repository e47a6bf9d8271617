//go:build autodiff

package autodiff

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/conv"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

func convGradCases(r *rand.Rand) []gradCase {
	w := randT(r, []int{4, 3, 3, 3}, false)
	bias := randT(r, []int{4}, false)
	dw := randT(r, []int{6, 1, 3, 3}, false)
	tw := randT(r, []int{3, 2, 3, 3}, false)
	w1 := randT(r, []int{4, 2, 3, 3}, false)
	w2 := randT(r, []int{3, 4, 1, 1}, false)
	return []gradCase{
		{name: "Conv", g: one("Conv", []onnxbuild.IO{v("x", 2, 3, 5, 6), v("w", 4, 3, 3, 3), v("b", 4)}, v("", 2, 4, 5, 6), ints("pads", 1, 1, 1, 1))},
		{name: "Conv strided dilated asymmetric", g: one("Conv", []onnxbuild.IO{v("x", 1, 2, 7, 8), v("w", 3, 2, 2, 3)}, v("", 1, 3, 3, 3),
			ints("strides", 2, 3), ints("dilations", 2, 1), ints("pads", 0, 1, 1, 0))},
		{name: "Conv groups", g: one("Conv", []onnxbuild.IO{v("x", 2, 4, 5, 5), v("w", 6, 2, 3, 3), v("b", 6)}, v("", 2, 6, 3, 3), onnxbuild.IntAttr("group", 2))},
		{name: "Conv 1-D", g: one("Conv", []onnxbuild.IO{v("x", 2, 3, 9), v("w", 2, 3, 4)}, v("", 2, 2, 3), ints("strides", 2), ints("pads", 1, 0))},
		{name: "Conv 3-D", g: one("Conv", []onnxbuild.IO{v("x", 1, 2, 4, 3, 4), v("w", 2, 2, 2, 2, 3)}, v("", 1, 2, 3, 2, 2))},
		{name: "Conv SAME_UPPER", g: one("Conv", []onnxbuild.IO{v("x", 1, 2, 5, 4), v("w", 3, 2, 2, 3)}, v("", 1, 3, 3, 2), str("auto_pad", "SAME_UPPER"), ints("strides", 2, 2))},
		{name: "Conv held weight", wrt: []string{"w", "bias"}, g: onnxbuild.Graph{
			Inputs: []onnxbuild.IO{v("x", 2, 3, 6, 5)}, Outputs: []onnxbuild.IO{v("y", 2, 4, 6, 5)},
			Nodes: []onnxbuild.Node{node("Conv", []string{"x", "w", "bias"}, ints("pads", 1, 1, 1, 1))},
			Inits: map[string]*tensor.Tensor{"w": w, "bias": bias}}},
		{name: "Conv depthwise held weight", wrt: []string{"dw"}, g: onnxbuild.Graph{
			Inputs: []onnxbuild.IO{v("x", 1, 6, 7, 6)}, Outputs: []onnxbuild.IO{v("y", 1, 6, 4, 3)},
			Nodes: []onnxbuild.Node{node("Conv", []string{"x", "dw"}, onnxbuild.IntAttr("group", 6), ints("strides", 2, 2), ints("pads", 1, 1, 1, 1))},
			Inits: map[string]*tensor.Tensor{"dw": dw}}},
		{name: "ConvTranspose", g: one("ConvTranspose", []onnxbuild.IO{v("x", 2, 3, 3, 4), v("w", 3, 2, 3, 3), v("b", 2)}, v("", 2, 2, 7, 9),
			ints("strides", 2, 2), ints("output_padding", 1, 0))},
		{name: "ConvTranspose groups pads", g: one("ConvTranspose", []onnxbuild.IO{v("x", 1, 4, 3, 3), v("w", 4, 2, 3, 2)}, v("", 1, 4, 5, 5),
			onnxbuild.IntAttr("group", 2), ints("strides", 2, 2), ints("pads", 1, 0, 1, 1), ints("dilations", 1, 2))},
		{name: "ConvTranspose 1-D", g: one("ConvTranspose", []onnxbuild.IO{v("x", 2, 2, 4), v("w", 2, 3, 3)}, v("", 2, 3, 9), ints("strides", 2))},
		{name: "ConvTranspose held weight", wrt: []string{"tw"}, g: onnxbuild.Graph{
			Inputs: []onnxbuild.IO{v("x", 1, 3, 4, 3)}, Outputs: []onnxbuild.IO{v("y", 1, 2, 8, 6)},
			Nodes: []onnxbuild.Node{node("ConvTranspose", []string{"x", "tw"}, ints("strides", 2, 2), ints("pads", 1, 1, 0, 0))},
			Inits: map[string]*tensor.Tensor{"tw": tw}}},
		{name: "Conv Tanh Conv", wrt: []string{"w1", "w2"}, g: onnxbuild.Graph{
			Inputs: []onnxbuild.IO{v("x", 1, 2, 6, 6)}, Outputs: []onnxbuild.IO{v("y", 1, 3, 3, 3)},
			Nodes: []onnxbuild.Node{
				{Op: "Conv", Inputs: []string{"x", "w1"}, Outputs: []string{"h"}, Attrs: []*onnxpb.Attribute{ints("pads", 1, 1, 1, 1)}},
				{Op: "Tanh", Inputs: []string{"h"}, Outputs: []string{"hr"}},
				{Op: "Conv", Inputs: []string{"hr", "w2"}, Outputs: []string{"y"}, Attrs: []*onnxpb.Attribute{ints("strides", 2, 2)}},
			},
			Inits: map[string]*tensor.Tensor{"w1": w1, "w2": w2}}},
	}
}

// TestConvGradients checks the backward passes of Conv and ConvTranspose
// against central differences.
func TestConvGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 21))
	checkGradients(t, r, convGradCases(r))
}

// TestConvStraightThroughEstimator checks dX through an int8 Conv: it is
// the float backward pass through the dequantized weights (each output
// channel's weights rounded to its scale), and dW is the float one.
func TestConvStraightThroughEstimator(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 22))
	xs, ws := []int{2, 16, 6, 6}, []int{64, 16, 3, 3}
	w := randT(r, ws, false)
	g := onnxbuild.Graph{
		Inputs: []onnxbuild.IO{v("x", xs...)}, Outputs: []onnxbuild.IO{v("y", 2, 64, 6, 6)},
		Nodes: []onnxbuild.Node{node("Conv", []string{"x", "w"}, ints("pads", 1, 1, 1, 1))},
		Inits: map[string]*tensor.Tensor{"w": w},
	}
	m, err := model.LoadWith(g.Bytes(), model.Options{Quantize: true, Scheme: quant.PerChannel})
	if err != nil {
		t.Fatal(err)
	}
	if m.Layers[0].Kernels != "int8 per_channel" {
		t.Fatalf("layer %+v", m.Layers)
	}
	x := randT(r, xs, false)
	seed := randT(r, []int{2, 64, 6, 6}, false)
	_, grads, err := Gradients(context.Background(), m, GradRequest{Inputs: map[string]*tensor.Tensor{"x": x}, OutputGrad: seed, Wrt: []string{"x", "w"}})
	if err != nil {
		t.Fatal(err)
	}
	// the weights as the int8 kernels see them
	wv := w.Data.([]float32)
	per := len(wv) / ws[0]
	deq := make([]float32, len(wv))
	for c := 0; c < ws[0]; c++ {
		var mx float32
		for _, x := range wv[c*per : (c+1)*per] {
			mx = max(mx, float32(math.Abs(float64(x))))
		}
		s := mx / 127
		for i := c * per; i < (c+1)*per; i++ {
			deq[i] = float32(quant.Quantize(wv[i], s)) * s
		}
	}
	geo, err := (&conv.ConvAttrs{Group: 1, Pads: []int64{1, 1, 1, 1}}).Geometry(xs, ws)
	if err != nil {
		t.Fatal(err)
	}
	dy := seed.Data.([]float32)
	want, _ := conv.Adjoint(gemm.Default(), geo, dy, deq)
	float, _ := conv.Adjoint(gemm.Default(), geo, dy, wv)
	dx := grads[0].Tensor.Data.([]float32)
	var apart float64
	for i := range want {
		if math.Abs(float64(dx[i]-want[i])) > 1e-5*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("dx[%d] = %v, through the dequantized weights %v", i, dx[i], want[i])
		}
		apart = max(apart, math.Abs(float64(float[i]-want[i])))
	}
	if apart < 1e-4 {
		t.Fatalf("the float and dequantized weights give the same dx (%v apart): the check cannot tell them apart", apart)
	}
	wantW, _ := conv.WeightGradient(gemm.Default(), geo, x.Data.([]float32), dy)
	for i, v := range grads[1].Tensor.Data.([]float32) {
		if math.Abs(float64(v-wantW[i])) > 1e-5*(1+math.Abs(float64(wantW[i]))) {
			t.Fatalf("dW[%d] = %v, want %v", i, v, wantW[i])
		}
	}
}

// TestConvTransposeStraightThroughEstimator checks dX through an int8
// ConvTranspose: its product's columns are (output channel, kernel offset)
// pairs, each quantized over the input channels, and dX is the float
// backward pass through those dequantized weights.
func TestConvTransposeStraightThroughEstimator(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 23))
	xs, ws := []int{1, 64, 5, 5}, []int{64, 16, 3, 3}
	w := randT(r, ws, false)
	g := onnxbuild.Graph{
		Inputs: []onnxbuild.IO{v("x", xs...)}, Outputs: []onnxbuild.IO{v("y", 1, 16, 9, 9)},
		Nodes: []onnxbuild.Node{node("ConvTranspose", []string{"x", "w"}, ints("strides", 2, 2), ints("pads", 1, 1, 1, 1))},
		Inits: map[string]*tensor.Tensor{"w": w},
	}
	m, err := model.LoadWith(g.Bytes(), model.Options{Quantize: true, Scheme: quant.PerChannel})
	if err != nil {
		t.Fatal(err)
	}
	if m.Layers[0].Kernels != "int8 per_channel" {
		t.Fatalf("layer %+v", m.Layers)
	}
	x := randT(r, xs, false)
	seed := randT(r, []int{1, 16, 9, 9}, false)
	_, grads, err := Gradients(context.Background(), m, GradRequest{Inputs: map[string]*tensor.Tensor{"x": x}, OutputGrad: seed, Wrt: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	wv := w.Data.([]float32)
	cols := len(wv) / ws[0] // (output channel, kernel offset) pairs
	deq := make([]float32, len(wv))
	for j := 0; j < cols; j++ {
		var mx float32
		for c := 0; c < ws[0]; c++ {
			mx = max(mx, float32(math.Abs(float64(wv[c*cols+j]))))
		}
		s := mx / 127
		for c := 0; c < ws[0]; c++ {
			deq[c*cols+j] = float32(quant.Quantize(wv[c*cols+j], s)) * s
		}
	}
	geo, err := (&conv.ConvTransposeAttrs{Group: 1, Strides: []int64{2, 2}, Pads: []int64{1, 1, 1, 1}}).Geometry(xs, ws, 11)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := conv.Forward(gemm.Default(), geo, seed.Data.([]float32), deq)
	float, _ := conv.Forward(gemm.Default(), geo, seed.Data.([]float32), wv)
	var apart float64
	for i, v := range grads[0].Tensor.Data.([]float32) {
		if math.Abs(float64(v-want[i])) > 1e-5*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("dx[%d] = %v, through the dequantized weights %v", i, v, want[i])
		}
		apart = max(apart, math.Abs(float64(float[i]-want[i])))
	}
	if apart < 1e-4 {
		t.Fatalf("the float and dequantized weights give the same dx (%v apart)", apart)
	}
}
