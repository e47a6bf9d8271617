package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// pnInput is a graph input of a one-node test model, or an initializer
// when init is set.
type pnInput struct {
	name string
	dt   tensor.DataType
	init *tensor.Tensor
}

// pnModel compiles a one-node model: op over inputs, with outputs y0,
// y1, ... (an empty name in outs leaves that output unnamed).
func pnModel(opset int64, op string, inputs []pnInput, outs []string, attrs ...*onnxpb.Attribute) (*Model, error) {
	g := &onnxpb.Graph{}
	var names []string
	for _, in := range inputs {
		names = append(names, in.name)
		switch {
		case in.name == "":
		case in.init != nil:
			g.Initializers = append(g.Initializers, TensorToONNX(in.name, in.init))
		default:
			g.Inputs = append(g.Inputs, &onnxpb.ValueInfo{Name: in.name, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: DataTypeToONNX(in.dt)}})
		}
	}
	g.Nodes = []*onnxpb.Node{{OpType: op, Name: "n", Inputs: names, Outputs: outs, Attributes: attrs}}
	for _, o := range outs {
		if o != "" {
			g.Outputs = append(g.Outputs, &onnxpb.ValueInfo{Name: o, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float}})
		}
	}
	return Load(onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: opset}}, Graph: g}))
}

func pnInts(name string, v ...int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInts, Ints: v}
}

func pnInt(name string, v int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInt, I: v}
}

func pnFloat(name string, f float32) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrFloat, F: f}
}

func pnStr(name, s string) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrString, S: []byte(s)}
}

// pnRun loads and runs a one-node model on x (input "x" of x's type) and
// returns its outputs.
func pnRun(t *testing.T, opset int64, op string, x *tensor.Tensor, nOut int, attrs ...*onnxpb.Attribute) ([]*tensor.Tensor, error) {
	t.Helper()
	outs := make([]string, nOut)
	for i := range outs {
		outs[i] = fmt.Sprintf("y%d", i)
	}
	m, err := pnModel(opset, op, []pnInput{{name: "x", dt: x.DType}}, outs, attrs...)
	if err != nil {
		t.Fatalf("%s: load: %v", op, err)
	}
	res, err := m.Run(context.Background(), map[string]*tensor.Tensor{"x": x}, nil)
	if err != nil {
		return nil, err
	}
	var got []*tensor.Tensor
	for _, o := range outs {
		got = append(got, res[o])
	}
	return got, nil
}

func pnRandom(r *rand.Rand, shape ...int) *tensor.Tensor {
	n := prodInts(shape)
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return tensor.From(shape, x)
}

// poolSpecCase draws a random valid pooling spec and input shape.
func poolSpecCase(r *rand.Rand, rank int) (*poolSpec, []int) {
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
	s, err := newPoolSpec("test", autoPad, kernel, pads, strides, dil, r.IntN(2) == 0)
	if err != nil {
		panic(err)
	}
	return s, shape
}

// TestPool2DMatchesReference runs the 2-D float32 path (separable,
// unrolled interiors) and the N-d reference on the same random inputs and
// geometries, NaN and infinities among the values: max pooling must give
// the same bits, average pooling the same values within float32
// rounding of a window's sum.
func TestPool2DMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 500; iter++ {
		s, shape := poolSpecCase(r, 2)
		if iter%7 == 0 { // the shapes a CNN runs: 3×3 and 2×2 interiors
			k := int64(2 + r.IntN(2))
			s, _ = newPoolSpec("test", "NOTSET", []int64{k, k}, []int64{1, 1, 1, 1}, []int64{2, 2}, nil, false)
			shape = []int{1, 3, 8 + r.IntN(9), 8 + r.IntN(9)}
		}
		g, err := s.geometry(shape)
		if err != nil {
			t.Fatalf("%+v %v: %v", s, shape, err)
		}
		x := pnRandom(r, shape...).Data.([]float32)
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
		pool2D(x, fast, g, poolMax)
		maxPoolND(x, ref, nil, g)
		pnSameBits(t, fmt.Sprintf("max %+v %v", *s, shape), fast, ref)
		for _, include := range []bool{false, true} {
			kind := poolAvg
			if include {
				kind = poolAvgPadding
			}
			pool2D(x, fast, g, kind)
			avgPoolND(x, ref, g, include)
			for i := range ref {
				// Inputs are N(0,1), so a window's sum of at most 16
				// holds errors well under 1e-5.
				same := fast[i] == ref[i] || fast[i] != fast[i] && ref[i] != ref[i]
				if !same && !(math.Abs(float64(fast[i]-ref[i])) <= 1e-5) {
					t.Fatalf("avg include=%v %+v %v: element %d = %v, the reference %v", include, *s, shape, i, fast[i], ref[i])
				}
			}
		}
		if !pnSameFloats(x, orig) {
			t.Fatal("input modified")
		}
	}
}

