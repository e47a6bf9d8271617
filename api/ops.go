package api

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/oip"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// The tensor endpoints run quantserve's quantization and matrix kernels on
// tensors sent in the request, OIP tensor JSON in and out. Every response
// names the kernel table that ran.

// opsBody splits the body's top-level object into fields.
func opsBody(in *workInput) (map[string]json.RawMessage, int, error) {
	body := in.body
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return nil, 0, errorf(CodeInvalid, fmt.Sprintf("malformed JSON: the body must be an object (%v)", err))
	}
	return fields, len(body), nil
}

// tensorField decodes the named OIP tensor field, requiring a datatype, and
// counts it against the memory budget.
func tensorField(in *workInput, fields map[string]json.RawMessage, name string, dt tensor.DataType) (*tensor.Tensor, error) {
	raw, ok := fields[name]
	if !ok {
		return nil, errorf(CodeInvalid, fmt.Sprintf("missing %q: an OIP tensor {\"shape\", \"datatype\", \"data\"}", name))
	}
	t, err := oip.DecodeTensor(raw)
	if err != nil {
		return nil, errorf(CodeInvalid, fmt.Sprintf("%q: %v", name, err))
	}
	if t.DType != dt {
		return nil, errorf(CodeInvalid, fmt.Sprintf("%q has datatype %v, this operation takes %v", name, t.DType, dt))
	}
	if err := in.reserve(t); err != nil {
		return nil, err
	}
	return t, nil
}

func matrix(name string, t *tensor.Tensor) (rows, cols int, err error) {
	if t.Rank() != 2 {
		return 0, 0, errorf(CodeInvalid, fmt.Sprintf("%q must be a matrix (rank 2), got shape %s", name, tensor.ShapeString(t.Shape)))
	}
	return t.Shape[0], t.Shape[1], nil
}

func schemeField(fields map[string]json.RawMessage) (quant.Scheme, error) {
	name := "per_channel"
	if raw, ok := fields["scheme"]; ok {
		if err := json.Unmarshal(raw, &name); err != nil {
			return 0, errorf(CodeInvalid, `"scheme" must be a string`)
		}
	}
	s, err := quant.ParseScheme(name)
	if err != nil {
		return 0, errorf(CodeInvalid, err.Error())
	}
	return s, nil
}

