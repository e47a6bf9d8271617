package api

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/repository"
)

type opTensor struct {
	Name     string    `json:"name,omitempty"`
	Shape    []int     `json:"shape"`
	Datatype string    `json:"datatype"`
	Data     []float64 `json:"data"`
}

func fp32(shape []int, data []float32) opTensor {
	d := make([]float64, len(data))
	for i, v := range data {
		d[i] = float64(v)
	}
	return opTensor{Shape: shape, Datatype: "FP32", Data: d}
}

func opsServer(t *testing.T) string {
	return testServer(t, repository.New(serverOptions()), 1<<20)
}

func postOp(t *testing.T, url, path string, body any) (map[string]opTensor, string, response) {
	t.Helper()
	r := do(t, "POST", url+path, mustJSON(body))
	if r.status != 200 {
		return nil, "", r
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatalf("%s: %v: %s", path, err, r.body)
	}
	var kernels string
	json.Unmarshal(raw["kernels"], &kernels)
	out := map[string]opTensor{}
	for k, v := range raw {
		if k == "kernels" {
			continue
		}
		var ot opTensor
		if err := json.Unmarshal(v, &ot); err != nil {
			t.Fatalf("%s: field %s: %v", path, k, err)
		}
		out[k] = ot
	}
	return out, kernels, r
}

func TestOpsQuantizeDequantize(t *testing.T) {
	url := opsServer(t)
	x := []float32{1, -0.5, 0.25, 2, -127, 0}
	for _, scheme := range []string{"per_tensor", "per_channel", "per_block"} {
		out, kernels, r := postOp(t, url, "/v1/ops/quantize", map[string]any{"tensor": fp32([]int{3, 2}, x), "scheme": scheme})
		if r.status != 200 {
			t.Fatalf("%s: %d %s", scheme, r.status, r.body)
		}
		if kernels != dispatch.Default().String() {
			t.Errorf("kernels %q", kernels)
		}
		s, _ := quant.ParseScheme(scheme)
		want, _ := quant.QuantizeWeights(x, 3, 2, s)
		vals, scales := out["values"], out["scales"]
		if vals.Datatype != "INT8" || fmt.Sprint(vals.Shape) != "[3 2]" || scales.Datatype != "FP32" {
			t.Fatalf("%s: %+v %+v", scheme, vals, scales)
		}
		for i, q := range want.Q {
			if int8(vals.Data[i]) != q {
				t.Errorf("%s: values[%d] = %v, want %d", scheme, i, vals.Data[i], q)
			}
		}
		for i, sc := range want.Scales {
			if float32(scales.Data[i]) != sc {
				t.Errorf("%s: scales[%d] = %v, want %v", scheme, i, scales.Data[i], sc)
			}
		}
		// and back
		back, _, r := postOp(t, url, "/v1/ops/dequantize", map[string]any{
			"values": opTensor{Shape: vals.Shape, Datatype: "INT8", Data: vals.Data}, "scales": scales, "scheme": scheme,
		})
		if r.status != 200 {
			t.Fatalf("dequantize %s: %d %s", scheme, r.status, r.body)
		}
		for i, v := range want.Dequantize() {
			if float32(back["tensor"].Data[i]) != v {
				t.Errorf("%s: dequantized[%d] = %v, want %v", scheme, i, back["tensor"].Data[i], v)
			}
		}
	}
}

