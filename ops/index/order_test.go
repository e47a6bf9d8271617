package index

import (
	"fmt"
	"math"
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

func TestTopK(t *testing.T) {
	x := tensor.From([]int{2, 4}, []float32{3, 1, 3, float32(math.NaN()), 0, 2, 2, -1})
	outs, err := runOuts(t, 11, "TopK", nil, []*tensor.Tensor{x, i64s(3)}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(outs[0].Data) != "[NaN 3 3 2 2 0]" {
		t.Errorf("TopK values %v", outs[0].Data)
	}
	check(t, "TopK indices (ties: lower index first)", outs[1], []int{2, 3}, []int64{3, 0, 2, 1, 2, 0})
	outs, err = runOuts(t, 11, "TopK", []*onnxpb.Attribute{intAttr("largest", 0), intAttr("axis", 0)}, []*tensor.Tensor{x, i64s(1)}, 2)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "TopK smallest", outs[1], []int{1, 4}, []int64{1, 0, 1, 1})
	// uint64 beyond float64 precision orders exactly
	u := tensor.From([]int{3}, []uint64{1<<63 + 1, 1<<63 + 3, 1<<63 + 2})
	outs, err = runOuts(t, 11, "TopK", nil, []*tensor.Tensor{u, i64s(2)}, 2)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "TopK uint64", outs[1], []int{2}, []int64{1, 2})
	// opset 1–9: k as an attribute
	outs, err = runOuts(t, 9, "TopK", []*onnxpb.Attribute{intAttr("k", 1)}, []*tensor.Tensor{x}, 2)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "TopK-1", outs[1], []int{2, 1}, []int64{3, 1})
	if _, err := runOuts(t, 9, "TopK", nil, []*tensor.Tensor{x}, 2); err == nil {
		t.Error("TopK-1 without k compiled")
	}
	if _, err := runOuts(t, 11, "TopK", []*onnxpb.Attribute{intAttr("k", 1)}, []*tensor.Tensor{x, i64s(1)}, 2); err == nil {
		t.Error("TopK-11 with a k attribute compiled")
	}
	wantInputError(t, 11, "TopK", nil, []*tensor.Tensor{x, i64s(5)}, 2, "K 5 is out of range")
	wantInputError(t, 11, "TopK", nil, []*tensor.Tensor{x, i64s(-1)}, 2, "K -1 is out of range")
	wantInputError(t, 11, "TopK", nil, []*tensor.Tensor{x, i64s(1, 2)}, 2, "one value")
}

func TestUnique(t *testing.T) {
	s := tensor.From([]int{5}, []string{"b", "a", "b", "c", "a"})
	outs, err := runOuts(t, 11, "Unique", nil, []*tensor.Tensor{s}, 4)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "Unique strings", outs[0], []int{3}, []string{"a", "b", "c"})
	check(t, "first indices", outs[1], []int{3}, []int64{1, 0, 3})
	check(t, "inverse", outs[2], []int{5}, []int64{1, 0, 1, 2, 0})
	check(t, "counts", outs[3], []int{3}, []int64{2, 2, 1})
	outs, err = runOuts(t, 11, "Unique", []*onnxpb.Attribute{intAttr("sorted", 0), intAttr("axis", 1)}, []*tensor.Tensor{tensor.From([]int{2, 3}, []int32{2, 1, 2, 5, 0, 5})}, 4)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "Unique columns in order", outs[0], []int{2, 2}, []int32{2, 1, 5, 0})
	check(t, "inverse", outs[2], []int{3}, []int64{0, 1, 0})
	outs, err = runOuts(t, 11, "Unique", nil, []*tensor.Tensor{tensor.From([]int{0}, []float32{})}, 4)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "Unique of nothing", outs[3], []int{0}, []int64{})
}