func pnSameFloats(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

func pnSameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
			t.Fatalf("%s: element %d = %v, the reference %v", what, i, got[i], want[i])
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
		s, err := newPoolSpec("fuzz", autoPad, kernel, pads, strides, dil, ceil)
		if err != nil {
			t.Fatalf("valid attributes refused: %v", err)
		}
		shape := []int{next(3), next(4)}
		for i := 0; i < rank; i++ {
			shape = append(shape, next(12))
		}
		g, err := s.geometry(shape)
		if err != nil {
			if !errors.Is(err, ErrInput) {
				t.Fatalf("%v: %v is not an input error", shape, err)
			}
			return
		}
		x := make([]float32, prodInts(shape))
		for i := range x {
			x[i] = float32(next(256)-128) / 16
		}
		n := g.Planes() * g.OutSize()
		ref, idx := make([]float32, n), make([]int64, n)
		maxPoolND(x, ref, idx, g)
		for i, j := range idx {
			if j >= int64(len(x)) || j >= 0 && x[j] != ref[i] {
				t.Fatalf("index %d of output %d does not hold its maximum %v", j, i, ref[i])
			}
		}
		if rank != 2 {
			return
		}
		fast := make([]float32, n)
		pool2D(x, fast, g, poolMax)
		pnSameBits(t, "max", fast, ref)
		for _, include := range []bool{false, true} {
			kind := poolAvg
			if include {
				kind = poolAvgPadding
			}
			pool2D(x, fast, g, kind)
			avgPoolND(x, ref, g, include)
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
		{"MaxPool", huge(0, 1<<30, 1<<30), []*onnxpb.Attribute{pnInts("kernel_shape", 1)}},
		{"AveragePool", huge(1<<30, 0, 1<<30, 1<<30), []*onnxpb.Attribute{pnInts("kernel_shape", 1, 1)}},
		{"LpPool", huge(1<<30, 1<<30, 0), []*onnxpb.Attribute{pnInts("kernel_shape", 1), pnInts("pads", 0, 1<<30)}},
		{"MaxPool", huge(0, 1, 1<<62), []*onnxpb.Attribute{pnInts("kernel_shape", 1)}},
		{"GlobalAveragePool", huge(0, 1<<40, 1<<40), nil},
	} {
		_, err := pnRun(t, 22, c.op, c.x, 1, c.attrs...)
		if err != nil && !errors.Is(err, ErrInput) {
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
			for kk := 0; kk < prodInts(g.Kernel); kk++ {
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
			if w.area != area {
				t.Fatalf("%+v %v output %d: area %d, want %d", *s, shape, o, w.area, area)
			}
		}
	}
}

// TestMaxPoolIndicesAndStorageOrder checks Indices by hand: row-major and
// column-major flat indices including the batch and channel, and ties
// resolved to the first maximum.
func TestMaxPoolIndicesAndStorageOrder(t *testing.T) {
	// Two planes of 3×4; 2×2 windows, stride 2.
	x := tensor.From([]int{1, 2, 3, 4}, []float32{
		1, 9, 2, 3,
		4, 5, 8, 8,
		0, 0, 7, 6,

		5, 5, 1, 2,
		5, 1, 3, 9,
		2, 0, 4, 4,
	})
	for _, c := range []struct {
		order int64
		want  []int64
	}{
		{0, []int64{1, 6, 12, 19}},
		{1, []int64{3, 7, 12, 22}}, // column-major: h + 3·w within a plane
	} {
		out, err := pnRun(t, 12, "MaxPool", x, 2, pnInts("kernel_shape", 2, 2), pnInts("strides", 2, 2), pnInt("storage_order", c.order))
		if err != nil {
			t.Fatal(err)
		}
		if got := out[0].Data.([]float32); !slices.Equal(got, []float32{9, 8, 5, 9}) {
			t.Errorf("storage_order %d: Y = %v", c.order, got)
		}
		if got := out[1].Data.([]int64); !slices.Equal(got, c.want) || out[1].DType != tensor.Int64 {
			t.Errorf("storage_order %d: Indices = %v, want %v", c.order, got, c.want)
		}
	}
	// 3-D, column-major: index = h + w·H + d·H·W.
	x3 := tensor.From([]int{1, 1, 2, 2, 2}, []float32{0, 1, 2, 3, 4, 5, 6, 7})
	out, err := pnRun(t, 12, "MaxPool", x3, 2, pnInts("kernel_shape", 2, 2, 2), pnInt("storage_order", 1))
	if err != nil {
		t.Fatal(err)
	}
	// The maximum, 7, is at (h, w, d) = (1, 1, 1): 1 + 1·2 + 1·4.
	if got := out[1].Data.([]int64); !slices.Equal(got, []int64{7}) {
		t.Errorf("3-D column-major index %v", got)
	}
}

// TestPoolTypes runs the pools over every type ONNX allows them: the
// result is the float32 result in that type.
func TestPoolTypes(t *testing.T) {
	x := tensor.From([]int{1, 1, 3, 3}, []float32{1, -2, 3, 4, 5, -6, 7, 8, 9})
	attrs := []*onnxpb.Attribute{pnInts("kernel_shape", 2, 2), pnInts("pads", 1, 0, 0, 1)}
	for _, op := range []string{"MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"} {
		a := attrs
		if strings.HasPrefix(op, "Global") {
			a = nil
		}
		want, err := pnRun(t, 22, op, x, 1, a...)
		if err != nil {
			t.Fatal(err)
		}
		types := []tensor.DataType{tensor.Float64, tensor.Float16, tensor.BFloat16}
		if op == "MaxPool" {
			types = append(types, tensor.Int8)
		}
		for _, dt := range types {
			xt, err := castTo(x, dt)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pnRun(t, 22, op, xt, 1, a...)
			if err != nil {
				t.Fatalf("%s %v: %v", op, dt, err)
			}
			if got[0].DType != dt || !equalShape(got[0].Shape, want[0].Shape) {
				t.Fatalf("%s %v: got %v %v", op, dt, got[0].DType, got[0].Shape)
			}
			g, w := got[0].Float64s(), want[0].Float64s()
			for i := range w {
				tol := 1e-6
				switch dt {
				case tensor.Float16:
					tol = 1e-3
				case tensor.BFloat16:
					tol = 8e-3
				case tensor.Int8:
					tol = 0
				}
				if math.Abs(g[i]-w[i]) > tol*(1+math.Abs(w[i])) {
					t.Errorf("%s %v: element %d = %v, float32 gives %v", op, dt, i, g[i], w[i])
				}
			}
		}
		if _, err := pnRun(t, 22, op, tensor.From([]int{1, 1, 2, 2}, []int32{1, 2, 3, 4}), 1, a...); !errors.Is(err, ErrInput) {
			t.Errorf("%s over INT32: %v, want an input error", op, err)
		}
	}
	// uint8 max pooling, checked by hand.
	u := tensor.From([]int{1, 1, 2, 3}, []uint8{0, 200, 3, 255, 1, 2})
	got, err := pnRun(t, 22, "MaxPool", u, 1, pnInts("kernel_shape", 2, 2))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got[0].Data.([]uint8), []uint8{255, 200}) {
		t.Errorf("uint8 MaxPool = %v", got[0].Data)
	}
}