func TestOpsMatMul(t *testing.T) {
	url := opsServer(t)
	r := rand.New(rand.NewPCG(8, 8))
	m, k, n := 3, 40, 5
	a := make([]float32, m*k)
	b := make([]float32, k*n)
	for i := range a {
		a[i] = float32(r.NormFloat64())
	}
	for i := range b {
		b[i] = float32(r.NormFloat64())
	}
	want := make([]float32, m*n)
	kernels.Sgemm(m, n, k, a, k, b, n, want, n)
	out, _, resp := postOp(t, url, "/v1/ops/matmul", map[string]any{"a": fp32([]int{m, k}, a), "b": fp32([]int{k, n}, b)})
	if resp.status != 200 {
		t.Fatalf("%d %s", resp.status, resp.body)
	}
	if fmt.Sprint(out["output"].Shape) != "[3 5]" {
		t.Fatalf("shape %v", out["output"].Shape)
	}
	for i, w := range want {
		if math.Abs(out["output"].Data[i]-float64(w)) > 1e-4 {
			t.Errorf("output[%d] = %v, want %v", i, out["output"].Data[i], w)
		}
	}

	// qmatmul: from FP32 weights, and from the same weights pre-quantized
	w, _ := quant.QuantizeWeights(b, k, n, quant.PerChannel)
	qw, _ := gemm.PackQ(w)
	exact := make([]float32, m*n)
	if err := gemm.Default().QMatMul(a, m, qw, exact); err != nil {
		t.Fatal(err)
	}
	values := make([]float64, len(w.Q))
	for i, q := range w.Q {
		values[i] = float64(q)
	}
	bodies := []map[string]any{
		{"a": fp32([]int{m, k}, a), "b": fp32([]int{k, n}, b)},
		{"a": fp32([]int{m, k}, a), "b_values": opTensor{Shape: []int{k, n}, Datatype: "INT8", Data: values}, "b_scales": fp32([]int{n}, w.Scales), "scheme": "per_channel"},
	}
	for _, body := range bodies {
		out, _, resp := postOp(t, url, "/v1/ops/qmatmul", body)
		if resp.status != 200 {
			t.Fatalf("%d %s", resp.status, resp.body)
		}
		for i := range exact {
			if float32(out["output"].Data[i]) != exact[i] {
				t.Errorf("qmatmul output[%d] = %v, want %v", i, out["output"].Data[i], exact[i])
			}
			if math.Abs(out["output"].Data[i]-float64(want[i])) > 0.05*math.Sqrt(float64(k)) {
				t.Errorf("qmatmul output[%d] = %v, far from float %v", i, out["output"].Data[i], want[i])
			}
		}
	}
}

func TestOpsErrors(t *testing.T) {
	url := opsServer(t)
	m2 := fp32([]int{2, 2}, []float32{1, 2, 3, 4})
	cases := []struct {
		path      string
		body      string
		status    int
		fragments []string
	}{
		{"/v1/ops/quantize", `{`, 400, []string{"malformed JSON"}},
		{"/v1/ops/quantize", `{}`, 400, []string{`missing "tensor"`}},
		{"/v1/ops/quantize", mustJSON(map[string]any{"tensor": m2, "scheme": "int4"}), 400, []string{`unknown scheme "int4"`}},
		{"/v1/ops/quantize", mustJSON(map[string]any{"tensor": fp32([]int{4}, []float32{1, 2, 3, 4})}), 400, []string{"rank 2"}},
		{"/v1/ops/quantize", `{"tensor":{"shape":[2],"datatype":"INT8","data":[1,2]}}`, 400, []string{"INT8", "FP32"}},
		{"/v1/ops/quantize", `{"tensor":{"shape":[3],"datatype":"FP32","data":[1,2]}}`, 400, []string{"needs 3 elements"}},
		{"/v1/ops/dequantize", mustJSON(map[string]any{"values": opTensor{Shape: []int{2, 2}, Datatype: "INT8", Data: []float64{1, 2, 3, 4}}, "scales": fp32([]int{3}, []float32{1, 1, 1})}), 400, []string{"scales have shape [3]", "[2]"}},
		{"/v1/ops/dequantize", mustJSON(map[string]any{"values": opTensor{Shape: []int{1, 1}, Datatype: "INT8", Data: []float64{-128}}, "scales": fp32([]int{1}, []float32{1})}), 400, []string{"-127, 127"}},
		{"/v1/ops/matmul", mustJSON(map[string]any{"a": m2, "b": fp32([]int{3, 1}, []float32{1, 2, 3})}), 400, []string{"inner dimensions differ"}},
		{"/v1/ops/matmul", mustJSON(map[string]any{"a": fp32([]int{2000, 1}, make([]float32, 2000)), "b": fp32([]int{1, 2000}, make([]float32, 2000))}), 400, []string{"more elements than the request has bytes"}},
		{"/v1/ops/qmatmul", mustJSON(map[string]any{"a": m2}), 400, []string{`missing "b_values"`}},
		{"/v1/ops/qmatmul", mustJSON(map[string]any{"a": m2, "b": m2, "b_values": m2}), 400, []string{"not both"}},
		{"/v1/ops/qmatmul", mustJSON(map[string]any{"a": fp32([]int{1, 2}, []float32{1, float32(0)}), "b": fp32([]int{2, 1}, []float32{1, 2})}), 200, nil},
		{"/v1/ops/matmul", strings.Repeat(" ", 1<<20+1), 413, []string{"1 MiB"}},
	}
	for _, c := range cases {
		r := do(t, "POST", url+c.path, c.body)
		if c.status == 200 {
			if r.status != 200 {
				t.Errorf("%s %.80s: %d %s", c.path, c.body, r.status, r.body)
			}
			continue
		}
		wantError(t, r, c.status, c.fragments...)
	}
	wantError(t, do(t, "GET", url+"/v1/ops/matmul", ""), 405, "GET")
}
