package arith_test

import (
	"math"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	_ "github.com/quantserve/quantserve/ops/all" // the families the fuzzed operators come from
	"github.com/quantserve/quantserve/ops/opstest"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

func castAttr(to onnxpb.DataType) []*onnxpb.Attribute {
	return []*onnxpb.Attribute{{Name: "to", Type: onnxpb.AttrInt, I: int64(to)}}
}

// fuzzOps are the operators FuzzElementwise drives, with their input
// counts: this package's, the activations, and the comparisons, Where
// and the casts that meet them in the same graphs.
var fuzzOps = []struct {
	op    string
	opset int64
	nin   int
	attrs []*onnxpb.Attribute
}{
	{"Add", 14, 2, nil}, {"Sub", 14, 2, nil}, {"Mul", 14, 2, nil}, {"Div", 14, 2, nil},
	{"Pow", 15, 2, nil}, {"Mod", 13, 2, nil}, {"Mod", 13, 2, []*onnxpb.Attribute{{Name: "fmod", Type: onnxpb.AttrInt, I: 1}}},
	{"Min", 13, 3, nil}, {"Max", 13, 2, nil}, {"Sum", 13, 3, nil}, {"Mean", 13, 2, nil},
	{"Equal", 19, 2, nil}, {"Less", 13, 2, nil}, {"GreaterOrEqual", 16, 2, nil}, {"And", 7, 2, nil}, {"Xor", 7, 2, nil},
	{"Where", 16, 3, nil}, {"PRelu", 16, 2, nil}, {"Clip", 13, 3, nil},
	{"BitShift", 11, 2, []*onnxpb.Attribute{{Name: "direction", Type: onnxpb.AttrString, S: []byte("LEFT")}}},
	{"BitwiseAnd", 18, 2, nil}, {"BitwiseNot", 18, 1, nil},
	{"Relu", 14, 1, nil}, {"Sqrt", 13, 1, nil}, {"Abs", 13, 1, nil}, {"Neg", 13, 1, nil}, {"Sign", 13, 1, nil},
	{"Round", 22, 1, nil}, {"Erf", 13, 1, nil}, {"Exp", 13, 1, nil}, {"Sigmoid", 13, 1, nil}, {"Gelu", 20, 1, nil},
	{"HardSwish", 22, 1, nil}, {"Shrink", 9, 1, nil}, {"IsInf", 20, 1, nil}, {"IsNaN", 20, 1, nil}, {"Not", 1, 1, nil},
	{"Cast", 21, 1, castAttr(onnxpb.String)}, {"Cast", 21, 1, castAttr(onnxpb.Float16)}, {"Cast", 21, 1, castAttr(onnxpb.Int8)},
	{"Dropout", 22, 3, nil}, {"ConstantOfShape", 25, 1, nil},
}

// fuzzTensor decodes a small tensor from b: a type, a rank up to 4,
// dimensions up to 3, then values.
func fuzzTensor(b []byte) (*tensor.Tensor, []byte) {
	next := func() byte {
		if len(b) == 0 {
			return 0
		}
		v := b[0]
		b = b[1:]
		return v
	}
	dt := tensor.DataType(1 + next()%uint8(tensor.String))
	shape := make([]int, next()%5)
	for i := range shape {
		shape[i] = int(next() % 4)
	}
	t, _ := tensor.New(dt, shape)
	specials := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -2.5, 3, 1e30, -1e-30, math.Inf(1), math.Inf(-1), math.NaN(), 127, -128, 300, 65504}
	vals := make([]float64, t.Len())
	picks := make([]byte, t.Len())
	for i := range vals {
		picks[i] = next()
		vals[i] = specials[picks[i]%uint8(len(specials))]
	}
	switch d := t.Data.(type) {
	case []string:
		for i, p := range picks {
			d[i] = []string{"1", "-2.5", "inf", "x", ""}[p%5]
		}
	case []bool:
		for i, v := range vals {
			d[i] = v > 0
		}
	default:
		if c, err := tensorops.CastTo(tensor.From([]int{len(vals)}, vals), dt); err == nil {
			tensor.CopyData(t.Data, c.Data)
		}
	}
	return t, b
}

// FuzzElementwise runs every operator of the elementwise families on
// arbitrary small tensors of every type: each answers a value or an
// error, never a panic; Add's answers match the index-walking definition.
func FuzzElementwise(f *testing.F) {
	f.Add([]byte{0, 9, 2, 2, 3, 1, 2, 3, 4, 5, 6, 9, 1, 3, 7})
	f.Add([]byte{16, 0, 1, 2, 9, 4, 1, 1, 9, 9, 3, 2, 3, 1, 2})
	f.Add([]byte{37, 13, 3, 1, 2, 1, 0, 5, 11})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		c := fuzzOps[int(b[0])%len(fuzzOps)]
		b = b[1:]
		in := make([]*tensor.Tensor, c.nin)
		for i := range in {
			in[i], b = fuzzTensor(b)
		}
		out, err := opstest.Run(t, opstest.Node{Op: c.op, Opset: c.opset, Attrs: c.attrs}, in...)
		if err != nil || c.op != "Add" {
			return
		}
		shape, err := ops.BroadcastShape(in[0].Shape, in[1].Shape)
		if err != nil {
			t.Fatalf("Add of %v and %v answered though they do not broadcast", in[0].Shape, in[1].Shape)
		}
		x, y := in[0].Float64s(), in[1].Float64s()
		it := tensor.NewIter(shape, tensor.BroadcastStrides(in[0].Shape, shape), tensor.BroadcastStrides(in[1].Shape, shape))
		var want []float64
		for it.Next() {
			want = append(want, x[it.Off(0)]+y[it.Off(1)])
		}
		got := out[0].Float64s()
		if !slices.Equal(out[0].Shape, shape) || len(got) != len(want) {
			t.Fatalf("Add of %v and %v: shape %v, want %v", in[0].Shape, in[1].Shape, out[0].Shape, shape)
		}
		if in[0].DType == tensor.Float64 {
			for i := range got {
				if got[i] != want[i] && !(got[i] != got[i] && want[i] != want[i]) {
					t.Fatalf("Add[%d] = %v, want %v", i, got[i], want[i])
				}
			}
		}
	})
}
