package model_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/quant"
)

// TestQDQGridActivations: convolutions on the int8 kernels that read a QDQ
// pair's grid (the input's pair; a pair after a convolution, through a
// max pool) quantize with the pair's own parameters, on a table that
// multiplies the whole byte range: their layers say "static
// activations", and the network's answer, its last convolution's raw
// output, is the float32 network's up to float rounding (the grid's
// integers and the file's int8 weights multiplied exactly), where rows
// quantized with parameters of their own round the grid again. Rewritten
// or not, the answers are the same bits.
func TestQDQGridActivations(t *testing.T) {
	q := newQDQNet(21)
	x := q.qdq("x", 0.008, 128)
	a := q.qdq(q.conv(x, "w1", "c1", 16, 3, 1, true), 0.02, 0)
	q.nodes = append(q.nodes, onnxbuild.Node{Op: "MaxPool", Inputs: []string{a}, Outputs: []string{"p"},
		Attrs: []*onnxpb.Attribute{onnxbuild.IntsAttr("kernel_shape", 2, 2), onnxbuild.IntsAttr("strides", 1, 1)}})
	b := q.qdq(q.conv("p", "w2", "c2", 64, 16, 1, true), 0.05, 0)
	q.conv(b, "w3", "y", 64, 64, 1, true)
	// Each output channel's weights reach ±127, as quantize_static's
	// symmetric per-channel scales make them: the int8 kernels' own
	// per-channel scales then give back the file's integers.
	for _, w := range []string{"w2_q", "w3_q"} {
		v := q.inits[w].Data.([]int8)
		per := len(v) / q.inits[w].Shape[0]
		for m := 0; m < len(v); m += per {
			v[m] = 127
		}
	}
	data := q.graph(64, -1, -1)
	in := qdqInput(22)
	checkQDQBits(t, data, in, map[string]int{"FusedConv": 2, "Conv": 1, "MaxPool": 1}, 8)

	full := gemm.Default().Table().FullRange
	i8, err := model.LoadWith(data, model.Options{Quantize: true, Scheme: quant.PerChannel})
	if err != nil {
		t.Fatal(err)
	}
	static := 0
	for _, l := range i8.Layers {
		if strings.Contains(l.Kernels, "static activations") {
			static++
		}
	}
	if want := map[bool]int{true: 2, false: 0}[full]; static != want {
		t.Fatalf("%d layers with static activations on %s, want %d: %+v", static, gemm.Default().Table().Name, want, i8.Layers)
	}
	if !full {
		t.Skipf("the %s table multiplies 7-bit rows only: the grid stays per row", gemm.Default().Table().Name)
	}
	f32, err := model.LoadWith(data, model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := i8.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := f32.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i, v := range want["y"].Data.([]float32) {
		worst = math.Max(worst, math.Abs(float64(got["y"].Data.([]float32)[i]-v))/(1+math.Abs(float64(v))))
	}
	t.Logf("worst relative difference %.3g", worst)
	if worst > 1e-4 {
		t.Fatalf("int8 answers differ from float32 by up to %.2g (relative): the grid was not multiplied exactly", worst)
	}
}
