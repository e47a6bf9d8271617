package arith

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/quantserve/quantserve/ops"
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

// BenchmarkElementwiseArith measures the float32 paths of a ResNet stage
// (1×256×56×56): an operand of the same shape, a per-channel [256,1,1]
// one, a scalar and a last-axis vector; each against the per-element
// function path (ops.BinaryMap) the run loops replace.
//
//	go test ./ops/arith -run '^$' -bench ElementwiseArith -benchtime 40x
func BenchmarkElementwiseArith(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	x := randF32(r, []int{1, 256, 56, 56})
	for _, c := range []struct {
		name string
		y    *tensor.Tensor
	}{
		{"same", randF32(r, []int{1, 256, 56, 56})},
		{"channel", randF32(r, []int{256, 1, 1})},
		{"scalar", tensor.Scalar(float32(0.5))},
		{"lastaxis", randF32(r, []int{56})},
	} {
		for _, op := range []string{"Add", "Mul"} {
			code := binOps[op]
			f := func(p, q float32) float32 { return p + q }
			if op == "Mul" {
				f = func(p, q float32) float32 { return p * q }
			}
			b.Run(op+"/1x256x56x56/"+c.name, func(b *testing.B) {
				benchPair(b, func() {
					if _, err := compute(opstest.Background(), op, code, x, c.y); err != nil {
						b.Fatal(err)
					}
				}, func() {
					if _, _, err := ops.BinaryMap(x.Data.([]float32), c.y.Data.([]float32), x.Shape, c.y.Shape, f); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}

// BenchmarkUnaryMath measures the float32 kernels of Exp and Erf on a
// transformer activation (128×1024) against the float64 path the other
// types take (see benchPair).
//
//	go test ./ops/arith -run '^$' -bench UnaryMath -benchtime 20x
func BenchmarkUnaryMath(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	x := randF32(r, []int{128, 1024})
	for _, c := range []struct {
		op  string
		f64 func(float64) float64
	}{{"Erf", math.Erf}, {"Exp", math.Exp}} {
		op, _, err := opstest.Compile(opstest.Node{Op: c.op, Opset: 13}, 1)
		if err != nil {
			b.Fatal(err)
		}
		in := []*tensor.Tensor{x}
		ctx := ops.NewContext(context.Background(), nil, false)
		b.Run(c.op+"/128x1024", func(b *testing.B) {
			benchPair(b, func() {
				if _, err := op.Run(ctx, in); err != nil {
					b.Fatal(err)
				}
			}, func() {
				if _, err := MapFloat(ctx, c.op, x, c.f64); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