// writeTensors writes {"kernels": ..., name: tensor, ...}.
func (s *server) writeTensors(w http.ResponseWriter, names []string, ts []*tensor.Tensor) {
	name, _ := json.Marshal(s.exec.Table().String())
	b := append([]byte(`{"kernels":`), name...)
	for i, field := range names {
		b = append(b, `,"`...)
		b = append(b, field...)
		b = append(b, `":`...)
		b = oip.AppendTensor(b, field, ts[i])
	}
	b = append(b, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// POST /v1/ops/quantize {"tensor": FP32 [K,N] (any shape for per_tensor), "scheme"}
// -> {"kernels", "values": INT8, "scales": FP32 [1] | [N] | [ceil(K/32), N]}
func (s *server) opQuantize(w http.ResponseWriter, r *http.Request, in *workInput) error {
	fields, _, err := opsBody(in)
	if err != nil {
		return err
	}
	x, err := tensorField(in, fields, "tensor", tensor.Float32)
	if err != nil {
		return err
	}
	scheme, err := schemeField(fields)
	if err != nil {
		return err
	}
	k, n := x.Len(), 1
	if scheme != quant.PerTensor {
		if k, n, err = matrix("tensor", x); err != nil {
			return err
		}
	}
	q, err := quant.QuantizeWeights(x.Data.([]float32), k, n, scheme)
	if err != nil {
		return errorf(CodeInvalid, err.Error())
	}
	scales := tensor.From(scalesShape(q), q.Scales)
	s.writeTensors(w, []string{"values", "scales"}, []*tensor.Tensor{{DType: tensor.Int8, Shape: x.Shape, Data: q.Q}, scales})
	return nil
}

func scalesShape(q *quant.Weights) []int {
	switch q.Scheme {
	case quant.PerTensor:
		return []int{1}
	case quant.PerChannel:
		return []int{q.N}
	}
	return []int{q.Blocks(), q.N}
}

// weightsFrom rebuilds quantized weights from INT8 values and FP32 scales.
func weightsFrom(values, scales *tensor.Tensor, scheme quant.Scheme, name string) (*quant.Weights, error) {
	k, n := values.Len(), 1
	if scheme != quant.PerTensor || values.Rank() == 2 {
		var err error
		if k, n, err = matrix(name, values); err != nil {
			return nil, err
		}
	}
	q := &quant.Weights{Scheme: scheme, K: k, N: n, Q: values.Data.([]int8), Scales: scales.Data.([]float32)}
	if want := scalesShape(q); !sameShape(scales.Shape, want) {
		return nil, errorf(CodeInvalid, fmt.Sprintf("scales have shape %s; %v scales of %s values have shape %s",
			tensor.ShapeString(scales.Shape), scheme, tensor.ShapeString(values.Shape), tensor.ShapeString(want)))
	}
	for _, v := range q.Q {
		if v == -128 {
			return nil, errorf(CodeInvalid, "int8 values must lie in [-127, 127]: -128 has no symmetric counterpart")
		}
	}
	return q, nil
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// POST /v1/ops/dequantize {"values": INT8, "scales": FP32, "scheme"} -> {"kernels", "tensor": FP32}
func (s *server) opDequantize(w http.ResponseWriter, r *http.Request, in *workInput) error {
	fields, _, err := opsBody(in)
	if err != nil {
		return err
	}
	values, err := tensorField(in, fields, "values", tensor.Int8)
	if err != nil {
		return err
	}
	scales, err := tensorField(in, fields, "scales", tensor.Float32)
	if err != nil {
		return err
	}
	scheme, err := schemeField(fields)
	if err != nil {
		return err
	}
	q, err := weightsFrom(values, scales, scheme, "values")
	if err != nil {
		return err
	}
	s.writeTensors(w, []string{"tensor"}, []*tensor.Tensor{tensor.From(values.Shape, q.Dequantize())})
	return nil
}

// productShape checks a [M,K] × b [K,N] and bounds the output by the body.
func productShape(a *tensor.Tensor, bk, bn int, bodyLen int) (m int, err error) {
	m, k, err := matrix("a", a)
	if err != nil {
		return 0, err
	}
	if k != bk {
		return 0, errorf(CodeInvalid, fmt.Sprintf("inner dimensions differ: a is %s, b is [%d,%d]", tensor.ShapeString(a.Shape), bk, bn))
	}
	// The output may not outgrow the request: one element per body byte.
	if bn > 0 && m > bodyLen/bn {
		return 0, errorf(CodeInvalid, fmt.Sprintf("the product [%d,%d] has more elements than the request has bytes", m, bn))
	}
	return m, nil
}

// POST /v1/ops/matmul {"a": FP32 [M,K], "b": FP32 [K,N]} -> {"kernels", "output": FP32 [M,N]}
func (s *server) opMatMul(w http.ResponseWriter, r *http.Request, in *workInput) error {
	fields, size, err := opsBody(in)
	if err != nil {
		return err
	}
	a, err := tensorField(in, fields, "a", tensor.Float32)
	if err != nil {
		return err
	}
	b, err := tensorField(in, fields, "b", tensor.Float32)
	if err != nil {
		return err
	}
	k, n, err := matrix("b", b)
	if err != nil {
		return err
	}
	m, err := productShape(a, k, n, size)
	if err != nil {
		return err
	}
	out := make([]float32, m*n)
	if err := s.exec.MatMul(a.Data.([]float32), m, gemm.PackF(k, n, b.Data.([]float32), n), out); err != nil {
		return err
	}
	s.writeTensors(w, []string{"output"}, []*tensor.Tensor{tensor.From([]int{m, n}, out)})
	return nil
}

// POST /v1/ops/qmatmul: FP32 activations a [M,K] times weights quantized
// with "scheme": either FP32 "b" [K,N], quantized here, or pre-quantized
// INT8 "b_values" with FP32 "b_scales". -> {"kernels", "output": FP32 [M,N]}
func (s *server) opQMatMul(w http.ResponseWriter, r *http.Request, in *workInput) error {
	fields, size, err := opsBody(in)
	if err != nil {
		return err
	}
	a, err := tensorField(in, fields, "a", tensor.Float32)
	if err != nil {
		return err
	}
	scheme, err := schemeField(fields)
	if err != nil {
		return err
	}
	var q *quant.Weights
	_, hasB := fields["b"]
	_, hasValues := fields["b_values"]
	switch {
	case hasB && hasValues:
		return errorf(CodeInvalid, `give "b" (FP32 weights) or "b_values" with "b_scales" (pre-quantized), not both`)
	case hasB:
		b, err := tensorField(in, fields, "b", tensor.Float32)
		if err != nil {
			return err
		}
		k, n, err := matrix("b", b)
		if err != nil {
			return err
		}
		if q, err = quant.QuantizeWeights(b.Data.([]float32), k, n, scheme); err != nil {
			return errorf(CodeInvalid, err.Error())
		}
	default:
		values, err := tensorField(in, fields, "b_values", tensor.Int8)
		if err != nil {
			return err
		}
		scales, err := tensorField(in, fields, "b_scales", tensor.Float32)
		if err != nil {
			return err
		}
		if q, err = weightsFrom(values, scales, scheme, "b_values"); err != nil {
			return err
		}
	}
	if q.K > gemm.MaxQK {
		return errorf(CodeInvalid, fmt.Sprintf("K = %d exceeds %d for int8 products", q.K, gemm.MaxQK))
	}
	m, err := productShape(a, q.K, q.N, size)
	if err != nil {
		return err
	}
	packed, err := gemm.PackQ(q)
	if err != nil {
		return errorf(CodeInvalid, err.Error())
	}
	out := make([]float32, m*q.N)
	if m > 0 {
		if err := s.exec.QMatMul(a.Data.([]float32), m, packed, out); err != nil {
			return errorf(CodeInvalid, err.Error())
		}
	}
	s.writeTensors(w, []string{"output"}, []*tensor.Tensor{tensor.From([]int{m, q.N}, out)})
	return nil
}
