package dispatch_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/kernels/amd64"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// avx2VecMath returns a copy of t whose SoftmaxRow, Gelu and AddBias are
// the AVX2 kernels: the AVX-512 tables as they were before their zmm
// vector math, for comparing the two in one run.
func avx2VecMath(t *dispatch.Table) *dispatch.Table {
	c := *t
	c.Name += "-avx2vec"
	c.SoftmaxRow, c.Gelu, c.AddBias = amd64.SoftmaxRowAVX2, amd64.GeluAVX2, amd64.AddBiasAVX2
	return &c
}

// BenchmarkVecMathISA runs the AVX2 and the AVX-512 vector math on the
// same buffers, one after the other per size: softmax over 128 keys (and
// 200, a tail of 8), GELU with bias over 1,024 features (and 1,000),
// bias plus residual over 256 and 1,024 features.
func BenchmarkVecMathISA(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, 1024)
	bias := make([]float32, 1024)
	for i := range x {
		x[i], bias[i] = float32(r.NormFloat64()*3), float32(r.NormFloat64())
	}
	out := make([]float32, 1024)
	type impl struct {
		name          string
		soft          func([]float32, float32)
		gelu, addBias func(a, b, c []float32)
	}
	impls := []impl{
		{"avx2", amd64.SoftmaxRowAVX2, amd64.GeluAVX2, amd64.AddBiasAVX2},
		{"avx512", amd64.SoftmaxRowAVX512, amd64.GeluAVX512, amd64.AddBiasAVX512},
	}
	if !hasAVX512() {
		b.Skip("no AVX-512 table on this CPU")
	}
	for _, n := range []int{128, 200} {
		for _, im := range impls {
			b.Run(fmt.Sprintf("SoftmaxRow%d/%s", n, im.name), func(b *testing.B) {
				b.SetBytes(int64(4 * n))
				for b.Loop() {
					copy(out, x[:n])
					im.soft(out[:n], 0.125)
				}
			})
		}
	}
	for _, n := range []int{1024, 1000} {
		for _, im := range impls {
			b.Run(fmt.Sprintf("GeluBias%d/%s", n, im.name), func(b *testing.B) {
				b.SetBytes(int64(4 * n))
				for b.Loop() {
					im.gelu(out[:n], x[:n], bias[:n])
				}
			})
		}
	}
	for _, n := range []int{256, 1024} {
		for _, im := range impls {
			b.Run(fmt.Sprintf("AddBiasRes%d/%s", n, im.name), func(b *testing.B) {
				b.SetBytes(int64(4 * n))
				for b.Loop() {
					im.addBias(out[:n], bias[:n], x[:n])
				}
			})
		}
	}
}

// hasAVX512 reports whether an AVX-512 table runs here.
func hasAVX512() bool {
	for _, t := range dispatch.Available() {
		if t.Name == "avx512vnni" || t.Name == "avx512" {
			return true
		}
	}
	return false
}

// loadEncoders loads the int8 encoder of internal/onnxbuild once per
// table, each on its own one-thread engine.
func loadEncoders(tb testing.TB, tables ...*dispatch.Table) []*model.Model {
	data := onnxbuild.Encoder(onnxbuild.DefaultEncoder).Bytes()
	var ms []*model.Model
	for _, t := range tables {
		exec := gemm.New(t, 1)
		tb.Cleanup(exec.Close)
		m, err := model.LoadWith(data, model.Options{Exec: exec, Quantize: true, Scheme: quant.PerChannel})
		if err != nil {
			tb.Fatal(err)
		}
		ms = append(ms, m)
	}
	return ms
}

// TestEncoderVecMathSameBits runs the int8 encoder with every AVX-512
// table's vector math and with the AVX2 kernels swapped in: the hidden
// states must be the same bits.
func TestEncoderVecMathSameBits(t *testing.T) {
	n := 0
	for _, def := range dispatch.Available() {
		if def.Name != "avx512vnni" && def.Name != "avx512" {
			continue
		}
		n++
		ms := loadEncoders(t, avx2VecMath(def), def)
		in := map[string]*tensor.Tensor{"input_ids": onnxbuild.EncoderInput(onnxbuild.DefaultEncoder, 2, 5)}
		var outs [][]float32
		for _, m := range ms {
			out, err := m.Run(context.Background(), in, nil)
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, out["hidden"].Data.([]float32))
		}
		if len(outs[0]) != len(outs[1]) || len(outs[0]) == 0 {
			t.Fatalf("%s: outputs of %d and %d values", def.Name, len(outs[0]), len(outs[1]))
		}
		for i := range outs[0] {
			a, b := outs[0][i], outs[1][i]
			if math.Float32bits(a) != math.Float32bits(b) {
				t.Fatalf("%s: hidden[%d] = %v with AVX2 vector math, %v with AVX-512", def.Name, i, a, b)
			}
		}
	}
	if n == 0 {
		t.Skip("no AVX-512 table on this CPU")
	}
}

// BenchmarkEncoderVecMath runs the int8 transformer encoder of
// internal/onnxbuild (model.BenchmarkEncoder's) on one thread on the
// selected AVX-512 table, with its zmm vector math ("avx512vec") and with
// the AVX2 kernels swapped back in ("avx2vec"), one after the other per
// batch size. go test's -count repeats each sub-benchmark back to back:
// to alternate the two, run the test binary repeatedly with -count 1.
func BenchmarkEncoderVecMath(b *testing.B) {
	def := dispatch.Default()
	if def.Name != "avx512vnni" && def.Name != "avx512" {
		b.Skipf("selected table %s has no AVX-512 vector math", def.Name)
	}
	ms := loadEncoders(b, avx2VecMath(def), def)
	names := []string{"avx2vec", "avx512vec"}
	for _, batch := range []int{1, 8} {
		in := map[string]*tensor.Tensor{"input_ids": onnxbuild.EncoderInput(onnxbuild.DefaultEncoder, batch, 3)}
		for i, m := range ms {
			b.Run(fmt.Sprintf("int8/batch=%d/%s", batch, names[i]), func(b *testing.B) {
				for b.Loop() {
					if _, err := m.Run(context.Background(), in, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "seq/s")
			})
		}
	}
}