// TestPoolEdgeShapes covers empty batches, windows that only cover
// padding, rank-2 global pooling and outputs of zero elements.
func TestPoolEdgeShapes(t *testing.T) {
	// No images: an empty output of the right shape.
	got, err := pnRun(t, 22, "MaxPool", tensor.From([]int{0, 3, 4, 4}, []float32{}), 2, pnInts("kernel_shape", 2, 2))
	if err != nil {
		t.Fatal(err)
	}
	if !equalShape(got[0].Shape, []int{0, 3, 3, 3}) || got[0].Len() != 0 || !equalShape(got[1].Shape, []int{0, 3, 3, 3}) {
		t.Errorf("empty batch: %v %v", got[0].Shape, got[1].Shape)
	}
	// A window over padding only: one input row, windows of two rows two
	// apart, padded by 1 before and 2 after. The window starting at -1
	// reads rows -1 and 1, both padding; the one at 0 reads 0 and 2.
	x := tensor.From([]int{1, 1, 1, 1}, []float32{5})
	attrs := []*onnxpb.Attribute{pnInts("kernel_shape", 2, 1), pnInts("dilations", 2, 1), pnInts("pads", 1, 0, 2, 0)}
	got, err = pnRun(t, 22, "MaxPool", x, 2, attrs...)
	if err != nil {
		t.Fatal(err)
	}
	ys, is := got[0].Data.([]float32), got[1].Data.([]int64)
	if !equalShape(got[0].Shape, []int{1, 1, 2, 1}) || !math.IsInf(float64(ys[0]), -1) || is[0] != -1 || ys[1] != 5 || is[1] != 0 {
		t.Errorf("padding-only window: Y %v %v, Indices %v", got[0].Shape, ys, is)
	}
	avg, err := pnRun(t, 22, "AveragePool", x, 1, attrs...)
	if err != nil {
		t.Fatal(err)
	}
	if v := avg[0].Data.([]float32); !math.IsNaN(float64(v[0])) || v[1] != 5 {
		t.Errorf("AveragePool over padding only: %v (0 elements: NaN)", v)
	}
	avg, err = pnRun(t, 22, "AveragePool", x, 1, append(attrs, pnInt("count_include_pad", 1))...)
	if err != nil {
		t.Fatal(err)
	}
	if v := avg[0].Data.([]float32); v[0] != 0 || v[1] != 2.5 {
		t.Errorf("AveragePool counting padding: %v", v)
	}
	// Global pools of a rank-2 input pool one element per plane.
	g, err := pnRun(t, 22, "GlobalAveragePool", tensor.From([]int{2, 2}, []float32{1, 2, 3, 4}), 1)
	if err != nil {
		t.Fatal(err)
	}
	if !equalShape(g[0].Shape, []int{2, 2}) || !slices.Equal(g[0].Data.([]float32), []float32{1, 2, 3, 4}) {
		t.Errorf("rank-2 GlobalAveragePool: %v %v", g[0].Shape, g[0].Data)
	}
	for _, op := range []string{"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"} {
		if _, err := pnRun(t, 22, op, tensor.From([]int{1, 2, 0}, []float32{}), 1); !errors.Is(err, ErrInput) {
			t.Errorf("%s over empty planes: %v", op, err)
		}
		if _, err := pnRun(t, 22, op, tensor.Scalar(float32(1)), 1); !errors.Is(err, ErrInput) {
			t.Errorf("%s of a scalar: %v", op, err)
		}
	}
	// A NaN wins a max, as in math.Max; MaxPool's index is the NaN's.
	gm, err := pnRun(t, 22, "GlobalMaxPool", tensor.From([]int{1, 1, 3}, []float32{-1, float32(math.NaN()), 3}), 1)
	if err != nil || !math.IsNaN(float64(gm[0].Data.([]float32)[0])) {
		t.Errorf("GlobalMaxPool with NaN: %v %v", gm, err)
	}
	mp, err := pnRun(t, 22, "MaxPool", tensor.From([]int{1, 1, 4}, []float32{-1, float32(math.NaN()), 3, 2}), 2, pnInts("kernel_shape", 2), pnInts("strides", 2))
	if err != nil || !math.IsNaN(float64(mp[0].Data.([]float32)[0])) || mp[0].Data.([]float32)[1] != 3 || !slices.Equal(mp[1].Data.([]int64), []int64{1, 2}) {
		t.Errorf("MaxPool with NaN: %v %v", mp, err)
	}
	big := make([]float32, 4099)
	for i := range big {
		big[i] = float32(i % 7)
	}
	ga, err := pnRun(t, 22, "GlobalAveragePool", tensor.From([]int{1, 1, 4099}, big), 1)
	var sum float64
	for _, v := range big {
		sum += float64(v)
	}
	if err != nil || math.Abs(float64(ga[0].Data.([]float32)[0])-sum/4099) > 1e-6 {
		t.Errorf("GlobalAveragePool of 4099: %v %v, want %v", ga, err, sum/4099)
	}
}

