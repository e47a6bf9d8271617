package pool

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// poolSpecCase draws a random valid pooling spec and input shape.
func poolSpecCase(r *rand.Rand, rank int) (*spec, []int) {
	kernel, strides, dil, pads := make([]int64, rank), make([]int64, rank), make([]int64, rank), make([]int64, 2*rank)
	shape := []int{1 + r.IntN(2), 1 + r.IntN(3)}
	for i := 0; i < rank; i++ {
		kernel[i] = int64(1 + r.IntN(4))
		strides[i] = int64(1 + r.IntN(3))
		dil[i] = int64(1 + r.IntN(2))
		pads[i], pads[i+rank] = int64(r.IntN(3)), int64(r.IntN(3))
		ek := int((kernel[i]-1)*dil[i] + 1)
		shape = append(shape, ek+r.IntN(9))
	}
	autoPad := []string{"NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"}[r.IntN(5)]
	if autoPad != "NOTSET" {
		pads = nil
	}
	s, err := newSpec("test", autoPad, kernel, pads, strides, dil, r.IntN(2) == 0)
	if err != nil {
		panic(err)
	}
	return s, shape
}

// TestPool2DMatchesReference runs the 2-D float32 path (separable,
// unrolled interiors) and the N-d reference on the same random inputs and
// geometries, NaN and infinities among the values: max pooling must give
// the same bits (on every kernel table), average pooling the same values
// within float32 rounding of a window's sum.
func TestPool2DMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var tables []*ops.Context
	for _, tb := range dispatch.Available() {
		e := gemm.New(tb, 1)
		defer e.Close()
		tables = append(tables, ops.NewContext(context.Background(), e, false))
	}
	for iter := 0; iter < 500; iter++ {
		s, shape := poolSpecCase(r, 2)
		if iter%7 == 0 { // the shapes a CNN runs: 3×3 and 2×2 interiors
			k := int64(2 + r.IntN(2))
			s, _ = newSpec("test", "NOTSET", []int64{k, k}, []int64{1, 1, 1, 1}, []int64{2, 2}, nil, false)
			shape = []int{1, 3, 8 + r.IntN(9), 8 + r.IntN(9)}
		}
		g, err := s.geometry(shape)
		if err != nil {
			t.Fatalf("%+v %v: %v", s, shape, err)
		}
		x := opstest.Normal(r, shape...).Data.([]float32)
		for i := range x {
			switch r.IntN(40) {
			case 0:
				x[i] = float32(math.NaN())
			case 1:
				x[i] = float32(math.Inf(-1))
			case 2:
				x[i] = float32(math.Inf(1))
			}
		}
		orig := slices.Clone(x)
		n := g.Planes() * g.OutSize()
		fast, ref := make([]float32, n), make([]float32, n)
		pool2D(x, fast, g, poolMax, nil)
		maxPoolND(x, ref, nil, g, nil)
		sameBits(t, fmt.Sprintf("max %+v %v", *s, shape), fast, ref)
		for _, oc := range tables { // each table's MaxPair
			clear(fast)
			pool2D(x, fast, g, poolMax, oc)
			sameBits(t, fmt.Sprintf("max on %v %+v %v", oc.Engine().Table(), *s, shape), fast, ref)
		}
		for _, include := range []bool{false, true} {
			kind := poolAvg
			if include {
				kind = poolAvgPadding
			}
			pool2D(x, fast, g, kind, nil)
			avgPoolND(x, ref, g, include, nil)
			for i := range ref {
				// Inputs are N(0,1), so a window's sum of at most 16
				// holds errors well under 1e-5.
				same := fast[i] == ref[i] || fast[i] != fast[i] && ref[i] != ref[i]
				if !same && !(math.Abs(float64(fast[i]-ref[i])) <= 1e-5) {
					t.Fatalf("avg include=%v %+v %v: element %d = %v, the reference %v", include, *s, shape, i, fast[i], ref[i])
				}
			}
		}
		if !sameFloats(x, orig) {
			t.Fatal("input modified")
		}
	}
}

