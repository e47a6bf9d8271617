package gemm

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/quant"
)

// TestQMatMulChunks: on two and three threads, a product whose row chunks
// split across the cores whole runs as one loop over them
// (qMatMulChunks), and gives the bits of one thread: per row and static
// activations, with and without a finish (bias, residual, clamp).
func TestQMatMulChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	static, err := StaticActivations(-2.5, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range dispatch.Available() {
		one := newEngine(t, tb, 1)
		for _, threads := range []int{2, 3} {
			e := newEngine(t, tb, threads)
			for _, sh := range [][3]int{{128, 256, 256}, {192, 64, 96}, {1200, 40, 200}} {
				m, k, n := sh[0], sh[1], sh[2]
				x := randomActivations(r, m, k)
				qw := randomPackedQ(t, r, k, n)
				bias, res := randomActivations(r, 1, n), randomActivations(r, m, n)
				for _, a := range []*Activations{nil, static} {
					for _, fin := range []*Finish{nil, {Bias: bias, Res: res, LDR: n, Lo: -1, Hi: 2}} {
						name := fmt.Sprintf("%s/%d/%dx%dx%d/static=%v/finish=%v", tb.Name, threads, m, k, n, a != nil, fin != nil)
						want := make([]float32, m*n)
						if err := one.QMatMulAsFinish(x, m, qw, want, a, fin); err != nil {
							t.Fatal(err)
						}
						got := make([]float32, m*n)
						qa := new(QRows)
						ok, err := e.qMatMulChunks(qa, x, m, qw, got, a, fin)
						if !ok || err != nil {
							t.Fatalf("%s: qMatMulChunks = %v, %v: want the product run by row chunks", name, ok, err)
						}
						if !slices.Equal(got, want) {
							t.Errorf("%s: differs from one thread's product", name)
						}
					}
				}
			}
		}
	}
}

// TestQMatMulChunksNotFinite: a row holding NaN or ±Inf fails the product
// run by row chunks with ErrNotFinite naming the row, and a product whose
// chunks would not balance (fewer than the cores, or not a whole number
// each and few) is left to the other loops.
func TestQMatMulChunksNotFinite(t *testing.T) {
	const m, k, n = 512, 64, 256
	w, _ := quant.QuantizeWeights(make([]float32, k*n), k, n, quant.PerChannel)
	qw, _ := PackQ(w)
	for _, tb := range dispatch.Available() {
		e := newEngine(t, tb, 2)
		x := make([]float32, m*k)
		x[301*k+7] = float32(math.Inf(-1))
		ok, err := e.qMatMulChunks(new(QRows), x, m, qw, make([]float32, m*n), nil, nil)
		if !ok || !errors.Is(err, ErrNotFinite) || !strings.Contains(err.Error(), "row 301") {
			t.Errorf("%s: -Inf in row 301 gave %v, %v", tb.Name, ok, err)
		}
		if err := e.QMatMul(x, m, qw, make([]float32, m*n)); !errors.Is(err, ErrNotFinite) {
			t.Errorf("%s: QMatMul of -Inf gave %v", tb.Name, err)
		}
		// One chunk of rows: the product splits by panel group instead.
		if ok, _ := e.qMatMulChunks(new(QRows), x[:8*k], 8, qw, make([]float32, 8*n), nil, nil); ok {
			t.Errorf("%s: 8 rows ran by row chunks", tb.Name)
		}
	}
}
