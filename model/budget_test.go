package model_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/tensor"
)

// capBudget is a Budget of limit bytes that records its peak.
type capBudget struct {
	mu                sync.Mutex
	limit, used, peak int64
	grows             int
}

var errOverBudget = errors.New("over the test budget")

func (b *capBudget) Grow(n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return errOverBudget
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	b.grows++
	return nil
}

func (b *capBudget) Shrink(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.used {
		panic(fmt.Sprintf("shrink %d of %d held", n, b.used))
	}
	b.used -= n
}

// TestBudgetRefusesTheMaskBeforeAllocating: ids of 46,340 tokens ask the
// attention-mask model for 8 GiB; the node asks its budget first and the
// run fails naming the node and the size, having held nothing.
func TestBudgetRefusesTheMaskBeforeAllocating(t *testing.T) {
	m, err := model.Load(onnxbuild.AttentionMask().Bytes())
	if err != nil {
		t.Fatal(err)
	}
	const n = 46340
	b := &capBudget{limit: 64 << 20}
	ids := tensor.From([]int{1, n}, make([]int64, n))
	_, err = m.Run(model.WithBudget(context.Background(), b), map[string]*tensor.Tensor{"ids": ids}, nil)
	var me *model.MemoryError
	var ne *model.NodeError
	if !errors.As(err, &me) || !errors.As(err, &ne) || !errors.Is(err, errOverBudget) {
		t.Fatalf("err = %v, want a NodeError wrapping a MemoryError wrapping the budget's refusal", err)
	}
	if want := int64(n) * n * 4; me.Bytes != want || ne.Op != "ConstantOfShape" {
		t.Errorf("the error names %s asking %d bytes, want ConstantOfShape asking %d: %v", ne.Op, me.Bytes, want, err)
	}
	if b.used != 0 || b.peak > b.limit {
		t.Errorf("budget holds %d after the run, peaked at %d of %d", b.used, b.peak, b.limit)
	}

	// A short request fits, and answers the same as without a budget.
	small := tensor.From([]int{1, 5}, make([]int64, 5))
	got, err := m.Run(model.WithBudget(context.Background(), b), map[string]*tensor.Tensor{"ids": small}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if y := got["mask"]; y.Len() != 25 || y.Float64s()[24] != 1 {
		t.Errorf("mask = %v %v", y.Shape, y.Data)
	}
	if b.used != 0 || b.peak < 25*4 {
		t.Errorf("budget holds %d after the run, peaked at %d (the mask is 100 bytes)", b.used, b.peak)
	}
}

// TestBudgetFollowsLiveValues: a chain of element-wise nodes over a 1 MiB
// tensor holds at most a few of its values at once (each is given back
// once no later node reads it), gives everything back at the end, and
// answers exactly what the unbudgeted run answers.
func TestBudgetFollowsLiveValues(t *testing.T) {
	const n, links = 1 << 18, 12
	g := onnxbuild.Graph{
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, n)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, n)},
		Inits:   map[string]*tensor.Tensor{"half": tensor.Scalar(float32(0.5))},
	}
	prev := "x"
	for i := range links {
		out := fmt.Sprintf("v%d", i)
		if i == links-1 {
			out = "y"
		}
		op := []string{"Add", "Mul", "Sub"}[i%3]
		g.Nodes = append(g.Nodes, onnxbuild.Node{Op: op, Inputs: []string{prev, "half"}, Outputs: []string{out}})
		prev = out
	}
	m, err := model.Load(g.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(i%97) - 40
	}
	in := map[string]*tensor.Tensor{"x": tensor.From([]int{n}, xs)}
	want, err := m.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &capBudget{limit: 64 << 20}
	got, err := m.Run(model.WithBudget(context.Background(), b), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !tensorsEqual(got["y"], want["y"]) {
		t.Error("the budgeted run answers differently")
	}
	const size = n * 4
	if b.used != 0 || b.peak < size || b.peak > 3*size {
		t.Errorf("budget holds %d after the run, peaked at %d: want between one and three values of %d bytes", b.used, b.peak, size)
	}

	// Under a budget of two values the chain still runs; under less than
	// one it fails at the first node, giving back what it held.
	for _, c := range []struct {
		limit int64
		ok    bool
	}{{2 * size, true}, {size - 1, false}} {
		b := &capBudget{limit: c.limit}
		_, err := m.Run(model.WithBudget(context.Background(), b), in, nil)
		if (err == nil) != c.ok || b.used != 0 {
			t.Errorf("limit %d: err = %v, budget holds %d after", c.limit, err, b.used)
		}
	}
}

func tensorsEqual(a, b *tensor.Tensor) bool {
	if a == nil || b == nil || fmt.Sprint(a.Shape) != fmt.Sprint(b.Shape) {
		return false
	}
	return fmt.Sprint(a.Data) == fmt.Sprint(b.Data)
}
