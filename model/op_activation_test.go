package model

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

func fattr(name string, v float32) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrFloat, F: v}
}

// actInputs are the values the activation tests run on: a sweep of
// ordinary values, both tails, and the special values.
func actInputs() []float32 {
	var xs []float32
	for v := float32(-12); v <= 12; v += 0.0137 {
		xs = append(xs, v)
	}
	return append(xs, 0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, 1e-42, 30, -30, 100, -100, 1e30, -1e30,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()))
}

// TestActivationFloat32MatchesFloat64 compares every activation's float32
// kernel with its float64 path (the twin every other type runs) on the
// same inputs: within a few ulps, or an absolute 1e-6 where the spec's
// float32 formula itself cancels (HardSigmoid, HardSwish near their
// kinks).
func TestActivationFloat32MatchesFloat64(t *testing.T) {
	xs := actInputs()
	for b := uint64(0); b < 1<<32; b += 65537 { // a sample of every exponent
		xs = append(xs, math.Float32frombits(uint32(b)))
	}
	x32 := tensor.From([]int{len(xs)}, xs)
	x64 := tensor.From([]int{len(xs)}, convert[float64](xs))
	for _, c := range []struct {
		op    string
		opset int64
		attrs []*onnxpb.Attribute
		ulps  float64
		abs   float64
	}{
		{"Relu", 14, nil, 0, 0},
		{"LeakyRelu", 16, []*onnxpb.Attribute{fattr("alpha", 0.1)}, 0.5, 0},
		{"Sigmoid", 13, nil, 2.5, 0},
		{"Tanh", 13, nil, 1.5, 0},
		{"HardSigmoid", 22, []*onnxpb.Attribute{fattr("alpha", 0.3), fattr("beta", 0.4)}, 1, 1e-6},
		{"HardSwish", 22, nil, 1, 1e-6},
		// The exact form's tail, below 1.2e-38 from x = -13.1 on, is
		// flushed to zero (the SIMD kernels' e**(-x²/2) stops at normal
		// floats).
		{"Gelu", 20, nil, 5, 1.2e-38},
		{"Gelu", 20, []*onnxpb.Attribute{{Name: "approximate", Type: onnxpb.AttrString, S: []byte("tanh")}}, 6, 0},
		// Where sigmoid(alpha·x) underflows to a subnormal, the product
		// keeps its absolute error only.
		{"Swish", 24, []*onnxpb.Attribute{fattr("alpha", 1.5)}, 4, 1.2e-38},
		{"Erf", 13, nil, 3, 0},
		{"Exp", 13, nil, 1.5, 0},
		{"Clip", 6, []*onnxpb.Attribute{fattr("min", -1.5), fattr("max", 2)}, 0, 0},
	} {
		o32, err := runOp(t, c.op, c.opset, 1, c.attrs, x32)
		if err != nil {
			t.Fatal(err)
		}
		o64, err := runOp(t, c.op, c.opset, 1, c.attrs, x64)
		if err != nil {
			t.Fatal(err)
		}
		g, w := o32[0].Data.([]float32), o64[0].Data.([]float64)
		for i := range g {
			if e := elemULPs(g[i], w[i]); e > c.ulps && !(math.Abs(float64(g[i])-w[i]) <= c.abs) {
				t.Errorf("%s(%v) float32 %v, float64 %v: %.2f ulp", c.op, xs[i], g[i], w[i], e)
				break
			}
		}
	}
}

