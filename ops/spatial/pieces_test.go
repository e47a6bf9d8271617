package spatial

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// looksThenEnds is a request that is live for its first n looks at Err
// and cancelled from then on: it tells a walk that stops within its long
// loops from one that looks only between them.
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

func endsAfter(looks int) *ops.Context {
	return ops.NewContext(&looksThenEnds{Context: context.Background(), n: looks}, nil, false)
}

// TestLongRowsInPieces: gathers whose rows are longer than ops.TickEvery
// (built in pieces) match the element-wise gather on every path: copied
// runs with fill (a pad), per-element reads, reads with fill, and
// repeated rows.
func TestLongRowsInPieces(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	w := 2*ops.TickEvery + 37
	in := []int{3, w - 11}
	xs := seq(in...).Data.([]float32)
	pad := make([]int, w)
	perElem, perElemFill := make([]int, w), make([]int, w)
	for o := range pad {
		pad[o] = o - 5
		if pad[o] >= in[1] {
			pad[o] = -1
		}
		perElem[o] = r.IntN(in[1])
		perElemFill[o] = perElem[o]
		if r.IntN(7) == 0 {
			perElemFill[o] = -1
		}
	}
	for name, last := range map[string][]int{"runs": pad, "elements": perElem, "elements with fill": perElemFill} {
		for _, rows := range [][]int{{0, 1, 2}, {0, 0, 2, -1, 1}} { // the second repeats a row and fills one
			src := [][]int{rows, last}
			out := []int{len(rows), w}
			got, err := gatherAxes(opstest.Background(), xs, in, out, len(rows)*w, src, float32(-7))
			if err != nil {
				t.Fatal(err)
			}
			if want := naiveGather(xs, in, out, src, float32(-7)); !slices.Equal(got, want) {
				t.Errorf("%s, rows %v: the pieces differ from the element-wise gather", name, rows)
			}
		}
	}
}

// TestLongLoopsStopWithinThem: a Pad of one row and a Resize of one
// output row, each many times ops.TickEvery long, stop with the request's
// error when the request ends while the row is built.
func TestLongLoopsStopWithinThem(t *testing.T) {
	n := 8 * ops.TickEvery
	row := tensor.From([]int{1, n}, make([]float32, n))
	if _, err := gather(endsAfter(1), row, []int{1, n + 2}, [][]int{{0}, append(append([]int{-1}, seqInts(n)...), -1)}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Pad of one long row: %v, want the context's error", err)
	}
	cols := tensor.From([]int{2, n}, make([]float32, 2*n))
	op, _, err := opstest.Compile(opstest.Node{Op: "Resize", Opset: 19, Attrs: []*onnxpb.Attribute{opstest.AttrString("mode", "linear")}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	// halving the outer axis: one output row of two taps
	if _, err := op.Run(endsAfter(1), ins(cols, nil, opstest.F32s([]int{2}, 0.5, 1))); !errors.Is(err, context.Canceled) {
		t.Errorf("Resize of a long row: %v, want the context's error", err)
	}
}

func seqInts(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// TestResizeLongRowsInPieces: resizing the outer axis of rows longer
// than ops.TickEvery (done in pieces) gives, column by column, what the
// same resize gives each column alone.
func TestResizeLongRowsInPieces(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	n := ops.TickEvery + 123
	x := make([]float32, 4*n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	scales := opstest.F32s([]int{2}, 2.5, 1)
	for _, mode := range []string{"linear", "cubic"} {
		attrs := []*onnxpb.Attribute{opstest.AttrString("mode", mode)}
		y, err := run(t, 19, "Resize", ins(tensor.From([]int{4, n}, x), nil, scales), attrs...)
		if err != nil {
			t.Fatal(err)
		}
		yd := y.Data.([]float32)
		for _, j := range []int{0, 1, ops.TickEvery - 1, ops.TickEvery, n - 1} {
			col := []float32{x[j], x[n+j], x[2*n+j], x[3*n+j]}
			c, err := run(t, 19, "Resize", ins(tensor.From([]int{4, 1}, col), nil, scales), attrs...)
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range c.Data.([]float32) {
				if got := yd[i*n+j]; got != want {
					t.Fatalf("%s: y[%d,%d] = %v, want %v", mode, i, j, got, want)
				}
			}
		}
	}
}
