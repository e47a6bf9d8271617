package norm

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// layerNormDefinition is the spec's two-pass computation in float64 with
// scale and bias broadcast to X.
func layerNormDefinition(x []float64, shape []int, axis int, scale, bias []float64, eps float64, rms bool) []float64 {
	inner := 1
	for _, d := range shape[axis:] {
		inner *= d
	}
	y := make([]float64, len(x))
	for r := 0; r*inner < len(x); r++ {
		row := x[r*inner : (r+1)*inner]
		var m, v float64
		if !rms {
			for _, xv := range row {
				m += xv
			}
			m /= float64(inner)
		}
		for _, xv := range row {
			v += (xv - m) * (xv - m)
		}
		v /= float64(inner)
		for j, xv := range row {
			k := r*inner + j
			y[k] = (xv - m) / math.Sqrt(v+eps) * scale[k]
			if bias != nil {
				y[k] += bias[k]
			}
		}
	}
	return y
}

func randFloats(r *rand.Rand, n int, offset float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() + offset)
	}
	return x
}

// TestNormalizationsMatchDefinition runs LayerNormalization and
// RMSNormalization in FP32 and FP64, every axis, with scales of every
// broadcast form (over the normalized axes, with leading ones, varying
// over X's other axes), and inputs whose mean is far from 0 against their
// spread (the one-pass variance must not cancel).
func TestNormalizationsMatchDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	shape := []int{5, 7, 40} // 35 rows along the last axis: blocks of layerNormRows32 and the rest
	n := 5 * 7 * 40
	for _, offset := range []float64{0, 1000} {
		x32 := randFloats(r, n, offset)
		x := tensor.From(shape, x32)
		x64 := tensor.From(shape, f64s(x32))
		for axis := -3; axis < 3; axis++ {
			a := (axis + 3) % 3
			for _, pshape := range [][]int{shape[a:], append([]int{1}, shape[a:]...), shape} {
				if len(pshape) > len(shape) {
					continue
				}
				np := 1
				for _, d := range pshape {
					np *= d
				}
				sc, bs := randFloats(r, np, 1), randFloats(r, np, 0)
				scFull, _ := ops.BroadcastTo(f64s(sc), pshape, shape)
				bsFull, _ := ops.BroadcastTo(f64s(bs), pshape, shape)
				for _, rms := range []bool{false, true} {
					want := layerNormDefinition(f64s(x32), shape, a, scFull, bsFull, 1e-5, rms)
					if rms {
						want = layerNormDefinition(f64s(x32), shape, a, scFull, nil, 1e-5, true)
					}
					for _, in := range []*tensor.Tensor{x, x64} {
						var ins []*tensor.Tensor
						var s, b *tensor.Tensor
						if in.DType == tensor.Float32 {
							s, b = tensor.From(pshape, sc), tensor.From(pshape, bs)
						} else {
							s, b = tensor.From(pshape, f64s(sc)), tensor.From(pshape, f64s(bs))
						}
						var op ops.Operator
						var err error
						if rms {
							op, err = rmsNorm(t, int64(axis), 1e-5)
							ins = []*tensor.Tensor{in, s}
						} else {
							op, err = layerNorm(t, 3, 3, int64(axis), 1e-5, 1)
							ins = []*tensor.Tensor{in, s, b}
						}
						if err != nil {
							t.Fatal(err)
						}
						out, err := op.Run(opstest.Background(), ins)
						if err != nil {
							t.Fatalf("axis %d scale %v: %v", axis, pshape, err)
						}
						tol := 1e-4
						if offset != 0 && in.DType == tensor.Float32 {
							tol = 2e-3 // x itself holds only 1e-4 of its spread at 1000
						}
						for i, g := range out[0].Float64s() {
							if math.Abs(g-want[i]) > tol*(1+math.Abs(want[i])) {
								t.Fatalf("rms=%v %v axis %d scale %v offset %v: y[%d] = %v, want %v", rms, in.DType, axis, pshape, offset, i, g, want[i])
							}
						}
					}
				}
			}
		}
	}
}

// layerNorm and rmsNorm compile the two at their opsets with the given
// axis, epsilon and stash_type, LayerNormalization for ins inputs and
// outs outputs.
func layerNorm(t testing.TB, ins, outs int, axis int64, eps float32, stash int64) (ops.Operator, error) {
	t.Helper()
	return compile(17, "LayerNormalization", ins, outs, opstest.AttrInt("axis", axis), opstest.AttrFloat("epsilon", eps), opstest.AttrInt("stash_type", stash))
}

func rmsNorm(t testing.TB, axis int64, eps float32) (ops.Operator, error) {
	t.Helper()
	return compile(23, "RMSNormalization", 2, 1, opstest.AttrInt("axis", axis), opstest.AttrFloat("epsilon", eps), opstest.AttrInt("stash_type", 1))
}