// TestActivationValues checks the attribute-bearing activations against
// their ONNX definitions, and that the float64 forms stay finite where a
// literal formula overflows.
func TestActivationValues(t *testing.T) {
	xs := []float64{-3, -1, -0.25, 0, 0.25, 1, 3, 200, -200}
	x := tensor.From([]int{len(xs)}, xs)
	sp := func(v float64) float64 { return math.Log(1 + math.Exp(v)) }
	for _, c := range []struct {
		op    string
		opset int64
		attrs []*onnxpb.Attribute
		def   func(float64) float64
	}{
		{"Elu", 22, []*onnxpb.Attribute{fattr("alpha", 2)}, func(v float64) float64 {
			if v > 0 {
				return v
			}
			return 2 * (math.Exp(v) - 1)
		}},
		{"Selu", 22, nil, func(v float64) float64 {
			a, g := 1.67326319217681884765625, 1.05070102214813232421875
			if v > 0 {
				return g * v
			}
			return g * (a*math.Exp(v) - a)
		}},
		{"Celu", 12, []*onnxpb.Attribute{fattr("alpha", 0.5)}, func(v float64) float64 {
			return math.Max(0, v) + math.Min(0, 0.5*(math.Exp(v/0.5)-1))
		}},
		{"Softplus", 22, nil, func(v float64) float64 {
			if v > 30 {
				return v // log(1+e^v) overflows in the literal formula
			}
			return sp(v)
		}},
		{"Softsign", 22, nil, func(v float64) float64 { return v / (1 + math.Abs(v)) }},
		{"ThresholdedRelu", 22, []*onnxpb.Attribute{fattr("alpha", 0.25)}, func(v float64) float64 {
			if v > 0.25 {
				return v
			}
			return 0
		}},
		{"Mish", 22, nil, func(v float64) float64 {
			if v > 30 {
				return v
			}
			return v * math.Tanh(sp(v))
		}},
		{"Shrink", 9, []*onnxpb.Attribute{fattr("lambd", 1), fattr("bias", 0.5)}, func(v float64) float64 {
			switch {
			case v < -1:
				return v + 0.5
			case v > 1:
				return v - 0.5
			}
			return 0
		}},
		{"HardSigmoid", 22, nil, func(v float64) float64 { return math.Max(0, math.Min(1, float64(float32(0.2))*v+0.5)) }},
		{"HardSwish", 22, nil, func(v float64) float64 { return v * math.Max(0, math.Min(1, v/6+0.5)) }},
		{"Swish", 24, nil, func(v float64) float64 { return v / (1 + math.Exp(-v)) }},
		{"Gelu", 20, nil, func(v float64) float64 { return 0.5 * v * (1 + math.Erf(v/math.Sqrt2)) }},
	} {
		out, err := runOp(t, c.op, c.opset, 1, c.attrs, x)
		if err != nil {
			t.Fatal(err)
		}
		for i, got := range out[0].Data.([]float64) {
			want := c.def(xs[i])
			if math.IsInf(got, 0) || math.IsNaN(got) || math.Abs(got-want) > 1e-12*(1+math.Abs(want)) {
				t.Errorf("%s(%v) = %v, want %v", c.op, xs[i], got, want)
			}
		}
	}
	// Shrink on integers computes in float64 and converts back.
	out, err := runOp(t, "Shrink", 9, 1, []*onnxpb.Attribute{fattr("lambd", 1.5), fattr("bias", 1.5)}, tensor.From([]int{5}, []int8{-4, -2, 1, 2, 4}))
	if err != nil || !slices.Equal(out[0].Data.([]int8), []int8{-2, 0, 0, 0, 2}) {
		t.Errorf("int8 Shrink = %v, %v", out, err)
	}
	// Celu with alpha 0 divides by zero: a malformed model.
	if _, err := runOp(t, "Celu", 12, 1, []*onnxpb.Attribute{fattr("alpha", 0)}, x); err == nil {
		t.Error("Celu alpha=0 compiled")
	}
	if _, err := runOp(t, "Gelu", 20, 1, []*onnxpb.Attribute{{Name: "approximate", Type: onnxpb.AttrString, S: []byte("erf")}}, x); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Gelu approximate=erf: %v", err)
	}
}

