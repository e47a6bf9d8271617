package conv

import (
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// BenchmarkConv runs ResNet-style convolutions of one image, weights held
// by the kernels, on the default kernels with every core: int8 (weights
// quantized per channel at load) and float32, beside the bare product of
// the same shape on the same kernels (its im2col matrix built
// beforehand), the bound an implicit GEMM approaches. The depthwise layer
// runs on the vector twin and on the Go one (the reference table). It
// reports GOP/s (2 operations per multiply-add) of wall time and, for
// shared machines, per CPU-second the process used.
func BenchmarkConv(b *testing.B) {
	layers := []struct {
		name  string
		x, w  []int
		attrs []*onnxpb.Attribute
	}{
		{"3x3_64-64_56x56", []int{1, 64, 56, 56}, []int{64, 64, 3, 3}, []*onnxpb.Attribute{opstest.AttrInts("pads", 1, 1, 1, 1)}},
		{"1x1_256-64_56x56", []int{1, 256, 56, 56}, []int{64, 256, 1, 1}, nil},
		{"3x3_256-256_14x14", []int{1, 256, 14, 14}, []int{256, 256, 3, 3}, []*onnxpb.Attribute{opstest.AttrInts("pads", 1, 1, 1, 1)}},
		{"1x1_512-2048_7x7", []int{1, 512, 7, 7}, []int{2048, 512, 1, 1}, nil},
		{"7x7s2_3-64_224x224", []int{1, 3, 224, 224}, []int{64, 3, 7, 7}, []*onnxpb.Attribute{opstest.AttrInts("pads", 3, 3, 3, 3), opstest.AttrInts("strides", 2, 2)}},
		{"3x3s2_3-8_48x192", []int{1, 3, 48, 192}, []int{8, 3, 3, 3}, []*onnxpb.Attribute{opstest.AttrInts("pads", 1, 1, 1, 1), opstest.AttrInts("strides", 2, 2)}},
		{"dw3x3_64_56x56", []int{1, 64, 56, 56}, []int{64, 1, 3, 3}, []*onnxpb.Attribute{opstest.AttrInts("pads", 1, 1, 1, 1), opstest.AttrInt("group", 64)}},
	}
	e := gemm.Default()
	generic := gemm.New(dispatch.Reference(), e.Threads())
	defer generic.Close()
	measure := func(b *testing.B, macs float64, f func() error) {
		b.ReportAllocs()
		cpu0 := cpuTime()
		for b.Loop() {
			if err := f(); err != nil {
				b.Fatal(err)
			}
		}
		n := 2 * macs * float64(b.N)
		b.ReportMetric(n/b.Elapsed().Seconds()/1e9, "GOP/s")
		if cpu := (cpuTime() - cpu0).Seconds(); cpu > 0 {
			b.ReportMetric(n/cpu/1e9, "GOP/cpu-s")
		}
	}
	for _, l := range layers {
		r := rand.New(rand.NewPCG(1, 2))
		w := tensor.From(l.w, randomFloats(r, l.w))
		bias := tensor.From([]int{l.w[0]}, randomFloats(r, []int{l.w[0]}))
		x := tensor.From(l.x, randomFloats(r, l.x))
		depthwise := l.w[1] == 1
		type run struct {
			name     string
			e        *gemm.Engine
			quantize bool
		}
		runs := []run{{"int8", e, true}, {"float32", e, false}}
		if depthwise {
			runs = []run{{"vector", e, false}, {"go", generic, false}}
		}
		var macs float64
		for _, rn := range runs {
			cp, err := compile(spec{op: "Conv", attrs: l.attrs, inputs: 3, consts: []*tensor.Tensor{nil, w, bias}, engine: rn.e, quantize: rn.quantize, scheme: quant.PerChannel})
			if err != nil {
				b.Fatal(err)
			}
			y, err := cp.run1(x, w, bias)
			if err != nil {
				b.Fatal(err)
			}
			macs = float64(y.Len()) * float64(ops.ProdInts(l.w[1:]))
			b.Run(l.name+"/conv_"+rn.name, func(b *testing.B) {
				b.Logf("layer runs %s", cp.layers()[0])
				measure(b, macs, func() error { _, err := cp.run(x, w, bias); return err })
			})
		}
		if depthwise {
			continue
		}
		// The bare products: the same M×K×N on the same kernels.
		k, n := ops.ProdInts(l.w[1:]), l.w[0]
		mrows := int(macs) / (k * n)
		a := randomFloats(r, []int{mrows, k})
		c := make([]float32, mrows*n)
		wm := randomFloats(r, []int{k, n})
		qw, _ := quant.QuantizeWeights(wm, k, n, quant.PerChannel)
		pq, _ := gemm.PackQ(qw)
		pf := gemm.PackF(k, n, wm, n)
		b.Run(l.name+"/gemm_int8", func(b *testing.B) {
			measure(b, macs, func() error { return e.QMatMul(a, mrows, pq, c) })
		})
		b.Run(l.name+"/gemm_float32", func(b *testing.B) {
			measure(b, macs, func() error { return e.MatMul(a, mrows, pf, c) })
		})
	}
}
