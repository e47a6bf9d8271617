package activation

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// leakyInputs returns n values with zeros of both signs, infinities,
// NaNs with payloads (quiet and signalling), subnormals and extremes
// among normal ones.
func leakyInputs(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 3)
	}
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x7fc00000), math.Float32frombits(0xffc0beef), math.Float32frombits(0x7f800001),
		1e-40, -1e-40, math.Float32frombits(0x80000001), math.MaxFloat32, -math.MaxFloat32}
	for i, v := range special {
		if i < n {
			x[r.IntN(n)] = v
		}
	}
	return x
}

// TestLeakyReluEveryTable runs the LeakyRelu operator on every kernel
// table's engine over float32 tensors of lengths around the vector widths
// and compares each value's bits with the operator's float32 loop (k32):
// NaN payloads, -0 and rounding included.
func TestLeakyReluEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, alpha := range []float32{0.01, 0.2, 3.5, -0.7, 0, float32(math.NaN())} {
		op, _, err := opstest.Compile(opstest.Node{Op: "LeakyRelu", Opset: 16, Attrs: attrsAlpha(alpha)}, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 1, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 127, 1000, 70001} {
			x := leakyInputs(r, n)
			want := make([]float32, n)
			leakyRelu{alpha: alpha}.k32(want, x)
			for _, tb := range dispatch.Available() {
				e := gemm.New(tb, 2)
				out, err := op.Run(ops.NewContext(context.Background(), e, false), []*tensor.Tensor{tensor.From([]int{n}, x)})
				e.Close()
				if err != nil {
					t.Fatal(err)
				}
				got := out[0].Data.([]float32)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%v alpha=%v n=%d: [%d] = %#x, the loop gives %#x (x = %#x)", tb, alpha, n, i, math.Float32bits(got[i]), math.Float32bits(want[i]), math.Float32bits(x[i]))
					}
				}
			}
		}
	}
}

func attrsAlpha(a float32) []*onnxpb.Attribute { return []*onnxpb.Attribute{fattr("alpha", a)} }

// BenchmarkLeakyRelu measures the LeakyRelu operator on 1×64×32×32 and
// 1×256×56×56 float32 images against its float32 loop (k32, what it ran
// before the kernels; see benchPair).
//
//	go test ./ops/activation -run '^$' -bench LeakyRelu -count 5
func BenchmarkLeakyRelu(b *testing.B) {
	r := rand.New(rand.NewPCG(43, 44))
	ctx := ops.NewContext(context.Background(), nil, false)
	op, _, err := opstest.Compile(opstest.Node{Op: "LeakyRelu", Opset: 16, Attrs: attrsAlpha(0.2)}, 1)
	if err != nil {
		b.Fatal(err)
	}
	for _, shape := range [][]int{{1, 64, 32, 32}, {1, 256, 56, 56}} {
		x := randF32(r, shape)
		in := []*tensor.Tensor{x}
		loop := leakyRelu{alpha: 0.2}
		b.Run(fmt.Sprintf("%s/%v", ctx.Engine().Table(), shape), func(b *testing.B) {
			benchPair(b, func() {
				if _, err := op.Run(ctx, in); err != nil {
					b.Fatal(err)
				}
			}, func() {
				if _, err := floatMap32(ctx, "LeakyRelu", x, kernelCost, loop.k32, loop.f64); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
