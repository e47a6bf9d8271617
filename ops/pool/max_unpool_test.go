package pool

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestMaxUnpoolInvertsMaxPool pools with indices and unpools: each maximum
// returns to its place, everything else is zero; output_shape pads the
// result; bad indices are input errors.
func TestMaxUnpoolInvertsMaxPool(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	x := opstest.Normal(r, 2, 3, 6, 5)
	pool := []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 2, 2), opstest.AttrInts("strides", 2, 2), opstest.AttrInts("pads", 0, 0, 0, 1)}
	out, err := run(t, 22, "MaxPool", x, 2, pool...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := compile(22, "MaxUnpool", 3, 1, pool...)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := compile(22, "MaxUnpool", 2, 1, pool...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := m2.Run(opstest.Background(), []*tensor.Tensor{out[0], out[1]})
	if err != nil {
		t.Fatal(err)
	}
	y := res[0]
	// Pooled 3×3; unpooled (3-1)·2 + 2 = 6 rows and (3-1)·2 - 1 + 2 = 5 columns.
	if !ops.EqualShape(y.Shape, []int{2, 3, 6, 5}) {
		t.Fatalf("unpooled shape %v", y.Shape)
	}
	want := make([]float32, x.Len())
	for i, idx := range out[1].Data.([]int64) {
		want[idx] = out[0].Data.([]float32)[i]
	}
	if !slices.Equal(y.Data.([]float32), want) {
		t.Errorf("unpooled %v, want %v", y.Data, want)
	}
	res, err = m.Run(opstest.Background(), []*tensor.Tensor{out[0], out[1], tensor.From([]int{4}, []int64{2, 3, 7, 6})})
	if err != nil {
		t.Fatal(err)
	}
	y = res[0]
	yd := y.Data.([]float32)
	for p := 0; p < 6; p++ {
		for h := 0; h < 7; h++ {
			for w := 0; w < 6; w++ {
				var v float32
				if h < 6 && w < 5 {
					v = want[(p*6+h)*5+w]
				}
				if yd[(p*7+h)*6+w] != v {
					t.Fatalf("output_shape: [%d,%d,%d] = %v, want %v", p, h, w, yd[(p*7+h)*6+w], v)
				}
			}
		}
	}
	bad := func(in []*tensor.Tensor, mm ops.Operator, want string) {
		t.Helper()
		if _, err := mm.Run(opstest.Background(), in); !errors.Is(err, ops.ErrInput) || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v, want an input error with %q", want, err, want)
		}
	}
	badIdx := out[1].Clone()
	badIdx.Data.([]int64)[3] = 2 * 3 * 6 * 5
	bad([]*tensor.Tensor{out[0], badIdx}, m2, "outside the unpooled shape")
	badIdx.Data.([]int64)[3] = -1
	bad([]*tensor.Tensor{out[0], badIdx}, m2, "outside the unpooled shape")
	bad([]*tensor.Tensor{out[0], tensor.From([]int{1}, []int64{0})}, m2, "indices have shape")
	bad([]*tensor.Tensor{out[0], out[1], tensor.From([]int{4}, []int64{2, 3, 5, 5})}, m, "cannot hold")
	bad([]*tensor.Tensor{out[0], out[1], tensor.From([]int{4}, []int64{2, 3, 1 << 40, 1 << 40})}, m, "cannot hold")
	bad([]*tensor.Tensor{out[0], out[1], tensor.From([]int{4}, []int64{2, 3, 1 << 20, 1 << 20})}, m, "too many elements")
}
