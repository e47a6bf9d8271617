package attention

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/tensor"
)

// TestTraceMatchesRun checks Trace against the operator run in float64:
// Scores are qk_matmul_output of mode 0 (scaled, before softcap), Probs of
// mode 3 (the softmax), K and V are present_key and present_value, and Q
// is the query head-major.
func TestTraceMatchesRun(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 30))
	for _, c := range attentionCases(r) {
		f, err := Trace(&c.at, c.inputs(func(x *tensor.Tensor) *tensor.Tensor { return x }))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want := map[string][]float64{}
		for _, mode := range []int64{0, 3} {
			at := c.at
			at.QKMatMulOutputMode = mode
			out, err := attentionRun(t, &at, gemm.Default())(c.inputs(to64))
			if err != nil {
				t.Fatal(err)
			}
			want[map[int64]string{0: "Scores", 3: "Probs"}[mode]] = out[3].Float64s()
			want["K"], want["V"] = out[1].Float64s(), out[2].Float64s()
		}
		q := c.q.Float64s()
		if c.q.Rank() == 3 { // (b, s, h·d) to (b, h, s, d)
			b, s, h, d := f.B, f.QLen, f.QHeads, f.HeadSize
			hm := make([]float64, len(q))
			for bi := 0; bi < b; bi++ {
				for si := 0; si < s; si++ {
					for hi := 0; hi < h; hi++ {
						copy(hm[((bi*h+hi)*s+si)*d:((bi*h+hi)*s+si+1)*d], q[((bi*s+si)*h+hi)*d:])
					}
				}
			}
			q = hm
		}
		want["Q"] = q
		for name, got := range map[string][]float64{"Scores": f.Scores, "Probs": f.Probs, "K": f.K, "V": f.V, "Q": f.Q} {
			w := want[name]
			if len(got) != len(w) {
				t.Fatalf("%s: %s has %d values, want %d", c.name, name, len(got), len(w))
			}
			for i := range w {
				if got[i] != w[i] && !(math.IsNaN(got[i]) && math.IsNaN(w[i])) {
					t.Fatalf("%s: %s[%d] = %v, want %v", c.name, name, i, got[i], w[i])
				}
			}
		}
		if f.Rank3 != (c.q.Rank() == 3) || f.Softcap != float64(c.at.Softcap) {
			t.Fatalf("%s: rank3 %v softcap %v", c.name, f.Rank3, f.Softcap)
		}
	}
}