// FuzzPool decodes bytes into a pooling geometry (any auto_pad, ceil
// mode, kernel, stride, dilation, pads, shapes with zero dimensions) and
// values: building the geometry must fail cleanly or pool without
// panicking, and for 2-D the fast path must agree with the reference.
func FuzzPool(f *testing.F) {
	f.Add([]byte{2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 1, 3, 9, 9})
	f.Add([]byte{2, 2, 1, 1, 3, 2, 1, 0, 2, 2, 0, 3, 1, 0, 0, 5, 7, 1, 2, 3})
	f.Add([]byte{1, 4, 2, 3, 0, 1, 4, 1, 2, 9})
	f.Add([]byte{3, 1, 2, 3, 1, 1, 1, 2, 1, 3, 0, 0, 1, 1, 2, 0, 1, 1, 4, 4, 4})
	f.Fuzz(func(t *testing.T, b []byte) {
		next := func(mod int) int {
			if len(b) == 0 {
				return 0
			}
			v := int(b[0]) % mod
			b = b[1:]
			return v
		}
		rank := 1 + next(3)
		kernel, strides, dil, pads := make([]int64, rank), make([]int64, rank), make([]int64, rank), make([]int64, 2*rank)
		for i := 0; i < rank; i++ {
			kernel[i], strides[i], dil[i] = int64(1+next(5)), int64(1+next(4)), int64(1+next(3))
			pads[i], pads[i+rank] = int64(next(5)), int64(next(5))
		}
		autoPad := []string{"NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"}[next(4)]
		ceil := next(2) == 1
		if autoPad != "NOTSET" {
			pads = nil
		}
		s, err := newSpec("fuzz", autoPad, kernel, pads, strides, dil, ceil)
		if err != nil {
			t.Fatalf("valid attributes refused: %v", err)
		}
		shape := []int{next(3), next(4)}
		for i := 0; i < rank; i++ {
			shape = append(shape, next(12))
		}
		g, err := s.geometry(shape)
		if err != nil {
			if !errors.Is(err, ops.ErrInput) {
				t.Fatalf("%v: %v is not an input error", shape, err)
			}
			return
		}
		x := make([]float32, ops.ProdInts(shape))
		for i := range x {
			x[i] = float32(next(256)-128) / 16
		}
		n := g.Planes() * g.OutSize()
		ref, idx := make([]float32, n), make([]int64, n)
		maxPoolND(x, ref, idx, g, nil)
		for i, j := range idx {
			if j >= int64(len(x)) || j >= 0 && x[j] != ref[i] {
				t.Fatalf("index %d of output %d does not hold its maximum %v", j, i, ref[i])
			}
		}
		if rank != 2 {
			return
		}
		fast := make([]float32, n)
		pool2D(x, fast, g, poolMax, nil)
		sameBits(t, "max", fast, ref)
		for _, include := range []bool{false, true} {
			kind := poolAvg
			if include {
				kind = poolAvgPadding
			}
			pool2D(x, fast, g, kind, nil)
			avgPoolND(x, ref, g, include, nil)
			for i := range ref {
				if fast[i] != ref[i] && !(fast[i] != fast[i] && ref[i] != ref[i]) && math.Abs(float64(fast[i]-ref[i])) > 1e-5 {
					t.Fatalf("avg include=%v: element %d = %v, the reference %v", include, i, fast[i], ref[i])
				}
			}
		}
	})
}

// TestPoolHugeEmptyInputs: a tensor with a zero dimension may declare any
// other dimension; pooling it must neither allocate for nor loop over
// those dimensions (ops/norm tests the normalizations alike).
func TestPoolHugeEmptyInputs(t *testing.T) {
	huge := func(shape ...int) *tensor.Tensor {
		return &tensor.Tensor{DType: tensor.Float32, Shape: shape, Data: []float32{}}
	}
	for _, c := range []struct {
		op    string
		x     *tensor.Tensor
		attrs []*onnxpb.Attribute
	}{
		{"MaxPool", huge(0, 1<<30, 1<<30), []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 1)}},
		{"AveragePool", huge(1<<30, 0, 1<<30, 1<<30), []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 1, 1)}},
		{"LpPool", huge(1<<30, 1<<30, 0), []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 1), opstest.AttrInts("pads", 0, 1<<30)}},
		{"MaxPool", huge(0, 1, 1<<62), []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 1)}},
		{"GlobalAveragePool", huge(0, 1<<40, 1<<40), nil},
	} {
		_, err := run(t, 22, c.op, c.x, 1, c.attrs...)
		if err != nil && !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s %v: %v", c.op, c.x.Shape, err)
		}
	}
}

// TestPoolWindowsByHand checks the window enumeration against a direct
// walk of every kernel position, for 1-D to 4-D.
func TestPoolWindowsByHand(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 200; iter++ {
		s, shape := poolSpecCase(r, 1+iter%4)
		g, err := s.geometry(shape)
		if err != nil {
			t.Fatal(err)
		}
		rank := len(g.In)
		inSt := tensor.Strides(g.In)
		outSt := tensor.Strides(g.Out)
		w := g.Windows()
		for o := 0; o < g.OutSize(); o++ {
			var want []int
			area := 0
			kIdx := make([]int, rank)
			for kk := 0; kk < ops.ProdInts(g.Kernel); kk++ {
				rest := kk
				for i := rank - 1; i >= 0; i-- {
					kIdx[i] = rest % g.Kernel[i]
					rest /= g.Kernel[i]
				}
				off, inside, inPad := 0, true, true
				for i := 0; i < rank; i++ {
					oc := o / outSt[i] % g.Out[i]
					p := oc*g.Strides[i] - g.PadBegin[i] + kIdx[i]*g.Dilations[i]
					inside = inside && p >= 0 && p < g.In[i]
					inPad = inPad && p < g.In[i]+g.PadEnd[i]
					off += p * inSt[i]
				}
				if inside {
					want = append(want, off)
				}
				if inPad {
					area++
				}
			}
			got := w.At(o)
			if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Fatalf("%+v %v output %d: window %v, want %v", *s, shape, o, got, want)
			}
			if w.Area() != area {
				t.Fatalf("%+v %v output %d: area %d, want %d", *s, shape, o, w.Area(), area)
			}
		}
	}
}
