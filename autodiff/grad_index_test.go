//go:build autodiff

package autodiff

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

func i64(shape []int, v ...int64) *tensor.Tensor { return tensor.From(shape, v) }

func indexGradCases() []gradCase {
	return []gradCase{
		{name: "Gather rows (repeated and negative ids)", g: onnxbuild.Graph{
			Inputs: []onnxbuild.IO{v("x", 5, 3), v("w", 2, 3, 3)}, Outputs: []onnxbuild.IO{v("y", 2, 3, 3)},
			Nodes: []onnxbuild.Node{
				{Op: "Gather", Inputs: []string{"x", "ids"}, Outputs: []string{"e"}},
				{Op: "Mul", Inputs: []string{"e", "w"}, Outputs: []string{"y"}},
			},
			Inits: map[string]*tensor.Tensor{"ids": i64([]int{2, 3}, 4, 1, 4, -1, 0, 2)}}},
		{name: "Gather axis 1", g: onnxbuild.Graph{
			Inputs: []onnxbuild.IO{v("x", 2, 4, 3)}, Outputs: []onnxbuild.IO{v("y", 2, 2, 3)},
			Nodes: []onnxbuild.Node{node("Gather", []string{"x", "ids"}, onnxbuild.IntAttr("axis", 1))},
			Inits: map[string]*tensor.Tensor{"ids": i64([]int{2}, 3, -1)}}},
		{name: "Slice with negative steps", g: onnxbuild.Graph{
			Inputs: []onnxbuild.IO{v("x", 4, 5)}, Outputs: []onnxbuild.IO{v("y", 2, 2)},
			Nodes: []onnxbuild.Node{node("Slice", []string{"x", "starts", "ends", "axes", "steps"})},
			Inits: map[string]*tensor.Tensor{"starts": i64([]int{2}, -1, 1), "ends": i64([]int{2}, 0, 100), "axes": i64([]int{2}, 1, 0), "steps": i64([]int{2}, -3, 2)}}},
		{name: "Slice opset 9", g: withOpset(one("Slice", []onnxbuild.IO{v("x", 3, 4)}, v("", 2, 2),
			ints("starts", 1, 1), ints("ends", 3, 3)), 9)},
		{name: "Split num_outputs, first output unused", g: withOpset(onnxbuild.Graph{
			Inputs: []onnxbuild.IO{v("x", 2, 7)}, Outputs: []onnxbuild.IO{v("y", 2, 4)},
			Nodes: []onnxbuild.Node{
				{Op: "Split", Inputs: []string{"x"}, Outputs: []string{"s0", "s1", "s2"},
					Attrs: []*onnxpb.Attribute{onnxbuild.IntAttr("axis", 1), onnxbuild.IntAttr("num_outputs", 3)}},
				{Op: "Tanh", Inputs: []string{"s1"}, Outputs: []string{"t1"}},
				{Op: "Concat", Inputs: []string{"s2", "t1"}, Outputs: []string{"y"}, Attrs: []*onnxpb.Attribute{onnxbuild.IntAttr("axis", 1)}},
			}}, 18)},
		{name: "Split input sizes", g: onnxbuild.Graph{
			Inputs: []onnxbuild.IO{v("x", 4, 3)}, Outputs: []onnxbuild.IO{v("y", 2, 3)},
			Nodes: []onnxbuild.Node{
				{Op: "Split", Inputs: []string{"x", "split"}, Outputs: []string{"a", "b"}},
				{Op: "Mul", Inputs: []string{"a", "b"}, Outputs: []string{"y"}},
			},
			Inits: map[string]*tensor.Tensor{"split": i64([]int{2}, 2, 2)}}},
		{name: "Expand", g: onnxbuild.Graph{
			Inputs: []onnxbuild.IO{v("x", 3, 1)}, Outputs: []onnxbuild.IO{v("y", 2, 3, 4)},
			Nodes: []onnxbuild.Node{node("Expand", []string{"x", "shape"})},
			Inits: map[string]*tensor.Tensor{"shape": i64([]int{3}, 2, 1, 4)}}},
		{name: "Tile", g: onnxbuild.Graph{
			Inputs: []onnxbuild.IO{v("x", 2, 3)}, Outputs: []onnxbuild.IO{v("y", 4, 6)},
			Nodes: []onnxbuild.Node{node("Tile", []string{"x", "reps"})},
			Inits: map[string]*tensor.Tensor{"reps": i64([]int{2}, 2, 2)}}},
	}
}

func TestIndexGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 21))
	cases := indexGradCases()
	if len(model.Descriptors("", "Where")) > 0 {
		cases = append(cases, gradCase{name: "Where broadcast", g: onnxbuild.Graph{
			Inputs: []onnxbuild.IO{v("a", 2, 3), v("b", 3)}, Outputs: []onnxbuild.IO{v("y", 2, 3)},
			Nodes: []onnxbuild.Node{node("Where", []string{"c", "a", "b"})},
			Inits: map[string]*tensor.Tensor{"c": tensor.From([]int{2, 1}, []bool{true, false})}}})
	}
	checkGradients(t, r, cases)
}

// TestWhereBackward checks Where's gradient against central differences
// of a select with broadcasting, written out here, so that it is checked
// in builds whose model package has no Where operator yet.
func TestWhereBackward(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 22))
	cond := tensor.From([]int{2, 1, 3}, []bool{true, false, true, false, false, true})
	a, b := randT(r, []int{1, 4, 3}, false), randT(r, []int{4, 1}, false)
	out := []int{2, 4, 3}
	seed := randT(r, out, false).Data.([]float32)
	forward := func() float64 {
		c, av, bv := make([]bool, 24), make([]float32, 24), make([]float32, 24)
		walk(cond.Shape, out, func(o, i int) { c[o] = cond.Data.([]bool)[i] })
		walk(a.Shape, out, func(o, i int) { av[o] = a.Data.([]float32)[i] })
		walk(b.Shape, out, func(o, i int) { bv[o] = b.Data.([]float32)[i] })
		var s float64
		for o := range c {
			v := bv[o]
			if c[o] {
				v = av[o]
			}
			s += float64(v) * float64(seed[o])
		}
		return s
	}
	y := &tensor.Tensor{DType: tensor.Float32, Shape: out}
	dx, err := elemWhereBackward(model.Step{}, []*tensor.Tensor{cond, a, b}, y, seed, []bool{false, true, true})
	if err != nil {
		t.Fatal(err)
	}
	if dx[0] != nil {
		t.Error("the condition got a gradient")
	}
	for j, x := range []*tensor.Tensor{a, b} {
		d := x.Data.([]float32)
		for i := range d {
			orig := d[i]
			d[i] = orig + 0.01
			plus := forward()
			d[i] = orig - 0.01
			minus := forward()
			d[i] = orig
			fd := (plus - minus) / 0.02
			if got := float64(dx[j+1][i]); math.Abs(got-fd) > 1e-3*(1+math.Abs(fd)) {
				t.Fatalf("d/d input %d [%d] = %v, finite difference %v", j+1, i, got, fd)
			}
		}
	}
}

// TestGatherGradientOfATable: an embedding lookup, ids from the request
// and the table an initializer, sends each position's gradient to its
// row, summing rows looked up twice.
func TestGatherGradientOfATable(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 23))
	table := randT(r, []int{5, 3}, false)
	g := onnxbuild.Graph{
		Inputs:  []onnxbuild.IO{onnxbuild.V("ids", tensor.Int64, 2, 3)},
		Outputs: []onnxbuild.IO{v("y", 2, 3, 3)},
		Nodes:   []onnxbuild.Node{{Op: "Gather", Inputs: []string{"table", "ids"}, Outputs: []string{"y"}}},
		Inits:   map[string]*tensor.Tensor{"table": table},
	}
	m, err := model.Load(g.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	ids := []int64{4, 1, 4, -1, 0, 2}
	seed := randT(r, []int{2, 3, 3}, false)
	_, grads, err := Gradients(context.Background(), m, GradRequest{
		Inputs: map[string]*tensor.Tensor{"ids": i64([]int{2, 3}, ids...)}, OutputGrad: seed, Wrt: []string{"table"}})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float32, 15)
	for p, id := range ids {
		if id < 0 {
			id += 5
		}
		for k := 0; k < 3; k++ {
			want[int(id)*3+k] += seed.Data.([]float32)[p*3+k]
		}
	}
	got := grads[0].Tensor.Data.([]float32)
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-6 {
			t.Fatalf("dTable = %v, want %v", got, want)
		}
	}
}
