package quantize

import (
	"context"
	"math"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// TestSymmetricInt8: the scale is 2·absmax/254 computed in float64 then
// rounded to float32, values divide by it in float32 and round half to
// even; an all-zero weight gets scale 1.
func TestSymmetricInt8(t *testing.T) {
	w := []float32{0.5, -1.27, 0.005, 0.015, 0.025, 1.0, -0.635}
	q, s := SymmetricInt8(w)
	if want := float32(2 * float64(float32(1.27)) / 254); s != want {
		t.Fatalf("scale %v, want %v", s, want)
	}
	// 1.27/s is 127 (or within an ulp of it); -0.635/s is about -63.5
	for i, v := range w {
		want := int8(math.RoundToEven(float64(v / s)))
		if q[i] != want {
			t.Errorf("w[%d] = %v -> %d, want %d", i, v, q[i], want)
		}
	}
	if q[1] != -127 {
		t.Errorf("-absmax -> %d, want -127", q[1])
	}
	if _, s := SymmetricInt8([]float32{0, 0}); s != 1 {
		t.Errorf("zero weight: scale %v, want 1", s)
	}
}

// TestDynamicEncoder: the encoder quantized as quantize_dynamic writes it
// has the pattern for each of its 24 products; quantserve runs it fused
// (one DynamicLinear per quantized activation) with outputs bit-identical
// to the unfused graph on every kernel table, and close to the float
// model.
func TestDynamicEncoder(t *testing.T) {
	cfg := onnxbuild.DefaultEncoder
	cfg.Seq = 32
	float := onnxbuild.Encoder(cfg).Bytes()
	q, n, err := Dynamic(float)
	if err != nil {
		t.Fatal(err)
	}
	if n != 6*cfg.Layers {
		t.Fatalf("%d MatMuls quantized, want %d", n, 6*cfg.Layers)
	}
	pb, err := onnxpb.UnmarshalModel(q)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]int{}
	for _, nd := range pb.Graph.Nodes {
		ops[nd.OpType]++
	}
	// Q, K and V share one quantized input: 4 per layer
	if ops["DynamicQuantizeLinear"] != 4*cfg.Layers || ops["MatMulInteger"] != n || ops["Cast"] != n || ops["MatMul"] != 2*cfg.Layers {
		t.Fatalf("ops %v", ops)
	}
	for _, p := range pb.Graph.Initializers {
		if len(p.Dims) == 2 && p.DataType == onnxpb.Float && p.Name != "embeddings" && p.Name != "positions" {
			t.Errorf("float weight %s left in the file", p.Name)
		}
	}
	in := map[string]*tensor.Tensor{"input_ids": onnxbuild.EncoderInput(cfg, 2, 9)}
	ref, err := model.LoadWith(float, model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range dispatch.Available() {
		e := gemm.New(tb, 2)
		fused, err := model.LoadWith(q, model.Options{Exec: e})
		if err != nil {
			t.Fatal(err)
		}
		steps := map[string]int{}
		for _, s := range fused.Steps() {
			steps[s.Op]++
		}
		if steps["DynamicLinear"] != 4*cfg.Layers || steps["MatMulInteger"] != 0 || steps["DynamicQuantizeLinear"] != 0 {
			t.Fatalf("%s: steps %v", tb.Name, steps)
		}
		plain, err := model.LoadWith(q, model.Options{Exec: e, Unrewritten: true})
		if err != nil {
			t.Fatal(err)
		}
		a, err := fused.Run(context.Background(), in, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := plain.Run(context.Background(), in, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, unfused, f := a["hidden"].Data.([]float32), b["hidden"].Data.([]float32), want["hidden"].Data.([]float32)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(unfused[i]) {
				t.Fatalf("%s: hidden[%d] = %v fused, %v unfused", tb.Name, i, got[i], unfused[i])
			}
		}
		// against the float model: the outputs are LayerNorm'd (unit
		// scale), so absolute errors read as relative ones
		var maxErr, sq float64
		for i := range got {
			d := math.Abs(float64(got[i] - f[i]))
			maxErr, sq = max(maxErr, d), sq+d*d
		}
		rms := math.Sqrt(sq / float64(len(got)))
		t.Logf("%s: int8 (quantize_dynamic) vs float32: max |error| %.4f, rms %.5f over %d values", tb.Name, maxErr, rms, len(got))
		if maxErr > 0.05 || rms > 0.01 {
			t.Errorf("%s: max |error| %.4f, rms %.5f: too far from the float model", tb.Name, maxErr, rms)
		}
		e.Close()
	}
}
