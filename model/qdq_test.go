package model

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// qdqModel writes x [-1,K] -> MatMul or Gemm(transB) with a weight stored
// as INT8 + per-column FP32 scales behind a DequantizeLinear, the form
// ONNX Runtime's quantization tools write.
func qdqModel(t *testing.T, k, n int, gemm bool) ([]byte, []int8, []float32) {
	r := rand.New(rand.NewPCG(uint64(k), uint64(n)))
	q := make([]int8, k*n)
	for i := range q {
		q[i] = int8(r.IntN(255) - 127)
	}
	scales := make([]float32, n)
	for i := range scales {
		scales[i] = float32(0.001 + r.Float64()*0.01)
	}
	stored, axis, rows, cols := q, int64(1), k, n
	if gemm { // Gemm transB=1 stores W as [N, K], scales along axis 0
		stored, axis, rows, cols = make([]int8, k*n), 0, n, k
		for i := 0; i < k; i++ {
			for j := 0; j < n; j++ {
				stored[j*k+i] = q[i*n+j]
			}
		}
	}
	node := &onnxpb.Node{OpType: "MatMul", Name: "mm", Inputs: []string{"x", "w"}, Outputs: []string{"y"}}
	if gemm {
		node = &onnxpb.Node{OpType: "Gemm", Name: "mm", Inputs: []string{"x", "w"}, Outputs: []string{"y"},
			Attributes: []*onnxpb.Attribute{{Name: "transB", Type: onnxpb.AttrInt, I: 1}}}
	}
	g := &onnxpb.Graph{
		Inputs: []*onnxpb.ValueInfo{{Name: "x", Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float,
			HasShape: true, Shape: []onnxpb.Dim{{Param: "N"}, {Value: int64(k), HasValue: true}}}}},
		Initializers: []*onnxpb.Tensor{
			TensorToONNX("w_q", tensor.From([]int{rows, cols}, stored)),
			TensorToONNX("w_scale", tensor.From([]int{n}, scales)),
			TensorToONNX("w_zp", tensor.From([]int{n}, make([]int8, n))),
		},
		Nodes: []*onnxpb.Node{
			{OpType: "DequantizeLinear", Name: "dq", Inputs: []string{"w_q", "w_scale", "w_zp"}, Outputs: []string{"w"},
				Attributes: []*onnxpb.Attribute{{Name: "axis", Type: onnxpb.AttrInt, I: axis}}},
			node,
		},
		Outputs: []*onnxpb.ValueInfo{{Name: "y", Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float}}},
	}
	return onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: 13}}, Graph: g}), q, scales
}

// TestQDQRunsOnInt8Kernels loads QDQ models and checks that the product
// ran on the int8 kernels with the model's own int8 weights (the layer
// record says so, and the result matches the dequantized product).
func TestQDQRunsOnInt8Kernels(t *testing.T) {
	const k, n, m = 64, 48, 3
	for _, gemm := range []bool{false, true} {
		data, q, scales := qdqModel(t, k, n, gemm)
		mdl, err := LoadWith(data, Options{Quantize: true, Scheme: quant.PerChannel})
		if err != nil {
			t.Fatal(err)
		}
		if len(mdl.Layers) != 1 || mdl.Layers[0].Kernels != "int8 per_channel (QDQ weights)" {
			t.Fatalf("gemm=%v: layers %+v", gemm, mdl.Layers)
		}
		for _, c := range mdl.constants {
			if c.t.DType == tensor.Float32 && c.t.Len() == k*n {
				t.Errorf("gemm=%v: the dequantized float weight is still held", gemm)
			}
		}
		r := rand.New(rand.NewPCG(9, 9))
		x := make([]float32, m*k)
		for i := range x {
			x[i] = float32(r.Float64())
		}
		out, err := mdl.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.From([]int{m, k}, x)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		y := out["y"].Data.([]float32)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var want, mag float64
				for p := 0; p < k; p++ {
					w := float64(q[p*n+j]) * float64(scales[j])
					want += float64(x[i*k+p]) * w
					mag += math.Abs(float64(x[i*k+p]) * w)
				}
				// activations quantized per row to [0, 127]: error <= half a step per term
				if d := math.Abs(float64(y[i*n+j]) - want); d > mag/127 {
					t.Fatalf("gemm=%v: y[%d,%d] = %v, want %v", gemm, i, j, y[i*n+j], want)
				}
			}
		}
		// with --quantize none the same model runs in float32
		f, err := LoadWith(data, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(f.Layers[0].Kernels, "float32") {
			t.Errorf("unquantized load: %+v", f.Layers)
		}
	}
}
