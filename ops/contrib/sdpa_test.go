package contrib

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
)

// sdpaDef computes a's attention by its definition, in float64: for each
// batch item, head and query, the scores scale·q·kᵀ, adjusted by add
// (when not nil), their softmax, and its product with the values, into
// [batch, seqQ, heads·headV].
func sdpaDef(a *sdpa, add func(b, h, i, t int) float64) []float64 {
	out := make([]float64, a.batch*a.seqQ*a.heads*a.headV)
	for b := 0; b < a.batch; b++ {
		for h := 0; h < a.heads; h++ {
			bh := b*a.heads + h
			for i := 0; i < a.seqQ; i++ {
				s := make([]float64, a.seqKV)
				m := math.Inf(-1)
				for t := range s {
					for j := 0; j < a.headQK; j++ {
						s[t] += float64(a.q[(bh*a.seqQ+i)*a.headQK+j]) * float64(a.k[(bh*a.seqKV+t)*a.headQK+j])
					}
					s[t] *= float64(a.scale)
					if add != nil {
						s[t] += add(b, h, i, t)
					}
					m = math.Max(m, s[t])
				}
				var z float64
				for t := range s {
					s[t] = math.Exp(s[t] - m)
					z += s[t]
				}
				for j := 0; j < a.headV; j++ {
					var y float64
					for t := range s {
						y += s[t] / z * float64(a.v[(bh*a.seqKV+t)*a.headV+j])
					}
					out[((b*a.seqQ+i)*a.heads+h)*a.headV+j] = y
				}
			}
		}
	}
	return out
}

func randFloats(r *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * scale)
	}
	return v
}

func newSDPA(r *rand.Rand, batch, heads, seqQ, seqKV, headQK, headV int) *sdpa {
	return &sdpa{batch: batch, heads: heads, seqQ: seqQ, seqKV: seqKV, headQK: headQK, headV: headV,
		scale: float32(1 / math.Sqrt(float64(headQK))),
		q:     randFloats(r, batch*heads*seqQ*headQK, 1),
		k:     randFloats(r, batch*heads*seqKV*headQK, 1),
		v:     randFloats(r, batch*heads*seqKV*headV, 1)}
}

// TestSDPAMatchesDefinition runs the attention core on every kernel
// table this CPU runs, for odd sizes, a query long enough to be taken in
// several blocks of rows, and an adjustment that depends on batch item,
// head and query, and compares it with the definition.
func TestSDPAMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, sz := range [][6]int{{1, 1, 1, 1, 1, 1}, {2, 3, 5, 7, 4, 6}, {1, 2, 9, 17, 33, 5}, {1, 1, 260, 300, 8, 3}} {
		a := newSDPA(r, sz[0], sz[1], sz[2], sz[3], sz[4], sz[5])
		add := func(b, h, i, t int) float64 { return float64((b+2*h+3*i+5*t)%7) * 0.25 }
		a.adjust = func(row []float32, b, h, i int) {
			for t := range row {
				row[t] += float32(add(b, h, i, t))
			}
		}
		want := sdpaDef(a, add)
		for _, tb := range dispatch.Available() {
			e := gemm.New(tb, 2)
			out := make([]float32, len(want))
			err := a.run(ops.NewContext(context.Background(), e, false), out)
			e.Close()
			if err != nil {
				t.Fatal(err)
			}
			g := make([]float64, len(out))
			for i, x := range out {
				g[i] = float64(x)
			}
			for i := range want {
				if math.Abs(g[i]-want[i]) > 2e-6+2e-5*math.Abs(want[i]) {
					t.Fatalf("%v %v: [%d] = %v, want %v", tb, sz, i, g[i], want[i])
				}
			}
		}
	}
}

// TestSDPANoKeys: without keys every output is 0; without queries
// nothing is written.
func TestSDPANoKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	a := newSDPA(r, 2, 2, 3, 0, 4, 5)
	out := make([]float32, 2*3*2*5)
	for i := range out {
		out[i] = 7
	}
	if err := a.run(background(), out); err != nil {
		t.Fatal(err)
	}
	for i, x := range out {
		if x != 0 {
			t.Fatalf("[%d] = %v, want 0", i, x)
		}
	}
	a = newSDPA(r, 2, 2, 0, 3, 4, 5)
	if err := a.run(background(), nil); err != nil {
		t.Fatal(err)
	}
}

// TestSDPAStopsAtDeadline: a cancelled request stops the heads.
func TestSDPAStopsAtDeadline(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a := newSDPA(rand.New(rand.NewPCG(25, 26)), 1, 2, 3, 4, 5, 6)
	err := a.run(ops.NewContext(ctx, gemm.Default(), false), make([]float32, 3*2*6))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run under a cancelled request: %v", err)
	}
}
