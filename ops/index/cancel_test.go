package index

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

// looksThenEnds is a request that is live for its first n looks at Err
// and cancelled from then on: it tells a loop that looks within its long
// stretches from one that looks only between them.
type looksThenEnds struct {
	context.Context
	n int
}

func (l *looksThenEnds) Err() error {
	if l.n--; l.n < 0 {
		return context.Canceled
	}
	return nil
}

// TestEveryOperatorStops: every operator of the package, on inputs just
// above ops.TickEvery elements, stops with the request's error once the
// request has ended, and answers under a live request.
func TestEveryOperatorStops(t *testing.T) {
	n := ops.TickEvery + 1
	x := opstest.Seq(2, n)
	row := opstest.Seq(n)
	zeros := tensor.From([]int{n}, make([]int64, n))
	cond := tensor.From([]int{n}, make([]bool, n))
	for i := range cond.Data.([]bool) {
		cond.Data.([]bool)[i] = i%3 == 0
	}
	ind := tensor.From([]int{2, n}, make([]int64, 2*n))
	for _, c := range []struct {
		op    string
		opset int64
		outs  int
		attrs []*onnxpb.Attribute
		in    []*tensor.Tensor
	}{
		{"Gather", 13, 1, nil, []*tensor.Tensor{row, zeros}},
		{"Gather", 13, 1, nil, []*tensor.Tensor{x, opstest.I64s(1, 0)}},
		{"GatherElements", 13, 1, nil, []*tensor.Tensor{x, ind}},
		{"GatherND", 13, 1, nil, []*tensor.Tensor{x, tensor.From([]int{2, 1}, []int64{1, 0})}},
		{"ScatterElements", 18, 1, nil, []*tensor.Tensor{x, ind, x}},
		{"ScatterElements", 18, 1, []*onnxpb.Attribute{opstest.AttrString("reduction", "add")}, []*tensor.Tensor{x, ind, x}},
		{"ScatterND", 18, 1, nil, []*tensor.Tensor{x, tensor.From([]int{1, 1}, []int64{1}), opstest.Seq(1, n)}},
		{"TensorScatter", 24, 1, nil, []*tensor.Tensor{opstest.Seq(1, 2, n), opstest.Seq(1, 1, n)}},
		{"Compress", 11, 1, nil, []*tensor.Tensor{row, cond}},
		{"NonZero", 13, 1, nil, []*tensor.Tensor{cond}},
		{"OneHot", 11, 1, nil, []*tensor.Tensor{zeros, tensor.Scalar(int64(2)), opstest.F32s([]int{2}, 0, 1)}},
		{"TopK", 11, 2, nil, []*tensor.Tensor{row, opstest.I64s(3)}},
		{"Unique", 11, 4, nil, []*tensor.Tensor{row}},
		{"Unique", 11, 4, []*onnxpb.Attribute{opstest.AttrInt("sorted", 0)}, []*tensor.Tensor{row}},
		{"Trilu", 14, 1, nil, []*tensor.Tensor{x}},
		{"EyeLike", 22, 1, nil, []*tensor.Tensor{tensor.From([]int{n, 1}, make([]float32, n))}},
		{"Hardmax", 13, 1, nil, []*tensor.Tensor{row}},
		{"CumSum", 14, 1, nil, []*tensor.Tensor{row, tensor.Scalar(int64(0))}},
		{"ReverseSequence", 10, 1, nil, []*tensor.Tensor{tensor.From([]int{2, 1, n}, make([]float32, 2*n)), opstest.I64s(2)}},
	} {
		op, _, err := opstest.Compile(opstest.Node{Op: c.op, Opset: c.opset, Attrs: c.attrs, Outputs: c.outs}, len(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.op, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := op.Run(ops.NewContext(ctx, nil, false), c.in); !errors.Is(err, context.Canceled) {
			t.Errorf("%s under an ended request: %v, want the context's error", c.op, err)
		}
		if _, err := op.Run(opstest.Background(), c.in); err != nil {
			t.Errorf("%s: %v", c.op, err)
		}
	}
}

// TestLongStretchesStop: a copy of one long run, a sort of one long line
// and Trilu of one long row (its copy, its fill) stop with the request's
// error when the request ends while they go on.
func TestLongStretchesStop(t *testing.T) {
	n := 8 * ops.TickEvery
	endsAfter := func(looks int) *ops.Context {
		return ops.NewContext(&looksThenEnds{Context: context.Background(), n: looks}, nil, false)
	}
	mv := tensorops.MoverOf(tensor.Float32)
	src, dst := make([]float32, n), make([]float32, n)
	if err := runs(endsAfter(1), mv, dst, 0, src, 0, []int{0}, n); !errors.Is(err, context.Canceled) {
		t.Errorf("one run of %d: %v, want the context's error", n, err)
	}
	if err := put(endsAfter(1), mv, dst, 0, []int{0}, src, 0, n); !errors.Is(err, context.Canceled) {
		t.Errorf("one put of %d: %v, want the context's error", n, err)
	}
	line := make([]int, n)
	for i := range line {
		line[i] = n - i
	}
	if err := sortStable(endsAfter(1), line, 1, func(a, b int) int { return a - b }); !errors.Is(err, context.Canceled) {
		t.Errorf("a sort of %d: %v, want the context's error", n, err)
	}
	op, _, err := opstest.Compile(opstest.Node{Op: "Trilu", Opset: 14, Attrs: []*onnxpb.Attribute{opstest.AttrInt("upper", 0)}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := op.Run(endsAfter(1), []*tensor.Tensor{opstest.Seq(1, n)}); !errors.Is(err, context.Canceled) {
		t.Errorf("Trilu of one row of %d: %v, want the context's error", n, err)
	}
}

// TestMovesInPieces: the moves give what the Mover's own do, for short
// runs grouped, for runs longer than ops.TickEvery, and a sort under a
// live request what slices.SortStableFunc gives.
func TestMovesInPieces(t *testing.T) {
	mv := tensorops.MoverOf(tensor.Int32)
	n := 3*ops.TickEvery + 5
	src := make([]int32, 4*n)
	for i := range src {
		src[i] = int32(i)
	}
	for _, run := range []int{1, 7, ops.TickEvery + 3} {
		var offs []int
		for o := 0; o+run <= len(src) && len(offs)*run < 2*n; o += 2*run + 1 {
			offs = append(offs, o)
		}
		got, want := make([]int32, len(offs)*run), make([]int32, len(offs)*run)
		if err := runs(opstest.Background(), mv, got, 0, src, 0, offs, run); err != nil {
			t.Fatal(err)
		}
		mv.Runs(want, 0, src, 0, offs, run)
		if !slices.Equal(got, want) {
			t.Errorf("runs of %d differ", run)
		}
		gp, wp := make([]int32, len(src)), make([]int32, len(src))
		if err := put(opstest.Background(), mv, gp, 0, offs, got, 0, run); err != nil {
			t.Fatal(err)
		}
		mv.Put(wp, 0, offs, want, 0, run)
		if !slices.Equal(gp, wp) {
			t.Errorf("puts of %d differ", run)
		}
	}
	type kv struct{ k, v int }
	s := make([]kv, n)
	for i := range s {
		s[i] = kv{(i * 7919) % 101, i}
	}
	want := slices.Clone(s)
	byKey := func(a, b kv) int { return a.k - b.k }
	slices.SortStableFunc(want, byKey)
	if err := sortStable(opstest.Background(), s, 1, byKey); err != nil || !slices.Equal(s, want) {
		t.Errorf("sortStable: %v, or the order differs", err)
	}
}