// TestActivationTypes runs the activations on every type their specs
// allow beyond float32 and float64, and refuses the others.
func TestActivationTypes(t *testing.T) {
	h := tensor.From([]int{3}, tensor.Float32ToHalf[tensor.F16]([]float32{-2, 0.5, 3}))
	bf := tensor.From([]int{3}, tensor.Float32ToHalf[tensor.BF16]([]float32{-2, 0.5, 3}))
	for _, op := range []string{"Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish", "Elu", "Selu", "Softplus", "Softsign", "Mish", "Erf", "Gelu", "Swish"} {
		opset := int64(22)
		switch op {
		case "Gelu":
			opset = 20
		case "Swish":
			opset = 24
		}
		for _, x := range []*tensor.Tensor{h, bf} {
			out, err := runOp(t, op, opset, 1, nil, x)
			if err != nil {
				t.Fatalf("%s on %v: %v", op, x.DType, err)
			}
			// The float64 value rounded once.
			ref, err := runOp(t, op, opset, 1, nil, tensor.From([]int{3}, x.Float64s()))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := castTo(ref[0], x.DType)
			if out[0].DType != x.DType || !slices.Equal(out[0].Float64s(), want.Float64s()) {
				t.Errorf("%s on %v = %v, want %v", op, x.DType, out[0].Float64s(), want.Float64s())
			}
		}
	}
	ints := tensor.From([]int{4}, []int64{-5, 0, 3, math.MinInt64})
	out, err := runOp(t, "Relu", 14, 1, nil, ints)
	if err != nil || !slices.Equal(out[0].Data.([]int64), []int64{0, 0, 3, 0}) {
		t.Errorf("int64 Relu = %v, %v", out, err)
	}
	for _, op := range []string{"Sigmoid", "Gelu", "HardSwish"} {
		if _, err := runOp(t, op, 22, 1, nil, ints); !errors.Is(err, ErrInput) {
			t.Errorf("int64 %s: %v", op, err)
		}
	}
	if _, err := runOp(t, "Relu", 14, 1, nil, tensor.From([]int{1}, []string{"a"})); !errors.Is(err, ErrInput) {
		t.Errorf("string Relu: %v", err)
	}
}

// TestPRelu checks slope broadcasting (per channel, scalar, full) against
// the definition, on float32 and int32, and refuses slopes that do not
// broadcast to X.
func TestPRelu(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	x := elemRandF32(r, []int{2, 3, 4, 5})
	for _, ss := range [][]int{{3, 1, 1}, {1}, nil, {5}, {2, 3, 4, 5}, {4, 1}} {
		s := elemRandF32(r, ss)
		out, err := runOp(t, "PRelu", 16, 1, nil, x, s)
		if err != nil {
			t.Fatal(err)
		}
		_, want := elemNaive(x.Data.([]float32), s.Data.([]float32), x.Shape, ss, func(v, a float32) float32 {
			if v < 0 {
				return v * a
			}
			return v
		})
		if !slices.Equal(out[0].Shape, x.Shape) || !slices.Equal(out[0].Data.([]float32), want) {
			t.Errorf("PRelu with slope %v differs", ss)
		}
	}
	xi := tensor.From([]int{2, 2}, []int32{-4, 4, -6, 6})
	out, err := runOp(t, "PRelu", 16, 1, nil, xi, tensor.From([]int{2, 1}, []int32{2, 3}))
	if err != nil || !slices.Equal(out[0].Data.([]int32), []int32{-8, 4, -18, 6}) {
		t.Errorf("int32 PRelu = %v, %v", out, err)
	}
	for _, ss := range [][]int{{2, 3, 4, 5, 1}, {3}, {1, 1, 1, 1, 2}} {
		if _, err := runOp(t, "PRelu", 16, 1, nil, x, elemRandF32(r, ss)); !errors.Is(err, ErrInput) {
			t.Errorf("slope %v: %v", ss, err)
		}
	}
}

