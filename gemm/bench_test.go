package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
)

// BenchmarkQMatMul and BenchmarkMatMul run products on every table this
// CPU runs, one thread (cmd/bench sets them against each table's ceiling).
func BenchmarkQMatMul(b *testing.B) {
	for _, tb := range dispatch.Available() {
		for _, sh := range [][3]int{{1, 128, 512}, {1, 1024, 1024}, {64, 1024, 1024}, {256, 1024, 1024}} {
			m, k, n := sh[0], sh[1], sh[2]
			if tb.Name == "generic" && m > 1 {
				continue
			}
			r := rand.New(rand.NewPCG(1, 1))
			a := randomActivations(r, m, k)
			qw := randomPackedQ(b, r, k, n)
			c := make([]float32, m*n)
			e := New(tb, 1)
			defer e.Close()
			b.Run(fmt.Sprintf("%s/%dx%dx%d", tb.Name, m, k, n), func(b *testing.B) {
				b.SetBytes(int64(qw.Bytes()))
				b.ReportAllocs()
				for b.Loop() {
					if err := e.QMatMul(a, m, qw, c); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(2*float64(m*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
			})
		}
	}
}

// BenchmarkQMatMulRows is the int8 product alone, its rows quantized
// before the timing, at the shapes of ResNet-50's 1×1 and 3×3 layers (the
// table the CPU picks, one thread): cmd/bench's qgemm includes the rows'
// quantization. Its GOP/s against cmd/bench's vpdpbusd ceiling show how
// far from the kernel's rate the products of few K run.
func BenchmarkQMatMulRows(b *testing.B) {
	tb := Default().Table()
	for _, sh := range [][3]int{{3136, 64, 64}, {3136, 64, 256}, {3136, 256, 64}, {3136, 576, 64}, {784, 128, 512}, {784, 1152, 128}, {196, 2304, 256}} {
		m, k, n := sh[0], sh[1], sh[2]
		r := rand.New(rand.NewPCG(1, 1))
		qw := randomPackedQ(b, r, k, n)
		c := make([]float32, m*n)
		e := New(tb, 1)
		defer e.Close()
		var q QRows
		if err := e.QuantizeRowsAs(&q, randomActivations(r, m, k), m, k, k, nil); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%s/%dx%dx%d", tb.Name, m, k, n), func(b *testing.B) {
			for b.Loop() {
				if err := e.QMatMulRows(&q, qw, c, n); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(2*float64(m*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
		})
	}
}

func BenchmarkMatMul(b *testing.B) {
	for _, tb := range dispatch.Available() {
		for _, sh := range [][3]int{{1, 128, 512}, {1, 1024, 1024}, {64, 1024, 1024}, {256, 1024, 1024}} {
			m, k, n := sh[0], sh[1], sh[2]
			if tb.Name == "generic" && m > 1 {
				continue
			}
			r := rand.New(rand.NewPCG(2, 2))
			a := randomActivations(r, m, k)
			wf := make([]float32, k*n)
			for i := range wf {
				wf[i] = float32(r.NormFloat64())
			}
			fw := PackF(k, n, wf, n)
			c := make([]float32, m*n)
			e := New(tb, 1)
			defer e.Close()
			b.Run(fmt.Sprintf("%s/%dx%dx%d", tb.Name, m, k, n), func(b *testing.B) {
				b.SetBytes(int64(fw.Bytes()))
				b.ReportAllocs()
				for b.Loop() {
					if err := e.MatMul(a, m, fw, c); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(2*float64(m*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
			})
		}
	}
}

// BenchmarkQMatMulSplit is the encoder's 128×256×256 product on two
// threads, by row chunks (qMatMulChunks: each core quantizes and
// multiplies its own rows) and as two loops (the rows quantized across
// the cores, then the product split by panel group). Run it on a machine
// with two real cores.
func BenchmarkQMatMulSplit(b *testing.B) {
	const m, k, n = 128, 256, 256
	r := rand.New(rand.NewPCG(3, 3))
	a := randomActivations(r, m, k)
	qw := randomPackedQ(b, r, k, n)
	c := make([]float32, m*n)
	e := New(dispatch.Default(), 2)
	defer e.Close()
	qa := new(QRows)
	b.Run("chunks", func(b *testing.B) {
		for b.Loop() {
			if ok, err := e.qMatMulChunks(qa, a, m, qw, c, nil, nil); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("loops", func(b *testing.B) {
		for b.Loop() {
			if err := e.QuantizeRows(qa, a, m, k, k); err != nil {
				b.Fatal(err)
			}
			if err := e.QMatMulRows(qa, qw, c, n); err != nil {
				b.Fatal(err)
			}
		}
	})
}
