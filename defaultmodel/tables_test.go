package defaultmodel

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// TestSameAnswersOnEveryTable runs the embedded model on every kernel
// table this CPU supports, with int8 weights (both schemes) and in
// float32, for a batch and for single images, and demands outputs equal
// bit for bit to the pure-Go reference's: a fleet of mixed CPUs answers
// alike.
func TestSameAnswersOnEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	const batch = 37
	x := make([]float32, batch*784)
	for i := range x {
		if r.IntN(3) > 0 {
			x[i] = r.Float32()
		}
	}
	tables := dispatch.Available()
	ref := tables[len(tables)-1]
	run := func(tb *dispatch.Table, opts model.Options, rows int) []float32 {
		e := gemm.New(tb, 2)
		defer e.Close()
		opts.Exec = e
		m, err := model.LoadWith(ONNX, opts)
		if err != nil {
			t.Fatal(err)
		}
		res, err := m.Run(context.Background(), map[string]*tensor.Tensor{"input": tensor.From([]int{rows, 784}, x[:rows*784])}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res["scores"].Data.([]float32)
	}
	for _, opts := range []model.Options{{Quantize: true, Scheme: quant.PerChannel}, {Quantize: true, Scheme: quant.PerBlock}, {}} {
		for _, rows := range []int{batch, 1} {
			want := run(ref, opts, rows)
			for _, tb := range tables[:len(tables)-1] {
				got := run(tb, opts, rows)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%v (quantize %v %v, %d rows): scores[%d] = %v, the reference gives %v", tb, opts.Quantize, opts.Scheme, rows, i, got[i], want[i])
					}
				}
			}
			t.Logf("quantize %v %v, %d rows: %d tables agree bit for bit", opts.Quantize, opts.Scheme, rows, len(tables))
		}
	}
}
