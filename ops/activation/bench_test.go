package activation

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/arith"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// benchPair runs fast and base alternately (order swapped every
// iteration) and reports each one's least time and their ratio. On a
// machine shared with other work, interference only ever adds time, so
// the least of many runs is the steadiest estimate of each; wall-clock
// ns/op of separate benchmarks moves with the load between them.
func benchPair(b *testing.B, fast, base func()) {
	b.ReportAllocs()
	tf, tb := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	swap := false
	for b.Loop() {
		var f, s time.Duration
		if swap {
			t0 := time.Now()
			base()
			t1 := time.Now()
			fast()
			f, s = time.Since(t1), t1.Sub(t0)
		} else {
			t0 := time.Now()
			fast()
			t1 := time.Now()
			base()
			f, s = t1.Sub(t0), time.Since(t1)
		}
		swap = !swap
		tf, tb = min(tf, f), min(tb, s)
	}
	b.ReportMetric(float64(tf), "fast-min-ns")
	b.ReportMetric(float64(tb), "base-min-ns")
	b.ReportMetric(float64(tb)/float64(tf), "speedup")
}

// BenchmarkActivations measures the float32 kernels on 1×256×56×56 for
// the CNN activations and 128×1024 for the transformer ones, each against
// the float64 path the other types take (see benchPair).
//
//	go test ./ops/activation -run '^$' -bench Activations -benchtime 20x
func BenchmarkActivations(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	image := randF32(r, []int{1, 256, 56, 56})
	tokens := randF32(r, []int{128, 1024})
	ctx := ops.NewContext(context.Background(), nil, false)
	for _, c := range []struct {
		op, name string
		opset    int64
		attrs    []*onnxpb.Attribute
		x        *tensor.Tensor
		f64      func(float64) float64
	}{
		{"Relu", "1x256x56x56", 14, nil, image, func(v float64) float64 { return max(v, 0) }},
		{"HardSigmoid", "1x256x56x56", 22, nil, image, func(v float64) float64 { return max(0, min(1, float64(float32(0.2))*v+0.5)) }},
		{"HardSwish", "1x256x56x56", 22, nil, image, hardSwish},
		{"Sigmoid", "1x256x56x56", 13, nil, image, ops.Sigmoid},
		{"Clip", "1x256x56x56", 6, []*onnxpb.Attribute{fattr("min", 0), fattr("max", 6)}, image, func(v float64) float64 { return min(max(v, 0), 6) }},
		{"Tanh", "128x1024", 13, nil, tokens, math.Tanh},
		{"Gelu", "128x1024", 20, nil, tokens, geluExact},
		{"Swish", "128x1024", 24, []*onnxpb.Attribute{fattr("alpha", 1.702)}, tokens, func(v float64) float64 { return v * ops.Sigmoid(float64(float32(1.702))*v) }},
		{"Gelu", "128x1024-tanh", 20, []*onnxpb.Attribute{{Name: "approximate", Type: onnxpb.AttrString, S: []byte("tanh")}}, tokens, geluTanh},
	} {
		op, _, err := opstest.Compile(opstest.Node{Op: c.op, Opset: c.opset, Attrs: c.attrs}, 1)
		if err != nil {
			b.Fatal(err)
		}
		in := []*tensor.Tensor{c.x}
		b.Run(c.op+"/"+c.name, func(b *testing.B) {
			benchPair(b, func() {
				if _, err := op.Run(ctx, in); err != nil {
					b.Fatal(err)
				}
			}, func() {
				if _, err := arith.MapFloat(ctx, c.op, c.x, c.f64); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