// TestPoolRefusals: malformed attributes are refused at load, and inputs
// the node cannot take are input errors at run time; nothing panics.
func TestPoolRefusals(t *testing.T) {
	x := pnInput{name: "x", dt: tensor.Float32}
	for _, c := range []struct {
		opset int64
		op    string
		attrs []*onnxpb.Attribute
		want  string
	}{
		{22, "MaxPool", nil, "needs kernel_shape"},
		{22, "MaxPool", []*onnxpb.Attribute{pnInts("kernel_shape", 2, 2), pnInts("strides", 1)}, "strides has 1 values"},
		{22, "MaxPool", []*onnxpb.Attribute{pnInts("kernel_shape", 2, 0)}, "kernel_shape"},
		{22, "MaxPool", []*onnxpb.Attribute{pnInts("kernel_shape", 2), pnInts("pads", -1, 0)}, "pads"},
		{22, "MaxPool", []*onnxpb.Attribute{pnInts("kernel_shape", 2), pnStr("auto_pad", "SAME")}, "auto_pad"},
		{22, "MaxPool", []*onnxpb.Attribute{pnInts("kernel_shape", 2), pnStr("auto_pad", "VALID"), pnInts("pads", 1, 1)}, "cannot be used with auto_pad"},
		{22, "MaxPool", []*onnxpb.Attribute{pnInts("kernel_shape", 2), pnInt("storage_order", 2)}, "storage_order"},
		{8, "MaxPool", []*onnxpb.Attribute{pnInts("kernel_shape", 2), pnInts("dilations", 2)}, `"dilations" is defined from opset 10`},
		{18, "AveragePool", []*onnxpb.Attribute{pnInts("kernel_shape", 2), pnInts("dilations", 2)}, `"dilations" is defined from opset 19`},
		{22, "AveragePool", []*onnxpb.Attribute{pnInts("kernel_shape", 2), pnInt("storage_order", 1)}, `attribute "storage_order"`},
		{22, "LpPool", []*onnxpb.Attribute{pnInts("kernel_shape", 2), pnInt("p", 0)}, "p = 0"},
		{22, "GlobalLpPool", []*onnxpb.Attribute{pnInt("p", -1)}, "p = -1"},
		{22, "MaxRoiPool", []*onnxpb.Attribute{pnInts("pooled_shape", 2)}, "pooled_shape"},
		{22, "RoiAlign", []*onnxpb.Attribute{pnStr("mode", "median")}, "mode"},
		{22, "RoiAlign", []*onnxpb.Attribute{pnStr("coordinate_transformation_mode", "asymmetric")}, "coordinate_transformation_mode"},
		{15, "RoiAlign", []*onnxpb.Attribute{pnStr("coordinate_transformation_mode", "half_pixel")}, `unsupported: attribute "coordinate_transformation_mode"`},
	} {
		ins := []pnInput{x}
		switch c.op {
		case "MaxRoiPool":
			ins = append(ins, pnInput{name: "rois", dt: tensor.Float32})
		case "RoiAlign":
			ins = append(ins, pnInput{name: "rois", dt: tensor.Float32}, pnInput{name: "b", dt: tensor.Int64})
		}
		_, err := pnModel(c.opset, c.op, ins, []string{"y"}, c.attrs...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s opset %d %v: error %v, want %q", c.op, c.opset, c.attrs, err, c.want)
		}
	}
	if _, err := pnModel(7, "MaxPool", []pnInput{x}, []string{"y", "i"}, pnInts("kernel_shape", 2)); err == nil {
		t.Error("MaxPool-1 has no Indices output, yet loaded with two outputs")
	}
	run := func(op string, in *tensor.Tensor, attrs ...*onnxpb.Attribute) error {
		_, err := pnRun(t, 22, op, in, 1, attrs...)
		return err
	}
	k2 := pnInts("kernel_shape", 2, 2)
	for _, c := range []struct {
		op   string
		in   *tensor.Tensor
		want string
	}{
		{"MaxPool", tensor.From([]int{1, 4, 4}, make([]float32, 16)), "rank-4 input"},
		{"MaxPool", tensor.From([]int{1, 1, 1, 4}, make([]float32, 4)), "smaller than the window"},
		{"AveragePool", tensor.From([]int{1, 1, 2, 2}, []int8{1, 2, 3, 4}), "does not take INT8"},
	} {
		if err := run(c.op, c.in, k2); !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v, want an input error with %q", c.op, c.in.Shape, err, c.want)
		}
	}
	if err := run("MaxPool", tensor.From([]int{1, 1, 1, 4}, make([]float32, 4)), k2, pnStr("auto_pad", "VALID")); !errors.Is(err, ErrInput) {
		t.Errorf("VALID window larger than the input: %v", err)
	}
}

