package reduce

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// argRun runs op (ArgMax or ArgMin) at opset 13 on x.
func argRun(t *testing.T, op string, attrs []*onnxpb.Attribute, x *tensor.Tensor) (*tensor.Tensor, error) {
	t.Helper()
	out, err := opstest.Run(t, opstest.Node{Op: op, Opset: 13, Attrs: attrs}, x)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// argCheck runs op on x and checks the output's shape and indices.
func argCheck(t *testing.T, what, op string, attrs []*onnxpb.Attribute, x *tensor.Tensor, shape []int, want []int64) {
	t.Helper()
	y, err := argRun(t, op, attrs, x)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if y.DType != tensor.Int64 || !slices.Equal(y.Shape, shape) || !slices.Equal(y.Data.([]int64), want) {
		t.Fatalf("%s: %v%v %v, want INT64%v %v", what, y.DType, y.Shape, y.Data, shape, want)
	}
}

// argWantInputError checks that op fails on x with an input error
// mentioning want.
func argWantInputError(t *testing.T, op string, attrs []*onnxpb.Attribute, x *tensor.Tensor, want string) {
	t.Helper()
	if _, err := argRun(t, op, attrs, x); !errors.Is(err, ops.ErrInput) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error %v, want an input error mentioning %q", op, err, want)
	}
}

func TestArgMin(t *testing.T) {
	argCheck(t, "ArgMin int64", "ArgMin", []*onnxpb.Attribute{opstest.AttrInt("axis", 1), opstest.AttrInt("keepdims", 0)},
		tensor.From([]int{2, 3}, []int64{math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64 - 1, 5, 5, 6}), []int{2}, []int64{1, 0})
	argCheck(t, "ArgMin last", "ArgMin", []*onnxpb.Attribute{opstest.AttrInt("axis", 1), opstest.AttrInt("select_last_index", 1)},
		tensor.From([]int{2, 3}, []int64{1, 0, 0, 5, 5, 6}), []int{2, 1}, []int64{2, 1})
	argWantInputError(t, "ArgMin", nil, tensor.From([]int{0, 2}, []float32{}), "empty axis")
	argWantInputError(t, "ArgMin", nil, tensor.Scalar(float32(1)), "needs rank >= 1")
	argWantInputError(t, "ArgMin", []*onnxpb.Attribute{opstest.AttrInt("axis", 2)}, tensor.From([]int{2, 1}, []float32{1, 2}), "axis 2 is out of range")
	// a negative axis counts from the end; other empty axes give no lines
	argCheck(t, "ArgMax axis -1", "ArgMax", []*onnxpb.Attribute{opstest.AttrInt("axis", -1)}, tensor.From([]int{0, 3}, []float32{}), []int{0, 1}, []int64{})
}