func TestClip(t *testing.T) {
	x := tensor.From([]int{5}, []float32{-3, -1, 0, 2, float32(math.NaN())})
	lo, hi := tensor.Scalar(float32(-1.5)), tensor.Scalar(float32(1))
	out, err := runOp(t, "Clip", 13, 1, nil, x, lo, hi)
	if g := out[0].Data.([]float32); err != nil || !slices.Equal(g[:4], []float32{-1.5, -1, 0, 1}) || g[4] == g[4] {
		t.Errorf("Clip = %v, %v", out, err)
	}
	// Only max; min greater than max gives max everywhere.
	out, err = runOp(t, "Clip", 13, 1, nil, x, nil, hi)
	if g := out[0].Data.([]float32); err != nil || !slices.Equal(g[:4], []float32{-3, -1, 0, 1}) {
		t.Errorf("Clip max only = %v, %v", out, err)
	}
	out, err = runOp(t, "Clip", 13, 1, nil, x, tensor.Scalar(float32(2)), tensor.Scalar(float32(1)))
	if g := out[0].Data.([]float32); err != nil || !slices.Equal(g[:4], []float32{1, 1, 1, 1}) {
		t.Errorf("Clip min>max = %v, %v", out, err)
	}
	h := tensor.From([]int{3}, tensor.Float32ToHalf[tensor.F16]([]float32{-3, 0.5, 3}))
	out, err = runOp(t, "Clip", 13, 1, nil, h, tensor.Scalar(tensor.F16From(-1)), tensor.Scalar(tensor.F16From(1)))
	if err != nil || out[0].DType != tensor.Float16 || !slices.Equal(out[0].Float64s(), []float64{-1, 0.5, 1}) {
		t.Errorf("FP16 Clip = %v, %v", out, err)
	}
	out, err = runOp(t, "Clip", 13, 1, nil, tensor.From([]int{3}, []uint8{0, 100, 255}), tensor.Scalar(uint8(10)), tensor.Scalar(uint8(200)))
	if err != nil || !slices.Equal(out[0].Data.([]uint8), []uint8{10, 100, 200}) {
		t.Errorf("uint8 Clip = %v, %v", out, err)
	}
	for _, b := range []*tensor.Tensor{tensor.Scalar(int32(1)), tensor.From([]int{2}, []float32{1, 2})} {
		if _, err := runOp(t, "Clip", 13, 1, nil, x, b); !errors.Is(err, ErrInput) {
			t.Errorf("bound %v: %v", b, err)
		}
	}
}

func TestDropout(t *testing.T) {
	x := tensor.From([]int{2, 2}, []float32{1, 2, 3, 4})
	for _, c := range []struct {
		opset int64
		in    []*tensor.Tensor
		mask  tensor.DataType
	}{
		{7, []*tensor.Tensor{x}, tensor.Float32},
		{10, []*tensor.Tensor{x}, tensor.Bool},
		{13, []*tensor.Tensor{x}, tensor.Bool},
		{13, []*tensor.Tensor{x, tensor.Scalar(float32(0.7))}, tensor.Bool},
		{13, []*tensor.Tensor{x, tensor.Scalar(float32(0.7)), tensor.Scalar(false)}, tensor.Bool},
		{22, []*tensor.Tensor{x, tensor.Scalar(float32(0)), tensor.Scalar(true)}, tensor.Bool},
	} {
		out, err := runOp(t, "Dropout", c.opset, 2, nil, c.in...)
		if err != nil {
			t.Fatalf("opset %d: %v", c.opset, err)
		}
		if out[0] != x || out[1].DType != c.mask || !slices.Equal(out[1].Shape, x.Shape) || !slices.Equal(out[1].Float64s(), []float64{1, 1, 1, 1}) {
			t.Errorf("opset %d: outputs %v %v", c.opset, out[0], out[1])
		}
	}
	_, err := runOp(t, "Dropout", 22, 1, nil, x, tensor.Scalar(float32(0.5)), tensor.Scalar(true))
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("training mode: %v", err)
	}
	_, err = runOp(t, "Dropout", 22, 1, nil, x, nil, tensor.Scalar(true))
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("training mode, default ratio: %v", err)
	}
	for _, bad := range [][]*tensor.Tensor{
		{x, nil, tensor.Scalar(int32(1))},
		{x, tensor.From([]int{2}, []float32{0, 0}), tensor.Scalar(true)},
		{tensor.From([]int{1}, []int32{1})},
	} {
		if _, err := runOp(t, "Dropout", 22, 1, nil, bad...); !errors.Is(err, ErrInput) {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

// TestDropoutTrainingRefusedAtLoad loads Dropout with training_mode true:
// refused at load when it and the ratio are constants, at run time when
// training_mode comes with the request.
func TestDropoutTrainingRefusedAtLoad(t *testing.T) {
	f32 := &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float}
	model := func(inits []*onnxpb.Tensor, inputs ...*onnxpb.ValueInfo) []byte {
		g := &onnxpb.Graph{
			Initializers: inits,
			Inputs:       append([]*onnxpb.ValueInfo{{Name: "x", Type: f32}}, inputs...),
			Nodes:        []*onnxpb.Node{{OpType: "Dropout", Name: "d", Inputs: []string{"x", "ratio", "training"}, Outputs: []string{"y"}}},
			Outputs:      []*onnxpb.ValueInfo{{Name: "y", Type: f32}},
		}
		return onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: 22}}, Graph: g})
	}
	ratio := TensorToONNX("ratio", tensor.Scalar(float32(0.25)))
	_, err := Load(model([]*onnxpb.Tensor{ratio, TensorToONNX("training", tensor.Scalar(true))}))
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "training mode with ratio 0.25") {
		t.Errorf("constant training_mode: %v", err)
	}
	m, err := Load(model([]*onnxpb.Tensor{ratio}, &onnxpb.ValueInfo{Name: "training", Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Bool}}))
	if err != nil {
		t.Fatal(err)
	}
	x := tensor.From([]int{2}, []float32{1, 2})
	for training, ok := range map[bool]bool{false: true, true: false} {
		_, err := m.Run(context.Background(), map[string]*tensor.Tensor{"x": x, "training": tensor.Scalar(training)}, nil)
		if (err == nil) != ok || err != nil && !errors.Is(err, ErrUnsupported) {
			t.Errorf("training_mode %v: %v", training, err)
		}
	}
}