// TestMaxUnpoolInvertsMaxPool pools with indices and unpools: each maximum
// returns to its place, everything else is zero; output_shape pads the
// result; bad indices are input errors.
func TestMaxUnpoolInvertsMaxPool(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	x := pnRandom(r, 2, 3, 6, 5)
	pool := []*onnxpb.Attribute{pnInts("kernel_shape", 2, 2), pnInts("strides", 2, 2), pnInts("pads", 0, 0, 0, 1)}
	out, err := pnRun(t, 22, "MaxPool", x, 2, pool...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := pnModel(22, "MaxUnpool", []pnInput{{name: "x", dt: tensor.Float32}, {name: "i", dt: tensor.Int64}, {name: "s", dt: tensor.Int64}}, []string{"y"}, pool...)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := pnModel(22, "MaxUnpool", []pnInput{{name: "x", dt: tensor.Float32}, {name: "i", dt: tensor.Int64}}, []string{"y"}, pool...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := m2.Run(context.Background(), map[string]*tensor.Tensor{"x": out[0], "i": out[1]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	y := res["y"]
	// Pooled 3×3; unpooled (3-1)·2 + 2 = 6 rows and (3-1)·2 - 1 + 2 = 5 columns.
	if !equalShape(y.Shape, []int{2, 3, 6, 5}) {
		t.Fatalf("unpooled shape %v", y.Shape)
	}
	want := make([]float32, x.Len())
	for i, idx := range out[1].Data.([]int64) {
		want[idx] = out[0].Data.([]float32)[i]
	}
	if !slices.Equal(y.Data.([]float32), want) {
		t.Errorf("unpooled %v, want %v", y.Data, want)
	}
	res, err = m.Run(context.Background(), map[string]*tensor.Tensor{"x": out[0], "i": out[1], "s": tensor.From([]int{4}, []int64{2, 3, 7, 6})}, nil)
	if err != nil {
		t.Fatal(err)
	}
	y = res["y"]
	yd := y.Data.([]float32)
	for p := 0; p < 6; p++ {
		for h := 0; h < 7; h++ {
			for w := 0; w < 6; w++ {
				var v float32
				if h < 6 && w < 5 {
					v = want[(p*6+h)*5+w]
				}
				if yd[(p*7+h)*6+w] != v {
					t.Fatalf("output_shape: [%d,%d,%d] = %v, want %v", p, h, w, yd[(p*7+h)*6+w], v)
				}
			}
		}
	}
	bad := func(in map[string]*tensor.Tensor, mm *Model, want string) {
		t.Helper()
		if _, err := mm.Run(context.Background(), in, nil); !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v, want an input error with %q", want, err, want)
		}
	}
	badIdx := out[1].Clone()
	badIdx.Data.([]int64)[3] = 2 * 3 * 6 * 5
	bad(map[string]*tensor.Tensor{"x": out[0], "i": badIdx}, m2, "outside the unpooled shape")
	badIdx.Data.([]int64)[3] = -1
	bad(map[string]*tensor.Tensor{"x": out[0], "i": badIdx}, m2, "outside the unpooled shape")
	bad(map[string]*tensor.Tensor{"x": out[0], "i": tensor.From([]int{1}, []int64{0})}, m2, "indices have shape")
	bad(map[string]*tensor.Tensor{"x": out[0], "i": out[1], "s": tensor.From([]int{4}, []int64{2, 3, 5, 5})}, m, "cannot hold")
	bad(map[string]*tensor.Tensor{"x": out[0], "i": out[1], "s": tensor.From([]int{4}, []int64{2, 3, 1 << 40, 1 << 40})}, m, "cannot hold")
	bad(map[string]*tensor.Tensor{"x": out[0], "i": out[1], "s": tensor.From([]int{4}, []int64{2, 3, 1 << 20, 1 << 20})}, m, "too many elements")
}

// TestMaxRoiPoolByHand: there is no ONNX node test of MaxRoiPool, so its
// answers are worked out here.
func TestMaxRoiPoolByHand(t *testing.T) {
	x := make([]float32, 2*1*4*4)
	for i := range x {
		x[i] = float32(i)
	}
	X := tensor.From([]int{2, 1, 4, 4}, x)
	m, err := pnModel(22, "MaxRoiPool", []pnInput{{name: "x", dt: tensor.Float32}, {name: "rois", dt: tensor.Float32}}, []string{"y"},
		pnInts("pooled_shape", 2, 2), pnFloat("spatial_scale", 0.5))
	if err != nil {
		t.Fatal(err)
	}
	rois := tensor.From([]int{3, 5}, []float32{
		0, 0, 0, 6, 6, // scaled: (0,0)-(3,3), the whole first image
		1, 2, 0, 6, 2, // second image, x 1..3, y 0..1: bins of 1.5×1 pixels
		0, 9, 9, 12, 12, // entirely outside: rounded to 5..6, clamped away
	})
	res, err := m.Run(context.Background(), map[string]*tensor.Tensor{"x": X, "rois": rois}, nil)
	if err != nil {
		t.Fatal(err)
	}
	y := res["y"].Data.([]float32)
	want := []float32{
		5, 7, 13, 15,
		// roi 2: rows [0,1) and [1,2), cols floor(0)+1=1..ceil(1.5)+1=3 and floor(1.5)+1=2..ceil(3)+1=4
		16 + 2, 16 + 3, 16 + 6, 16 + 7,
		0, 0, 0, 0,
	}
	if !equalShape(res["y"].Shape, []int{3, 1, 2, 2}) || !slices.Equal(y, want) {
		t.Errorf("MaxRoiPool = %v %v, want %v", res["y"].Shape, y, want)
	}
	for _, bad := range [][]float32{{2, 0, 0, 1, 1}, {-1, 0, 0, 1, 1}, {0, float32(math.NaN()), 0, 1, 1}, {0, 0, 0, float32(math.Inf(1)), 1}} {
		_, err := m.Run(context.Background(), map[string]*tensor.Tensor{"x": X, "rois": tensor.From([]int{1, 5}, bad)}, nil)
		if !errors.Is(err, ErrInput) {
			t.Errorf("roi %v: %v, want an input error", bad, err)
		}
	}
}

// TestRoiAlignOnARamp samples X[h, w] = w: bilinear interpolation of a
// linear function is exact, so each avg bin is the mean x of its sample
// points, which the test computes itself, for both coordinate modes and
// the opset-10 default (no half-pixel shift).
func TestRoiAlignOnARamp(t *testing.T) {
	const H, W = 6, 8
	x := make([]float32, H*W)
	for h := 0; h < H; h++ {
		for w := 0; w < W; w++ {
			x[h*W+w] = float32(w)
		}
	}
	X := tensor.From([]int{1, 1, H, W}, x)
	rois := tensor.From([]int{1, 4}, []float32{1, 1, 5, 4}) // x1, y1, x2, y2
	ins := []pnInput{{name: "x", dt: tensor.Float32}, {name: "rois", dt: tensor.Float32}, {name: "b", dt: tensor.Int64}}
	for _, c := range []struct {
		opset int64
		attrs []*onnxpb.Attribute
		shift float64
	}{
		{10, nil, 0},
		{16, nil, 0.5},
		{22, []*onnxpb.Attribute{pnStr("coordinate_transformation_mode", "output_half_pixel")}, 0},
	} {
		attrs := append([]*onnxpb.Attribute{pnInt("output_height", 1), pnInt("output_width", 2), pnInt("sampling_ratio", 2)}, c.attrs...)
		m, err := pnModel(c.opset, "RoiAlign", ins, []string{"y"}, attrs...)
		if err != nil {
			t.Fatal(err)
		}
		res, err := m.Run(context.Background(), map[string]*tensor.Tensor{"x": X, "rois": rois, "b": tensor.From([]int{1}, []int64{0})}, nil)
		if err != nil {
			t.Fatal(err)
		}
		y := res["y"].Data.([]float32)
		x0, bw := 1-c.shift, 4.0/2
		for pw := 0; pw < 2; pw++ {
			// samples at x0 + pw·bw + (ix+0.5)·bw/2, ix = 0, 1
			want := x0 + float64(pw)*bw + bw/2
			if math.Abs(float64(y[pw])-want) > 1e-5 {
				t.Errorf("opset %d %v: bin %d = %v, want %v", c.opset, c.attrs, pw, y[pw], want)
			}
		}
	}
	// max mode, in the ONNX reference's definition: the largest weighted
	// corner of any sample.
	m, err := pnModel(22, "RoiAlign", ins, []string{"y"}, pnStr("mode", "max"), pnInt("sampling_ratio", 1), pnStr("coordinate_transformation_mode", "output_half_pixel"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Run(context.Background(), map[string]*tensor.Tensor{"x": X, "rois": tensor.From([]int{1, 4}, []float32{2, 0, 3, 1}), "b": tensor.From([]int{1}, []int64{0})}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// One sample at (0.5, 2.5): corners x=2 and x=3, weights 0.25 each.
	if got := res["y"].Data.([]float32)[0]; got != 0.75 {
		t.Errorf("max mode = %v, want 0.75", got)
	}
	// Bad inputs; an adaptive sampling grid grows with the ROI, so huge
	// ROIs are refused rather than sampled for hours.
	adaptive, err := pnModel(22, "RoiAlign", ins, []string{"y"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rois  []float32
		batch int64
		want  string
	}{
		{[]float32{0, 0, 1, 1}, 1, "batch index 1"},
		{[]float32{0, 0, float32(math.NaN()), 1}, 0, "not finite"},
		{[]float32{0, 0, 1e30, 1e30}, 0, "sampling grid"},
		{[]float32{0, 0, 3e5, 3e5}, 0, "bilinear samples"},
	} {
		_, err := adaptive.Run(context.Background(), map[string]*tensor.Tensor{"x": X, "rois": tensor.From([]int{1, 4}, c.rois), "b": tensor.From([]int{1}, []int64{c.batch})}, nil)
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("rois %v batch %d: %v, want an input error with %q", c.rois, c.batch, err, c.want)
		}
	}
}

// BenchmarkMaxPool is ResNet-50's stem pooling, 3×3 stride 2 pad 1 over
// 1×64×112×112: the 2-D path against the N-d reference.
func BenchmarkMaxPool(b *testing.B) {
	s, _ := newPoolSpec("MaxPool", "NOTSET", []int64{3, 3}, []int64{1, 1, 1, 1}, []int64{2, 2}, nil, false)
	g, _ := s.geometry([]int{1, 64, 112, 112})
	x := pnRandom(rand.New(rand.NewPCG(7, 7)), 1, 64, 112, 112).Data.([]float32)
	y := make([]float32, g.Planes()*g.OutSize())
	b.Run("2d", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		b.ReportAllocs()
		for b.Loop() {
			pool2D(x, y, g, poolMax)
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		b.ReportAllocs()
		for b.Loop() {
			maxPoolND(x, y, nil, g)
		}
	})
}

// BenchmarkAveragePool is a 3×3 stride-1 average over 1×256×28×28 (an
// Inception-style pooling branch).
func BenchmarkAveragePool(b *testing.B) {
	s, _ := newPoolSpec("AveragePool", "NOTSET", []int64{3, 3}, []int64{1, 1, 1, 1}, []int64{1, 1}, nil, false)
	g, _ := s.geometry([]int{1, 256, 28, 28})
	x := pnRandom(rand.New(rand.NewPCG(7, 7)), 1, 256, 28, 28).Data.([]float32)
	y := make([]float32, g.Planes()*g.OutSize())
	b.Run("2d", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			pool2D(x, y, g, poolAvg)
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			avgPoolND(x, y, g, false)
		}
	})
}

// BenchmarkGlobalAveragePool is ResNet-50's head, 1×2048×7×7: the
// compiled node, its kernel alone, and copying the input (the memory
// floor).
func BenchmarkGlobalAveragePool(b *testing.B) {
	m, err := pnModel(22, "GlobalAveragePool", []pnInput{{name: "x", dt: tensor.Float32}}, []string{"y"})
	if err != nil {
		b.Fatal(err)
	}
	x := pnRandom(rand.New(rand.NewPCG(8, 8)), 1, 2048, 7, 7)
	in := map[string]*tensor.Tensor{"x": x}
	xs := x.Data.([]float32)
	b.Run("node", func(b *testing.B) {
		b.SetBytes(int64(4 * x.Len()))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.Run(context.Background(), in, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kernel", func(b *testing.B) {
		b.SetBytes(int64(4 * x.Len()))
		for b.Loop() {
			globalPool(xs, 2048, 49, true, dispatch.Default().PoolSum)
		}
	})
	b.Run("copy", func(b *testing.B) {
		dst := make([]float32, len(xs))
		b.SetBytes(int64(4 * x.Len()))
		for b.Loop() {
			copy(dst, xs)
		}
	})
}
