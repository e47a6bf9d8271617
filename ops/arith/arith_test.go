package arith

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// run compiles op at opset with attrs and runs it on in.
func run(t testing.TB, op string, opset int64, attrs []*onnxpb.Attribute, in ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	t.Helper()
	return opstest.Run(t, opstest.Node{Op: op, Opset: opset, Attrs: attrs}, in...)
}

// TestDescriptors pins each operator's opset ranges and that it folds.
func TestDescriptors(t *testing.T) {
	ranges := map[string][][2]int64{
		"Add": {{7, 0}}, "Sub": {{7, 0}}, "Mul": {{7, 0}}, "Div": {{7, 0}},
		"Min": {{1, 7}, {8, 0}}, "Max": {{1, 7}, {8, 0}}, "Sum": {{1, 7}, {8, 0}}, "Mean": {{1, 7}, {8, 0}},
		"Pow": {{7, 0}}, "Mod": {{10, 0}}, "BitShift": {{11, 0}},
		"BitwiseAnd": {{18, 0}}, "BitwiseOr": {{18, 0}}, "BitwiseXor": {{18, 0}}, "BitwiseNot": {{18, 0}},
		"Abs": {{1, 0}}, "Neg": {{1, 0}}, "Sign": {{9, 0}}, "Sqrt": {{1, 0}}, "Exp": {{1, 0}}, "Log": {{1, 0}},
		"Reciprocal": {{1, 0}}, "Ceil": {{1, 0}}, "Floor": {{1, 0}}, "Round": {{11, 0}},
		"Sin": {{7, 0}}, "Cos": {{7, 0}}, "Tan": {{7, 0}}, "Asin": {{7, 0}}, "Acos": {{7, 0}}, "Atan": {{7, 0}},
		"Sinh": {{9, 0}}, "Cosh": {{9, 0}}, "Asinh": {{9, 0}}, "Acosh": {{9, 0}}, "Atanh": {{9, 0}}, "Erf": {{9, 0}},
	}
	for op, want := range ranges {
		ds := ops.Descriptors("", op)
		var got [][2]int64
		for _, d := range ds {
			if !d.Fold || d.Refused {
				t.Errorf("%v: Fold %v, Refused %v", d, d.Fold, d.Refused)
			}
			got = append(got, [2]int64{d.Since, d.Until})
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: opset ranges %v, want %v", op, got, want)
		}
	}
}

// randShapes returns two shapes that broadcast together: random ranks up
// to 4, dimensions 0 to 4, with 1s (and missing leading dimensions) where
// one side broadcasts.
func randShapes(r *rand.Rand) (a, b []int) {
	rank := r.IntN(5)
	out := make([]int, rank)
	for i := range out {
		out[i] = r.IntN(4) + 1
		if r.IntN(12) == 0 {
			out[i] = 0
		}
	}
	pick := func() []int {
		s := slices.Clone(out[r.IntN(rank+1):])
		for i := range s {
			if r.IntN(3) == 0 {
				s[i] = 1
			}
		}
		return s
	}
	return pick(), pick()
}

// naive computes f over the broadcast of a and b by walking every output
// index: the definition the operators must match.
func naive[T, R tensor.Elem](a, b []T, as, bs []int, f func(x, y T) R) ([]int, []R) {
	out, err := ops.BroadcastShape(as, bs)
	if err != nil {
		panic(err)
	}
	n, _ := tensor.NumElements(out)
	r := make([]R, n)
	it := tensor.NewIter(out, tensor.BroadcastStrides(as, out), tensor.BroadcastStrides(bs, out))
	for i := 0; it.Next(); i++ {
		r[i] = f(a[it.Off(0)], b[it.Off(1)])
	}
	return out, r
}

func randF32(r *rand.Rand, shape []int) *tensor.Tensor {
	n, _ := tensor.NumElements(shape)
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(r.NormFloat64() * 4)
	}
	return tensor.From(shape, d)
}

func randI32(r *rand.Rand, shape []int, nonzero bool) *tensor.Tensor {
	n, _ := tensor.NumElements(shape)
	d := make([]int32, n)
	for i := range d {
		d[i] = int32(r.IntN(41) - 20)
		if nonzero && d[i] == 0 {
			d[i] = 7
		}
	}
	return tensor.From(shape, d)
}

// convert returns src's values converted to D.
func convert[D, S tensor.Numeric](src []S) []D {
	out := make([]D, len(src))
	for i, v := range src {
		out[i] = D(v)
	}
	return out
}

// ulps is |got - want| in float32 ulps at want (0 when both are the same
// special value).
func ulps(got float32, want float64) float64 {
	w := float32(want)
	switch {
	case got == w, got != got && want != want:
		return 0
	case math.IsInf(float64(w), 0) || math.IsInf(float64(got), 0) || got != got || want != want:
		return math.Inf(1)
	}
	a := float32(math.Abs(float64(w)))
	ulp := float64(math.Nextafter32(a, float32(math.Inf(1))) - a)
	return math.Abs(float64(got)-want) / ulp
}
