package conv

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// BenchmarkFusedConvLeakyMax runs a small convolution (64 → 64 channels,
// 3×3, 32×32, one thread) with LeakyRelu and Max(·, -0.4) two ways,
// alternating in one loop: "fused" is FusedConv with the bound folded, on
// the default table's vector LeakyRelu; "separate" is the output stage as
// it was, the LeakyRelu loop in Go (the reference kernel, the same loop)
// then the Max operator on its own. It reports each one's least time and
// their ratio (speedup = separate / fused); interference on a shared
// machine only ever adds time, so the least of many runs is the steadiest
// estimate.
//
//	go test ./ops/conv -run '^$' -bench FusedConvLeakyMax -count 5
func BenchmarkFusedConvLeakyMax(b *testing.B) {
	r := rand.New(rand.NewPCG(61, 62))
	xs, ws := []int{1, 64, 32, 32}, []int{64, 64, 3, 3}
	x := tensor.From(xs, randomFloats(r, xs))
	w := tensor.From(ws, randomFloats(r, ws))
	bias := tensor.From([]int{64}, randomFloats(r, []int{64}))
	bound := tensor.From([]int{1}, []float32{-0.4})
	base := []*onnxpb.Attribute{opstest.AttrInts("pads", 1, 1, 1, 1), opstest.AttrString("activation", "LeakyRelu"), opstest.AttrFloats("activation_params", 0.2)}
	in := make([]*tensor.Tensor, FusedInputs)
	in[FusedX], in[FusedW], in[FusedB] = x, w, bias
	absent := absentInputs(in)
	consts := []*tensor.Tensor{FusedW: w, FusedB: bias}

	fast := gemm.New(dispatch.Default(), 1)
	defer fast.Close()
	oldTable := *dispatch.Default()
	oldTable.LeakyRelu = kernels.LeakyRelu // the scalar loop the output stage ran
	slow := gemm.New(&oldTable, 1)
	defer slow.Close()

	fused := mustCompile(b, spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, inputs: FusedInputs, consts: consts, absent: absent, engine: fast,
		attrs: append(base[:len(base):len(base)], opstest.AttrString("bound", "Max"), opstest.AttrFloat("bound_value", -0.4))})
	plain := mustCompile(b, spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, inputs: FusedInputs, consts: consts, absent: absent, engine: slow, attrs: base})
	maxOp, _, err := opstest.Compile(opstest.Node{Op: "Max", Opset: 13}, 2)
	if err != nil {
		b.Fatal(err)
	}
	runFused := func() *tensor.Tensor {
		y, err := fused.run1(in...)
		if err != nil {
			b.Fatal(err)
		}
		return y
	}
	runSeparate := func() *tensor.Tensor {
		y, err := plain.run1(in...)
		if err != nil {
			b.Fatal(err)
		}
		out, err := maxOp.Run(ops.NewContext(b.Context(), slow, false), []*tensor.Tensor{y, bound})
		if err != nil {
			b.Fatal(err)
		}
		return out[0]
	}
	// Both give the same bits before anything is timed.
	yf, ys := runFused().Data.([]float32), runSeparate().Data.([]float32)
	for i := range ys {
		if math.Float32bits(yf[i]) != math.Float32bits(ys[i]) {
			b.Fatalf("y[%d] = %v fused, %v separate", i, yf[i], ys[i])
		}
	}
	b.ReportAllocs()
	tf, ts := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	swap := false
	for b.Loop() {
		t0 := time.Now()
		if swap {
			runSeparate()
		} else {
			runFused()
		}
		t1 := time.Now()
		if swap {
			runFused()
		} else {
			runSeparate()
		}
		t2 := time.Now()
		f, s := t1.Sub(t0), t2.Sub(t1)
		if swap {
			f, s = s, f
		}
		swap = !swap
		tf, ts = min(tf, f), min(ts, s)
	}
	b.ReportMetric(float64(tf), "fused-min-ns")
	b.ReportMetric(float64(ts), "separate-min-ns")
	b.ReportMetric(float64(ts)/float64(tf), "speedup")
}
