package logic

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestWhere checks three-way broadcasting against the index walk, and
// that every element type passes through.
func TestWhere(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for trial := 0; trial < 200; trial++ {
		cs, xs := randShapes(r)
		_, ys := randShapes(r)
		if _, err := ops.BroadcastShapes(cs, xs, ys); err != nil {
			continue
		}
		n, _ := tensor.NumElements(cs)
		cond := make([]bool, n)
		for i := range cond {
			cond[i] = r.IntN(2) == 0
		}
		x, y := randF32(r, xs), randF32(r, ys)
		out, err := opstest.Run(t, opstest.Node{Op: "Where", Opset: 16}, tensor.From(cs, cond), x, y)
		if err != nil {
			t.Fatal(err)
		}
		shape, _ := ops.BroadcastShapes(cs, xs, ys)
		it := tensor.NewIter(shape, tensor.BroadcastStrides(cs, shape), tensor.BroadcastStrides(xs, shape), tensor.BroadcastStrides(ys, shape))
		want := make([]float32, 0, out[0].Len())
		for it.Next() {
			v := y.Data.([]float32)[it.Off(2)]
			if cond[it.Off(0)] {
				v = x.Data.([]float32)[it.Off(1)]
			}
			want = append(want, v)
		}
		if !slices.Equal(out[0].Shape, shape) || !slices.Equal(out[0].Data.([]float32), want) {
			t.Fatalf("Where on %v %v %v: got %v, want %v", cs, xs, ys, out[0].Data, want)
		}
	}
	c := tensor.From([]int{2}, []bool{true, false})
	for _, tc := range []struct {
		x, y *tensor.Tensor
		want any
	}{
		{tensor.From([]int{2}, []string{"a", "b"}), tensor.Scalar("z"), []string{"a", "z"}},
		{tensor.From([]int{2}, []bool{true, true}), tensor.Scalar(false), []bool{true, false}},
		{tensor.From([]int{2}, tensor.Float32ToHalf[tensor.BF16]([]float32{1, 2})), tensor.Scalar(tensor.BF16From(9)), tensor.Float32ToHalf[tensor.BF16]([]float32{1, 9})},
		{tensor.From([]int{2}, []uint16{1, 2}), tensor.Scalar(uint16(9)), []uint16{1, 9}},
	} {
		out, err := opstest.Run(t, opstest.Node{Op: "Where", Opset: 16}, c, tc.x, tc.y)
		if err != nil {
			t.Fatal(err)
		}
		if out[0].DType != tc.x.DType || fmt.Sprint(out[0].Data) != fmt.Sprint(tc.want) {
			t.Errorf("Where on %v = %v, want %v", tc.x.DType, out[0].Data, tc.want)
		}
	}
	for _, bad := range [][3]*tensor.Tensor{
		{tensor.Scalar(int32(1)), tensor.Scalar(float32(1)), tensor.Scalar(float32(2))},
		{c, tensor.Scalar(float32(1)), tensor.Scalar(float64(2))},
		{c, tensor.From([]int{3}, []float32{1, 2, 3}), tensor.Scalar(float32(2))},
	} {
		if _, err := opstest.Run(t, opstest.Node{Op: "Where", Opset: 16}, bad[0], bad[1], bad[2]); !errors.Is(err, ops.ErrInput) {
			t.Errorf("Where(%v, %v, %v): %v", bad[0].DType, bad[1].DType, bad[2].DType, err)
		}
	}
}