// f64s returns v as float64.
func f64s(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func TestLayerNormStatsAndHalf(t *testing.T) {
	op, err := layerNorm(t, 2, 3, 1, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	x := tensor.From([]int{2, 2, 2}, tensor.Float32ToHalf[tensor.F16]([]float32{1, 2, 3, 4, 10, 10, 10, 14}))
	s := tensor.From([]int{1}, tensor.Float32ToHalf[tensor.F16]([]float32{2}))
	out, err := op.Run(opstest.Background(), []*tensor.Tensor{x, s})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].DType != tensor.Float16 || out[1].DType != tensor.Float32 || !ops.EqualShape(out[1].Shape, []int{2, 1, 1}) {
		t.Fatalf("types/shapes %v %v %v", out[0].DType, out[1].DType, out[1].Shape)
	}
	if m := out[1].Data.([]float32); m[0] != 2.5 || m[1] != 11 {
		t.Fatalf("means %v", m)
	}
	if is := out[2].Data.([]float32); math.Abs(float64(is[1])-1/math.Sqrt(3)) > 1e-6 {
		t.Fatalf("inverse std devs %v", is)
	}
	y := tensor.HalfToFloat32(out[0].Data.([]tensor.F16))
	if math.Abs(float64(y[0])+2*1.5/math.Sqrt(1.25)) > 1e-2 {
		t.Fatalf("y %v", y)
	}
	if _, err := layerNorm(t, 2, 1, -1, 1e-5, 11); !errors.Is(err, ops.ErrUnsupported) {
		t.Fatalf("stash_type 11: %v", err)
	}
}

func TestNormalizationBadInputs(t *testing.T) {
	ln, err := layerNorm(t, 3, 1, -1, 1e-5, 1)
	if err != nil {
		t.Fatal(err)
	}
	rms, err := rmsNorm(t, 2, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	x := tensor.From([]int{2, 3}, make([]float32, 6))
	for name, c := range map[string]struct {
		op ops.Operator
		in []*tensor.Tensor
	}{
		"scale too wide":    {ln, []*tensor.Tensor{x, tensor.From([]int{4}, make([]float32, 4)), nil}},
		"scale rank > X":    {ln, []*tensor.Tensor{x, tensor.From([]int{1, 1, 3}, make([]float32, 3)), nil}},
		"bias type":         {ln, []*tensor.Tensor{x, tensor.From([]int{3}, make([]float32, 3)), tensor.From([]int{3}, make([]float64, 3))}},
		"integer X":         {ln, []*tensor.Tensor{tensor.From([]int{3}, []int32{1, 2, 3}), tensor.From([]int{3}, []int32{1, 2, 3}), nil}},
		"scalar":            {ln, []*tensor.Tensor{tensor.Scalar(float32(1)), tensor.Scalar(float32(1)), nil}},
		"rms axis":          {rms, []*tensor.Tensor{x, tensor.From([]int{3}, make([]float32, 3))}},
		"rms integer scale": {rms, []*tensor.Tensor{tensor.From([]int{2, 2, 2}, make([]float32, 8)), tensor.From([]int{2}, []int64{1, 2})}},
	} {
		if _, err := c.op.Run(opstest.Background(), c.in); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
}

// BenchmarkLayerNorm normalizes 128×768 (BERT-base's hidden size over a
// 128-token sequence): the one-pass float32 rows, RMS normalization's
// rows, and the two-pass float64 definition.
func BenchmarkLayerNorm(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	x := tensor.From([]int{128, 768}, randFloats(r, 128*768, 0))
	s := tensor.From([]int{768}, randFloats(r, 768, 1))
	bias := tensor.From([]int{768}, randFloats(r, 768, 0))
	op, err := layerNorm(b, 3, 1, -1, 1e-5, 1)
	if err != nil {
		b.Fatal(err)
	}
	in := []*tensor.Tensor{x, s, bias}
	b.Run("rows", func(b *testing.B) {
		b.SetBytes(4 * 128 * 768)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := op.Run(opstest.Background(), in); err != nil {
				b.Fatal(err)
			}
		}
	})
	rms, err := rmsNorm(b, -1, 1e-5)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("rms-rows", func(b *testing.B) {
		b.SetBytes(4 * 128 * 768)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := rms.Run(opstest.Background(), in[:2]); err != nil {
				b.Fatal(err)
			}
		}
	})
	x64 := f64s(x.Data.([]float32))
	s64, b64 := f64s(s.Data.([]float32)), f64s(bias.Data.([]float32))
	sFull, _ := ops.BroadcastTo(s64, []int{768}, []int{128, 768})
	bFull, _ := ops.BroadcastTo(b64, []int{768}, []int{128, 768})
	b.Run("float64-two-pass", func(b *testing.B) {
		b.SetBytes(4 * 128 * 768)
		b.ReportAllocs()
		for b.Loop() {
			layerNormDefinition(x64, []int{128, 768}, 1, sFull, bFull, 1e-5, false)
		}
	})
}

// TestLayerNormRequiredInputsAbsent: a node naming no value for X is
// refused at load.
func TestLayerNormRequiredInputsAbsent(t *testing.T) {
	n := &ops.Node{Type: "LayerNormalization", Opset: 17, Inputs: []string{"", "in1"}, Outputs: []string{"out0"}}
	if _, err := buildLayerNorm(n, &LayerNormAttrs{StashType: 1}); err == nil {
		t.Fatal("LayerNormalization without X accepted")
	}
}
