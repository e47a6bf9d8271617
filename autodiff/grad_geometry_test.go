//go:build autodiff

package autodiff

import (
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// geometryOne is a one-node graph over input x whose other inputs are
// constants (named in ins, "" for absent ones).
func geometryOne(opset int64, op string, x, y []int, ins []string, inits map[string]*tensor.Tensor, attrs ...*onnxpb.Attribute) onnxbuild.Graph {
	return onnxbuild.Graph{
		Opset: opset, Inputs: []onnxbuild.IO{v("x", x...)}, Outputs: []onnxbuild.IO{v("y", y...)},
		Nodes: []onnxbuild.Node{node(op, append([]string{"x"}, ins...), attrs...)},
		Inits: inits,
	}
}

func geometryCases() []gradCase {
	f := func(v ...float32) *tensor.Tensor { return tensor.From([]int{len(v)}, v) }
	i64 := func(v ...int64) *tensor.Tensor { return tensor.From([]int{len(v)}, v) }
	sc := func(v ...float32) map[string]*tensor.Tensor { return map[string]*tensor.Tensor{"s": f(v...)} }
	sz := func(v ...int64) map[string]*tensor.Tensor { return map[string]*tensor.Tensor{"sz": i64(v...)} }
	scales, sizes := []string{"", "s"}, []string{"", "", "sz"}
	pads := func(p ...int64) map[string]*tensor.Tensor { return map[string]*tensor.Tensor{"p": i64(p...)} }
	return []gradCase{
		{name: "Resize nearest 2x", g: geometryOne(19, "Resize", []int{1, 2, 3, 3}, []int{1, 2, 6, 6}, scales, sc(1, 1, 2, 2))},
		{name: "Resize nearest down, ceil", g: geometryOne(19, "Resize", []int{1, 1, 5, 4}, []int{1, 1, 3, 2}, sizes, sz(1, 1, 3, 2), str("nearest_mode", "ceil"))},
		{name: "Resize linear 2x", g: geometryOne(19, "Resize", []int{1, 2, 3, 4}, []int{1, 2, 6, 8}, scales, sc(1, 1, 2, 2), str("mode", "linear"))},
		{name: "Resize linear 0.6 align_corners", g: geometryOne(19, "Resize", []int{1, 1, 5, 5}, []int{1, 1, 3, 3}, scales, sc(1, 1, 0.6, 0.6), str("mode", "linear"), str("coordinate_transformation_mode", "align_corners"))},
		{name: "Resize linear antialias", g: geometryOne(19, "Resize", []int{1, 1, 6, 7}, []int{1, 1, 2, 3}, sizes, sz(1, 1, 2, 3), str("mode", "linear"), onnxbuild.IntAttr("antialias", 1))},
		{name: "Resize linear one axis", g: geometryOne(19, "Resize", []int{2, 5, 3}, []int{2, 8, 3}, sizes, sz(8), str("mode", "linear"), ints("axes", 1))},
		{name: "Resize cubic", g: geometryOne(19, "Resize", []int{1, 1, 4, 4}, []int{1, 1, 7, 5}, sizes, sz(1, 1, 7, 5), str("mode", "cubic"), str("coordinate_transformation_mode", "pytorch_half_pixel"))},
		{name: "Resize tf_crop_and_resize", g: geometryOne(19, "Resize", []int{1, 1, 4, 4}, []int{1, 1, 3, 3}, []string{"roi", "", "sz"},
			map[string]*tensor.Tensor{"roi": f(0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7), "sz": i64(1, 1, 3, 3)},
			str("mode", "linear"), str("coordinate_transformation_mode", "tf_crop_and_resize"), flt("extrapolation_value", 10))},
		{name: "Upsample 9 linear", g: geometryOne(9, "Upsample", []int{1, 1, 2, 3}, []int{1, 1, 4, 6}, []string{"s"}, sc(1, 1, 2, 2), str("mode", "linear"))},
		{name: "Pad constant", g: geometryOne(19, "Pad", []int{1, 2, 3, 3}, []int{1, 2, 5, 6}, []string{"p"}, pads(0, 0, 1, 2, 0, 0, 1, 1))},
		{name: "Pad reflect", g: geometryOne(19, "Pad", []int{2, 3, 4}, []int{2, 5, 9}, []string{"p"}, pads(0, 1, 3, 0, 1, 2), str("mode", "reflect"))},
		{name: "Pad edge", g: geometryOne(19, "Pad", []int{2, 3, 4}, []int{2, 6, 6}, []string{"p"}, pads(0, 2, 1, 0, 1, 1), str("mode", "edge"))},
		{name: "Pad wrap", g: geometryOne(19, "Pad", []int{3, 4}, []int{5, 9}, []string{"p"}, pads(1, 3, 1, 2), str("mode", "wrap"))},
		{name: "Pad crop", g: geometryOne(19, "Pad", []int{3, 4}, []int{2, 5}, []string{"p"}, pads(-1, 2, 0, -1), str("mode", "reflect"))},
		{name: "Pad opset 7", g: geometryOne(7, "Pad", []int{3, 4}, []int{4, 6}, nil, nil, str("mode", "edge"), ints("pads", 1, 1, 0, 1))},
	}
}

func TestGeometryGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 21))
	checkGradients(t, r, geometryCases())
}