// BenchmarkActivations measures the float32 kernels on the shapes the
// issue names (1×256×56×56 for the CNN activations, 128×1024 for the
// transformer ones), each against the float64 path the other types take
// (see benchPair).
//
//	go test ./model -run '^$' -bench Activations -benchtime 20x
func BenchmarkActivations(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	image := elemRandF32(r, []int{1, 256, 56, 56})
	tokens := elemRandF32(r, []int{128, 1024})
	for _, c := range []struct {
		op, name string
		opset    int64
		x        *tensor.Tensor
		f64      func(float64) float64
	}{
		{"Relu", "1x256x56x56", 14, image, func(v float64) float64 { return max(v, 0) }},
		{"HardSigmoid", "1x256x56x56", 22, image, func(v float64) float64 { return max(0, min(1, float64(float32(0.2))*v+0.5)) }},
		{"HardSwish", "1x256x56x56", 22, image, hardSwish},
		{"Sigmoid", "1x256x56x56", 13, image, sigmoid},
		{"Clip", "1x256x56x56", 6, image, func(v float64) float64 { return min(max(v, 0), 6) }},
		{"Tanh", "128x1024", 13, tokens, math.Tanh},
		{"Gelu", "128x1024", 20, tokens, func(v float64) float64 { return 0.5 * v * math.Erfc(-v/math.Sqrt2) }},
		{"Erf", "128x1024", 13, tokens, math.Erf},
		{"Exp", "128x1024", 13, tokens, math.Exp},
	} {
		d, err := lookup("", c.op, c.opset)
		if err != nil {
			b.Fatal(err)
		}
		n := &node{pb: &onnxpb.Node{OpType: c.op, Inputs: []string{"x"}, Outputs: []string{"y"}}, attrs: Attrs{}, opset: c.opset, opts: &Options{Exec: gemm.Default()}, model: &Model{}}
		if c.op == "Clip" {
			n.attrs["min"], n.attrs["max"] = fattr("min", 0), fattr("max", 6)
		}
		n.consts, n.unused = make([]*tensor.Tensor, 1), make([]bool, 1)
		_, op, err := compileNodeWith(d, n)
		if err != nil {
			b.Fatal(err)
		}
		run := runAlone(n, op)
		in := []*tensor.Tensor{c.x}
		b.Run(c.op+"/"+c.name, func(b *testing.B) {
			benchPair(b, func() {
				if _, err := run(in); err != nil {
					b.Fatal(err)
				}
			}, func() {
				if _, err := floatMap(c.op, c.x, c.f64); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
