package model_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// rowsInput returns rows rows of n seeded values in [-1, 1).
func rowsInput(rows, n int, seed uint64) *tensor.Tensor {
	r := rand.New(rand.NewPCG(seed, 3))
	x := make([]float32, rows*n)
	for i := range x {
		x[i] = r.Float32()*2 - 1
	}
	return tensor.From([]int{rows, n}, x)
}

// sameFloats fails t unless got and want hold the same shapes and bits.
func sameFloats(t *testing.T, what string, got, want *tensor.Tensor) {
	t.Helper()
	if tensor.ShapeString(got.Shape) != tensor.ShapeString(want.Shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape, want.Shape)
	}
	g, w := got.Data.([]float32), want.Data.([]float32)
	for i := range w {
		if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
			t.Fatalf("%s: [%d] = %v, want %v", what, i, g[i], w[i])
		}
	}
}

// TestRowsSameAnswer runs batches of an MLP (float32 and int8) until the
// model has chosen whether they run whole or by rows (row by row on one
// thread, by parts on two: of 2 and 3 rows at once; on four, a batch of
// three rows in parts of one), alternating the two ways on the way, and
// checks every run's output bit for bit against the model that runs
// batches whole: the way never changes the answer. The choice is made on
// both ways' timings.
func TestRowsSameAnswer(t *testing.T) {
	data := onnxbuild.MLP([]int{48, 64, 10}, 7).Bytes()
	one := gemm.New(dispatch.Default(), 1)
	defer one.Close()
	two := gemm.New(dispatch.Default(), 2)
	defer two.Close()
	four := gemm.New(dispatch.Default(), 4) // more cores than rows: a part a row
	defer four.Close()
	for _, v := range []struct {
		q    bool
		exec *gemm.Engine
		rows int
	}{{false, one, 5}, {true, one, 5}, {false, two, 5}, {true, two, 5}, {true, four, 3}} {
		q := v.q
		opts := model.Options{Quantize: q, Scheme: quant.PerChannel, Exec: v.exec}
		m, err := model.LoadWith(data, opts)
		if err != nil {
			t.Fatal(err)
		}
		opts.WholeBatches = true
		ref, err := model.LoadWith(data, opts)
		if err != nil {
			t.Fatal(err)
		}
		in := map[string]*tensor.Tensor{"x": rowsInput(v.rows, 48, 1)}
		want, err := ref.Run(context.Background(), in, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ref.RowChoices() != nil {
			t.Fatalf("int8 %v: a model of whole batches has row choices", q)
		}
		decided := func() bool { c := m.RowChoices(); return len(c) == 1 && c[0].Decided }
		runs := 0
		for ; runs < 100 && !decided(); runs++ {
			got, err := m.Run(context.Background(), in, nil)
			if err != nil {
				t.Fatal(err)
			}
			sameFloats(t, "y", got["y"], want["y"])
		}
		c := m.RowChoices()
		if len(c) != 1 || !c[0].Decided || c[0].Elements != v.rows*48 || c[0].Batch <= 0 || c[0].ByRows <= 0 {
			t.Fatalf("int8 %v: after %d runs the choices are %+v", q, runs, c)
		}
		if got := c[0].Rows; got != (c[0].ByRows < c[0].Batch) {
			t.Fatalf("int8 %v: rows %v for %+v", q, got, c[0])
		}
		if c[0].Parts != (v.exec.Threads() > 1) {
			t.Fatalf("int8 %v, %d threads: parts %v", q, v.exec.Threads(), c[0].Parts)
		}
		// One row runs alone, as it is: no choice to make.
		one := map[string]*tensor.Tensor{"x": rowsInput(1, 48, 2)}
		if _, err := m.Run(context.Background(), one, nil); err != nil {
			t.Fatal(err)
		}
		if c := m.RowChoices(); len(c) != 1 {
			t.Fatalf("int8 %v: a batch of one row made a choice: %+v", q, c)
		}
	}
	// On two threads a model of 17 MB of float32 weights runs its
	// batches whole: each part would stream them all.
	big, err := model.LoadWith(onnxbuild.MLP([]int{2048, 2048, 10}, 7).Bytes(), model.Options{Exec: two})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := big.Run(context.Background(), map[string]*tensor.Tensor{"x": rowsInput(4, 2048, 1)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if c := big.RowChoices(); c != nil {
		t.Fatalf("two threads, big weights: row choices %+v", c)
	}
}

// TestRowsNotIndependent: a model that mixes rows (each row minus the
// batch's mean), whose output's first dimension is not the batch's (a
// transpose), or that refuses a row alone (a reshape to three rows)
// answers every batch as a whole batch does, and after its first batch
// never runs one row by row, nor by parts on two threads.
func TestRowsNotIndependent(t *testing.T) {
	mixing := onnxbuild.Graph{
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1, 4)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, -1, 4)},
		Nodes: []onnxbuild.Node{
			{Op: "ReduceMean", Inputs: []string{"x"}, Outputs: []string{"mean"}, Attrs: []*onnxpb.Attribute{onnxbuild.IntsAttr("axes", 0)}},
			{Op: "Sub", Inputs: []string{"x", "mean"}, Outputs: []string{"y"}},
		},
	}
	transposing := onnxbuild.Graph{
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1, 4)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, -1, -1)},
		Nodes: []onnxbuild.Node{
			{Op: "Transpose", Inputs: []string{"x"}, Outputs: []string{"y"}, Attrs: []*onnxpb.Attribute{onnxbuild.IntsAttr("perm", 1, 0)}},
		},
	}
	refusing := onnxbuild.Graph{ // a reshape to three rows: a row alone fails
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1, 4)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, -1, 4)},
		Nodes: []onnxbuild.Node{
			{Op: "Reshape", Inputs: []string{"x", "shape"}, Outputs: []string{"y"}},
		},
		Inits: map[string]*tensor.Tensor{"shape": tensor.From([]int{2}, []int64{3, 4})},
	}
	one := gemm.New(dispatch.Default(), 1)
	defer one.Close()
	two := gemm.New(dispatch.Default(), 2)
	defer two.Close()
	for name, g := range map[string]onnxbuild.Graph{"mixing": mixing, "transposing": transposing, "refusing": refusing} {
		for _, exec := range []*gemm.Engine{one, two} {
			notIndependent(t, name, g, exec)
		}
	}
}

// notIndependent runs g on exec against whole batches (see
// TestRowsNotIndependent).
func notIndependent(t *testing.T, name string, g onnxbuild.Graph, exec *gemm.Engine) {
	t.Helper()
	name = fmt.Sprintf("%s, %d threads", name, exec.Threads())
	m, err := model.LoadWith(g.Bytes(), model.Options{Exec: exec})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := model.LoadWith(g.Bytes(), model.Options{Exec: exec, WholeBatches: true})
	if err != nil {
		t.Fatal(err)
	}
	for run := range 20 {
		in := map[string]*tensor.Tensor{"x": rowsInput(3, 4, uint64(run))}
		if run == 0 && m.RowChoices() == nil {
			t.Fatalf("%s: no row tuner before the first batch", name)
		}
		want, err := ref.Run(context.Background(), in, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.Run(context.Background(), in, nil)
		if err != nil {
			t.Fatal(err)
		}
		sameFloats(t, name, got["y"], want["y"])
		if c := m.RowChoices(); c != nil {
			t.Fatalf("%s: run %d: row choices %+v", name, run, c)
		}
	}
}
