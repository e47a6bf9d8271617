package index

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestEmptyTensorsWithHugeDimensions: a request may send a tensor with no
// elements whose other dimensions are each as large as the protocol
// allows ([2³¹, 0, 2³¹]); the operators answer at once, without walking
// or allocating by those dimensions.
func TestEmptyTensorsWithHugeDimensions(t *testing.T) {
	huge := tensor.MaxElements
	x := tensor.From([]int{huge, 0, huge}, []float32{})
	none := []float32{}
	opstest.Check(t, "Gather", opstest.Run1(t, opstest.Node{Op: "Gather", Opset: 13, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", 2)}}, x, opstest.I64s(5, 7)), []int{huge, 0, 2}, none)
	opstest.Check(t, "CumSum", opstest.Run1(t, opstest.Node{Op: "CumSum", Opset: 14}, x, tensor.Scalar(int64(2))), []int{huge, 0, huge}, none)
	opstest.Check(t, "Trilu", opstest.Run1(t, opstest.Node{Op: "Trilu", Opset: 14}, x), []int{huge, 0, huge}, none)
	opstest.Check(t, "EyeLike", opstest.Run1(t, opstest.Node{Op: "EyeLike", Opset: 22}, tensor.From([]int{huge, 0}, none)), []int{huge, 0}, none)
	outs, err := opstest.Run(t, opstest.Node{Op: "Unique", Opset: 11, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", 0)}, Outputs: 4}, tensor.From([]int{3, 0}, none))
	if err != nil {
		t.Fatal(err)
	}
	opstest.Check(t, "Unique of empty slices", outs[0], []int{1, 0}, none)
	opstest.Check(t, "their counts", outs[3], []int{1}, []int64{3})
	opstest.Check(t, "their inverse", outs[2], []int{3}, []int64{0, 0, 0})
}

// TestNeverPanic feeds the operators random tensors (odd ranks, empty
// dimensions, extreme index values, wrong types): each run returns a
// value or an input error, never panics.
func TestNeverPanic(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	for _, c := range []struct {
		op    string
		opset int64
		ins   int
		outs  int
		attrs []*onnxpb.Attribute
	}{
		{"Gather", 13, 2, 1, []*onnxpb.Attribute{opstest.AttrInt("axis", -1)}},
		{"GatherElements", 13, 2, 1, nil},
		{"GatherND", 13, 2, 1, []*onnxpb.Attribute{opstest.AttrInt("batch_dims", 1)}},
		{"ScatterElements", 18, 3, 1, []*onnxpb.Attribute{opstest.AttrString("reduction", "mul")}},
		{"ScatterND", 18, 3, 1, []*onnxpb.Attribute{opstest.AttrString("reduction", "add")}},
		{"TensorScatter", 24, 3, 1, []*onnxpb.Attribute{opstest.AttrString("mode", "circular")}},
		{"Compress", 11, 2, 1, []*onnxpb.Attribute{opstest.AttrInt("axis", 0)}},
		{"NonZero", 13, 1, 1, nil},
		{"OneHot", 11, 3, 1, nil},
		{"TopK", 11, 2, 2, nil},
		{"Unique", 11, 1, 4, []*onnxpb.Attribute{opstest.AttrInt("axis", 0)}},
		{"Trilu", 14, 2, 1, nil},
		{"EyeLike", 22, 1, 1, []*onnxpb.Attribute{opstest.AttrInt("k", -2)}},
		{"Hardmax", 13, 1, 1, nil},
		{"CumSum", 14, 2, 1, []*onnxpb.Attribute{opstest.AttrInt("reverse", 1)}},
		{"ReverseSequence", 10, 2, 1, nil},
	} {
		ok := 0
		for trial := 0; trial < 150; trial++ {
			ins := make([]*tensor.Tensor, c.ins)
			for i := range ins {
				ins[i] = randTensor(r)
				if i > 0 && r.IntN(2) == 0 { // a small index list, as shapes and bounds are
					d := make([]int64, r.IntN(4))
					for j := range d {
						d[j] = int64(r.IntN(7) - 2)
					}
					ins[i] = opstest.I64s(d...)
				}
			}
			_, err := opstest.Run(t, opstest.Node{Op: c.op, Opset: c.opset, Attrs: c.attrs, Outputs: c.outs}, ins...)
			if err == nil {
				ok++
			}
			if err != nil && !errors.Is(err, ops.ErrInput) && !errors.Is(err, ops.ErrUnsupported) {
				t.Errorf("%s on %v: an error that is not an input error: %v", c.op, shapes(ins), err)
			}
		}
		t.Logf("%s: %d of 150 random runs gave a value", c.op, ok)
	}
}

// TestCancelledRunsStop: a long run under a cancelled request stops with
// the request's error.
func TestCancelledRunsStop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := ops.NewContext(ctx, gemm.Default(), false)
	x := opstest.Seq(512, 512)
	for _, n := range []struct {
		node opstest.Node
		ins  []*tensor.Tensor
	}{
		{opstest.Node{Op: "CumSum", Opset: 14}, []*tensor.Tensor{x, tensor.Scalar(int64(1))}},
		{opstest.Node{Op: "Hardmax", Opset: 13}, []*tensor.Tensor{x}},
		{opstest.Node{Op: "Trilu", Opset: 14}, []*tensor.Tensor{x}},
		{opstest.Node{Op: "TopK", Opset: 11, Outputs: 2}, []*tensor.Tensor{x, opstest.I64s(3)}},
		{opstest.Node{Op: "Gather", Opset: 13}, []*tensor.Tensor{x, tensor.From([]int{512}, make([]int64, 512))}},
	} {
		op, _, err := opstest.Compile(n.node, len(n.ins))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := op.Run(c, n.ins); !errors.Is(err, context.Canceled) {
			t.Errorf("%s under a cancelled request: %v, want context.Canceled", n.node.Op, err)
		}
	}
}
