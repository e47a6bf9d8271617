package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// The indexing operators live in ops/index (Det and Einsum in
// ops/linalg), their tests beside them; this test loads each, with some
// shape operators, as a one-node model.

// TestIndexOpsNeverPanic feeds the indexing and shape operators random
// tensors (odd ranks, empty dimensions, extreme index values, wrong
// types): each run returns a value or an input error, never panics.
func TestIndexOpsNeverPanic(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	extremes := []int64{math.MinInt64, math.MaxInt64, -1 << 40, 1 << 40, -3, -1, 0, 1, 2, 3}
	randTensor := func() *tensor.Tensor {
		shape := make([]int, r.IntN(4))
		for i := range shape {
			shape[i] = r.IntN(4)
		}
		n, _ := tensor.NumElements(shape)
		switch r.IntN(4) {
		case 0:
			d := make([]int64, n)
			for i := range d {
				d[i] = extremes[r.IntN(len(extremes))]
			}
			return tensor.From(shape, d)
		case 1:
			d := make([]int32, n)
			for i := range d {
				d[i] = int32(r.IntN(7) - 3)
			}
			return tensor.From(shape, d)
		case 2:
			d := make([]bool, n)
			for i := range d {
				d[i] = r.IntN(2) == 0
			}
			return tensor.From(shape, d)
		}
		d := make([]float32, n)
		for i := range d {
			d[i] = float32(r.NormFloat64() * 3)
		}
		return tensor.From(shape, d)
	}
	ops := []struct {
		op    string
		opset int64
		ins   int
		outs  int
		attrs []*onnxpb.Attribute
	}{
		{"Gather", 13, 2, 1, []*onnxpb.Attribute{idxInt("axis", -1)}},
		{"GatherElements", 13, 2, 1, nil},
		{"GatherND", 13, 2, 1, []*onnxpb.Attribute{idxInt("batch_dims", 1)}},
		{"ScatterElements", 18, 3, 1, []*onnxpb.Attribute{idxStr("reduction", "mul")}},
		{"ScatterND", 18, 3, 1, []*onnxpb.Attribute{idxStr("reduction", "add")}},
		{"TensorScatter", 24, 3, 1, []*onnxpb.Attribute{idxStr("mode", "circular")}},
		{"Compress", 11, 2, 1, []*onnxpb.Attribute{idxInt("axis", 0)}},
		{"NonZero", 13, 1, 1, nil},
		{"OneHot", 11, 3, 1, nil},
		{"TopK", 11, 2, 2, nil},
		{"ArgMin", 13, 1, 1, nil},
		{"Unique", 11, 1, 4, []*onnxpb.Attribute{idxInt("axis", 0)}},
		{"Trilu", 14, 2, 1, nil},
		{"EyeLike", 22, 1, 1, []*onnxpb.Attribute{idxInt("k", -2)}},
		{"Hardmax", 13, 1, 1, nil},
		{"CumSum", 14, 2, 1, []*onnxpb.Attribute{idxInt("reverse", 1)}},
		{"ReverseSequence", 10, 2, 1, nil},
		{"Det", 22, 1, 1, nil},
		{"Einsum", 12, 2, 1, []*onnxpb.Attribute{idxStr("equation", "...ij,...jk")}},
		{"Slice", 13, 5, 1, nil},
		{"Split", 13, 2, 2, []*onnxpb.Attribute{idxInt("axis", -1)}},
		{"Tile", 13, 2, 1, nil},
		{"Expand", 13, 2, 1, nil},
		{"Range", 11, 3, 1, nil},
		{"Transpose", 13, 1, 1, []*onnxpb.Attribute{idxInts("perm", 1, 0)}},
		{"Concat", 13, 2, 1, []*onnxpb.Attribute{idxInt("axis", 1)}},
	}
	for _, c := range ops {
		ok := 0
		for trial := 0; trial < 150; trial++ {
			ins := make([]*tensor.Tensor, c.ins)
			for i := range ins {
				ins[i] = randTensor()
				if i > 0 && r.IntN(2) == 0 { // a small index list, as shapes and bounds are
					d := make([]int64, r.IntN(4))
					for j := range d {
						d[j] = int64(r.IntN(7) - 2)
					}
					ins[i] = idxI64s(d...)
				}
			}
			m, err := Load(idxModel(c.opset, c.op, c.attrs, ins, c.outs, tensor.Invalid))
			if err != nil {
				t.Fatalf("%s: load: %v", c.op, err)
			}
			feed := map[string]*tensor.Tensor{}
			for i, x := range ins {
				feed[fmt.Sprintf("x%d", i)] = x
			}
			_, err = m.Run(context.Background(), feed, nil)
			if err == nil {
				ok++
			}
			if err != nil && !errors.Is(err, ErrInput) && !errors.Is(err, ErrUnsupported) {
				t.Errorf("%s on %v: an error that is not an input error: %v", c.op, idxShapes(ins), err)
			}
		}
		t.Logf("%s: %d of 150 random runs gave a value", c.op, ok)
	}
}

func idxShapes(ts []*tensor.Tensor) []string {
	var s []string
	for _, t := range ts {
		s = append(s, t.DType.String()+tensor.ShapeString(t.Shape))
	}
	return s
}

// idxModel encodes a one-node model whose inputs x0, x1, ... have the
// types of ins (nil: an absent optional input) and unknown shapes, with
// nOut outputs y0, y1, ... of type outType (Invalid: the first input's).
func idxModel(opset int64, op string, attrs []*onnxpb.Attribute, ins []*tensor.Tensor, nOut int, outType tensor.DataType) []byte {
	g := &onnxpb.Graph{Name: "op"}
	var names []string
	for i, t := range ins {
		if t == nil {
			names = append(names, "")
			continue
		}
		name := fmt.Sprintf("x%d", i)
		names = append(names, name)
		g.Inputs = append(g.Inputs, &onnxpb.ValueInfo{Name: name, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: DataTypeToONNX(t.DType)}})
	}
	if outType == tensor.Invalid {
		outType = ins[0].DType
	}
	var outs []string
	for j := 0; j < nOut; j++ {
		name := fmt.Sprintf("y%d", j)
		outs = append(outs, name)
		g.Outputs = append(g.Outputs, &onnxpb.ValueInfo{Name: name, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: DataTypeToONNX(outType)}})
	}
	g.Nodes = []*onnxpb.Node{{OpType: op, Name: "n", Inputs: names, Outputs: outs, Attributes: attrs}}
	return onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: opset}}, Graph: g})
}

func idxInts(name string, v ...int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInts, Ints: v}
}

func idxInt(name string, v int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInt, I: v}
}

func idxStr(name, s string) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrString, S: []byte(s)}
}

func idxI64s(v ...int64) *tensor.Tensor { return tensor.From([]int{len(v)}, v) }
