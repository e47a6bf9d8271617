//go:build autodiff

package api

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
)

// TestGradThroughTransformerEncoder checks /grad through a small
// transformer encoder (LayerNormalization, multi-head attention from
// MatMul, Transpose, Reshape and Softmax, a GELU feed-forward block,
// residual additions) against central differences of /infer.
func TestGradThroughTransformerEncoder(t *testing.T) {
	cfg := onnxbuild.EncoderConfig{Seq: 4, Hidden: 8, Heads: 2, Layers: 2, Seed: 5}
	dir := writeRepo(t, map[string]map[int][]byte{"enc": {1: onnxbuild.Encoder(cfg).Bytes()}}, map[string]string{"enc": "quantize: none\n"})
	url := testServer(t, openRepo(t, dir), 0)
	r := rand.New(rand.NewPCG(9, 9))
	n := cfg.Seq * cfg.Hidden
	x, seed := make([]float64, n), make([]float64, n)
	for i := range x {
		x[i], seed[i] = r.NormFloat64(), r.NormFloat64()
	}
	body := func(x []float64, extra string) string {
		b, _ := json.Marshal(x)
		return fmt.Sprintf(`{"inputs":[{"name":"x","shape":[1,%d,%d],"datatype":"FP32","data":%s}]%s}`, cfg.Seq, cfg.Hidden, b, extra)
	}
	sb, _ := json.Marshal(seed)
	resp := do(t, "POST", url+"/v2/models/enc/grad", body(x, fmt.Sprintf(`,"output_grad":{"shape":[1,%d,%d],"datatype":"FP32","data":%s},"wrt":["x"]`, cfg.Seq, cfg.Hidden, sb)))
	var g gradResponse
	if err := json.Unmarshal(resp.body, &g); err != nil || resp.status != 200 || len(g.Gradients) != 1 {
		t.Fatalf("grad: %d %s", resp.status, resp.body)
	}
	objective := func(x []float64) float64 {
		r := do(t, "POST", url+"/v2/models/enc/infer", body(x, ""))
		var out struct{ Outputs []struct{ Data []float64 } }
		if err := json.Unmarshal(r.body, &out); err != nil || len(out.Outputs) != 1 {
			t.Fatalf("infer: %d %s", r.status, r.body)
		}
		var s float64
		for i, v := range out.Outputs[0].Data {
			s += v * seed[i]
		}
		return s
	}
	for i := range x {
		orig := x[i]
		const h = 1e-2
		x[i] = orig + h
		plus := objective(x)
		x[i] = orig - h
		minus := objective(x)
		x[i] = orig
		fd := (plus - minus) / (2 * h)
		if got := g.Gradients[0].Data[i]; math.Abs(got-fd) > 2e-2*(1+math.Abs(fd)) {
			t.Errorf("d/dx[%d]: /grad %v, finite differences of /infer %v", i, got, fd)
		}
	}
}