// TestArgMaxArgMinExact checks that ArgMax and ArgMin compare in the
// input's own type: int64 2^53 and 2^53+1 (one float64 apart from
// neither) and uint64 values near 2^64 (all one float64) are told apart;
// a NaN wins for both, the first or with select_last_index the last, as
// in the ONNX reference (numpy's argmax and argmin); ties go to the first
// or the last; BOOL is refused by both.
func TestArgMaxArgMinExact(t *testing.T) {
	const p53 = int64(1) << 53
	last := []*onnxpb.Attribute{opstest.AttrInt("select_last_index", 1)}
	nan := float32(math.NaN())
	for _, c := range []struct {
		name     string
		x        *tensor.Tensor
		attrs    []*onnxpb.Attribute
		max, min int64
	}{
		{"int64 2^53, 2^53+1", tensor.From([]int{2}, []int64{p53, p53 + 1}), nil, 1, 0},
		{"int64 2^53+1, 2^53", tensor.From([]int{2}, []int64{p53 + 1, p53}), nil, 0, 1},
		{"int64 2^53, 2^53+1 last", tensor.From([]int{2}, []int64{p53, p53 + 1}), last, 1, 0},
		{"int64 extremes", tensor.From([]int{3}, []int64{math.MaxInt64 - 1, math.MinInt64, math.MaxInt64}), nil, 2, 1},
		{"uint64 2^64-2, 2^64-1", tensor.From([]int{2}, []uint64{math.MaxUint64 - 1, math.MaxUint64}), nil, 1, 0},
		{"uint64 2^64-1, 2^64-2", tensor.From([]int{2}, []uint64{math.MaxUint64, math.MaxUint64 - 1}), nil, 0, 1},
		{"uint64 near 2^64 last", tensor.From([]int{3}, []uint64{math.MaxUint64 - 1, math.MaxUint64, math.MaxUint64 - 2}), last, 1, 2},
		{"ties first", tensor.From([]int{4}, []int32{1, 5, 5, 1}), nil, 1, 0},
		{"ties last", tensor.From([]int{4}, []int32{1, 5, 5, 1}), last, 2, 3},
		{"zeros of both signs", tensor.From([]int{2}, []float64{math.Copysign(0, -1), 0}), nil, 0, 0},
		{"NaN first", tensor.From([]int{4}, []float32{1, nan, 3, nan}), nil, 1, 1},
		{"NaN last", tensor.From([]int{4}, []float32{1, nan, 3, nan}), last, 3, 3},
		{"NaN at 0", tensor.From([]int{3}, []float64{math.NaN(), 7, -7}), nil, 0, 0},
		{"float16", tensor.From([]int{3}, tensor.Float32ToHalf[tensor.F16]([]float32{0.5, -2, 2})), nil, 2, 1},
	} {
		for _, op := range []struct {
			name string
			want int64
		}{{"ArgMax", c.max}, {"ArgMin", c.min}} {
			argCheck(t, op.name+" "+c.name, op.name, c.attrs, c.x, []int{1}, []int64{op.want})
		}
	}
	// along an inner axis of a 2×3×2 tensor: lines of stride 2
	x := tensor.From([]int{2, 3, 2}, []int64{p53, 0, p53 + 1, 2, p53, 1, -p53, 5, -p53 - 1, 5, -p53, 4})
	argCheck(t, "ArgMax axis 1", "ArgMax", []*onnxpb.Attribute{opstest.AttrInt("axis", 1), opstest.AttrInt("keepdims", 0)}, x, []int{2, 2}, []int64{1, 1, 0, 0})
	argCheck(t, "ArgMin axis 1", "ArgMin", []*onnxpb.Attribute{opstest.AttrInt("axis", 1), opstest.AttrInt("keepdims", 0)}, x, []int{2, 2}, []int64{0, 0, 1, 2})
	for _, op := range []string{"ArgMax", "ArgMin"} {
		argWantInputError(t, op, nil, tensor.From([]int{2}, []bool{false, true}), "does not take BOOL")
		argWantInputError(t, op, nil, tensor.From([]int{0, 2}, []float32{}), "empty axis")
	}
}

// TestArgLongLines checks lines longer than the stretch between two looks
// at the deadline: the index found is the one a single pass finds.
func TestArgLongLines(t *testing.T) {
	n := 3*ops.TickEvery + 5
	for _, at := range []int{0, ops.TickEvery - 1, ops.TickEvery, ops.TickEvery + 1, 2 * ops.TickEvery, n - 1} {
		d := make([]int32, 2*n)
		d[at], d[n+at] = 7, -7
		x := tensor.From([]int{2, n}, d)
		other := int64(0) // the first 0 of the other row
		if at == 0 {
			other = 1
		}
		argCheck(t, fmt.Sprint("ArgMax at ", at), "ArgMax", []*onnxpb.Attribute{opstest.AttrInt("axis", 1), opstest.AttrInt("keepdims", 0)}, x, []int{2}, []int64{int64(at), other})
		argCheck(t, fmt.Sprint("ArgMin at ", at), "ArgMin", []*onnxpb.Attribute{opstest.AttrInt("axis", 1), opstest.AttrInt("keepdims", 0)}, x, []int{2}, []int64{other, int64(at)})
	}
}

// TestArgCancelled checks that ArgMax over a large input stops with the
// request's error once the request is cancelled, with long lines or many
// short ones.
func TestArgCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := ops.NewContext(ctx, nil, false)
	x := tensor.From([]int{4, 1 << 16}, make([]float32, 4<<16))
	for _, axis := range []int64{0, 1} {
		op, _, err := opstest.Compile(opstest.Node{Op: "ArgMax", Opset: 13, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", axis)}}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := op.Run(c, []*tensor.Tensor{x}); !errors.Is(err, context.Canceled) {
			t.Errorf("ArgMax axis %d cancelled: %v", axis, err)
		}
	}
	ones := tensor.From([]int{1 << 18, 1}, make([]float32, 1<<18))
	op, _, err := opstest.Compile(opstest.Node{Op: "ArgMin", Opset: 13, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", 1)}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := op.Run(c, []*tensor.Tensor{ones}); !errors.Is(err, context.Canceled) {
		t.Errorf("ArgMin of lines of one cancelled: %v", err)
	}
}
