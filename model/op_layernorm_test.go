package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model/onnxpb"
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
	shape := []int{2, 3, 40}
	n := 2 * 3 * 40
	for _, offset := range []float64{0, 1000} {
		x32 := randFloats(r, n, offset)
		x := tensor.From(shape, x32)
		x64 := tensor.From(shape, convert[float64](x32))
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
				scFull, _ := broadcastTo(convert[float64](sc), pshape, shape)
				bsFull, _ := broadcastTo(convert[float64](bs), pshape, shape)
				for _, rms := range []bool{false, true} {
					want := layerNormDefinition(convert[float64](x32), shape, a, scFull, bsFull, 1e-5, rms)
					if rms {
						want = layerNormDefinition(convert[float64](x32), shape, a, scFull, nil, 1e-5, true)
					}
					for _, in := range []*tensor.Tensor{x, x64} {
						var ins []*tensor.Tensor
						var s, b *tensor.Tensor
						if in.DType == tensor.Float32 {
							s, b = tensor.From(pshape, sc), tensor.From(pshape, bs)
						} else {
							s, b = tensor.From(pshape, convert[float64](sc)), tensor.From(pshape, convert[float64](bs))
						}
						var op opFunc
						var err error
						if rms {
							op, err = buildRMSNorm(testNode(2, 1), &RMSNormAttrs{Axis: int64(axis), Epsilon: 1e-5, StashType: 1})
							ins = []*tensor.Tensor{in, s}
						} else {
							op, err = buildLayerNorm(testNode(3, 3), &LayerNormAttrs{Axis: int64(axis), Epsilon: 1e-5, StashType: 1})
							ins = []*tensor.Tensor{in, s, b}
						}
						if err != nil {
							t.Fatal(err)
						}
						out, err := op(ins)
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

// testNode is a node with the given numbers of inputs and outputs, for
// calling builders directly.
func testNode(ins, outs int) *node {
	n := &node{pb: &onnxpb.Node{}, name: "test"}
	for i := 0; i < ins; i++ {
		n.pb.Inputs = append(n.pb.Inputs, fmt.Sprintf("in%d", i))
	}
	for i := 0; i < outs; i++ {
		n.pb.Outputs = append(n.pb.Outputs, fmt.Sprintf("out%d", i))
	}
	n.consts = make([]*tensor.Tensor, ins)
	n.unused = make([]bool, ins)
	n.opts = &Options{Exec: gemm.Default()}
	return n
}

func TestLayerNormStatsAndHalf(t *testing.T) {
	op, err := buildLayerNorm(testNode(2, 3), &LayerNormAttrs{Axis: 1, Epsilon: 0, StashType: 1})
	if err != nil {
		t.Fatal(err)
	}
	x := tensor.From([]int{2, 2, 2}, tensor.Float32ToHalf[tensor.F16]([]float32{1, 2, 3, 4, 10, 10, 10, 14}))
	s := tensor.From([]int{1}, tensor.Float32ToHalf[tensor.F16]([]float32{2}))
	out, err := op([]*tensor.Tensor{x, s})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].DType != tensor.Float16 || out[1].DType != tensor.Float32 || !equalShape(out[1].Shape, []int{2, 1, 1}) {
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
	if _, err := buildLayerNorm(testNode(2, 1), &LayerNormAttrs{Axis: -1, StashType: 11}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("stash_type 11: %v", err)
	}
}

func TestNormalizationBadInputs(t *testing.T) {
	ln, _ := buildLayerNorm(testNode(3, 1), &LayerNormAttrs{Axis: -1, Epsilon: 1e-5, StashType: 1})
	rms, _ := buildRMSNorm(testNode(2, 1), &RMSNormAttrs{Axis: 2, Epsilon: 1e-5, StashType: 1})
	x := tensor.From([]int{2, 3}, make([]float32, 6))
	for name, c := range map[string]struct {
		op opFunc
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
		if _, err := c.op(c.in); !errors.Is(err, ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
}

// BenchmarkLayerNorm normalizes 128×768 (BERT-base's hidden size over a
// 128-token sequence): the one-pass float32 rows against the two-pass
// float64 definition.
func BenchmarkLayerNorm(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	x := tensor.From([]int{128, 768}, randFloats(r, 128*768, 0))
	s := tensor.From([]int{768}, randFloats(r, 768, 1))
	bias := tensor.From([]int{768}, randFloats(r, 768, 0))
	op, err := buildLayerNorm(testNode(3, 1), &LayerNormAttrs{Axis: -1, Epsilon: 1e-5, StashType: 1})
	if err != nil {
		b.Fatal(err)
	}
	in := []*tensor.Tensor{x, s, bias}
	b.Run("rows", func(b *testing.B) {
		b.SetBytes(4 * 128 * 768)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := op(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	x64 := convert[float64](x.Data.([]float32))
	s64, b64 := convert[float64](s.Data.([]float32)), convert[float64](bias.Data.([]float32))
	sFull, _ := broadcastTo(s64, []int{768}, []int{128, 768})
	bFull, _ := broadcastTo(b64, []int{768}, []int{128, 768})
	b.Run("float64-two-pass", func(b *testing.B) {
		b.SetBytes(4 * 128 * 768)
		b.ReportAllocs()
		for b.Loop() {
			layerNormDefinition(x64, []int{128, 768}, 1, sFull, bFull, 1e-5, false)
		}
	})
}
