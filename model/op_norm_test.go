package model

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// pnPositive returns n values in [0.5, 2).
func pnPositive(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 0.5 + 1.5*r.Float32()
	}
	return v
}

// bnReference is BatchNormalization written as ONNX states it, per
// element: scale·(x − mean)/√(var + ε) + B, for x laid out [N, C, S].
func bnReference(x, scale, bias, mean, variance []float64, C, S int, eps float64) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		c := i / S % C
		y[i] = scale[c]*(v-mean[c])/math.Sqrt(variance[c]+eps) + bias[c]
	}
	return y
}

func pnClose(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !(math.Abs(got[i]-want[i]) <= tol*(1+math.Abs(want[i]))) {
			t.Fatalf("%s: element %d = %v, want %v", what, i, got[i], want[i])
		}
	}
}

func bnInputs(consts bool, p [4]*tensor.Tensor) []pnInput {
	ins := []pnInput{{name: "x", dt: tensor.Float32}}
	for i, name := range []string{"scale", "B", "mean", "var"} {
		in := pnInput{name: name, dt: p[i].DType}
		if consts {
			in.init = p[i]
		}
		ins = append(ins, in)
	}
	return ins
}

// TestBatchNormInference checks inference against the formula, with the
// parameters as constants (folded at load into one multiply-add per
// channel, the constants dropped) and as inputs; for every layout the
// opsets allow.
func TestBatchNormInference(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, c := range []struct {
		opset   int64
		shape   []int
		spatial bool
	}{
		{15, []int{2, 3, 4, 5}, true},
		{15, []int{2, 5}, true},
		{15, []int{7}, true}, // rank 1: one channel
		{9, []int{1, 4, 3, 3, 2}, true},
		{7, []int{2, 3, 4}, false}, // per activation: 12 "channels"
		{15, []int{0, 3, 4}, true},
	} {
		C, S := 1, 1
		if len(c.shape) > 1 {
			C = c.shape[1]
			S = prodInts(c.shape[2:])
			if !c.spatial {
				C, S = prodInts(c.shape[1:]), 1
			}
		}
		x := pnRandom(r, c.shape...)
		p := [4]*tensor.Tensor{
			tensor.From([]int{C}, pnRandom(r, C).Data.([]float32)),
			tensor.From([]int{C}, pnRandom(r, C).Data.([]float32)),
			tensor.From([]int{C}, pnRandom(r, C).Data.([]float32)),
			tensor.From([]int{C}, pnPositive(r, C)),
		}
		want := bnReference(x.Float64s(), p[0].Float64s(), p[1].Float64s(), p[2].Float64s(), p[3].Float64s(), C, S, 1e-3)
		var attrs []*onnxpb.Attribute
		if !c.spatial {
			attrs = append(attrs, pnInt("spatial", 0))
		}
		attrs = append(attrs, pnFloat("epsilon", 1e-3))
		for _, consts := range []bool{true, false} {
			m, err := pnModel(c.opset, "BatchNormalization", bnInputs(consts, p), []string{"y"}, attrs...)
			if err != nil {
				t.Fatal(err)
			}
			at := m.Steps()[0].Params.(*BatchNormAttrs)
			if consts != (at.Folded != nil) || consts && len(m.constants) != 0 {
				t.Fatalf("%v: constants %v, folded %v, constants kept %d", c.shape, consts, at.Folded != nil, len(m.constants))
			}
			in := map[string]*tensor.Tensor{"x": x}
			if !consts {
				for i, name := range []string{"scale", "B", "mean", "var"} {
					in[name] = p[i]
				}
			}
			res, err := m.Run(context.Background(), in, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !equalShape(res["y"].Shape, c.shape) {
				t.Fatalf("shape %v", res["y"].Shape)
			}
			pnClose(t, "BatchNormalization", res["y"].Float64s(), want, 1e-5)
		}
	}
}

// TestBatchNormTraining checks training mode: opset 14's training_mode
// (Y and running statistics, each in its input's type) and, before it,
// extra outputs (running and saved statistics).
func TestBatchNormTraining(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	N, C, S := 3, 2, 5
	x := pnRandom(r, N, C, S)
	scale, bias := pnRandom(r, C), pnRandom(r, C)
	mean, variance := pnRandom(r, C), tensor.From([]int{C}, pnPositive(r, C))
	xv := x.Float64s()
	bm, bv := make([]float64, C), make([]float64, C)
	for c := 0; c < C; c++ {
		var vals []float64
		for n := 0; n < N; n++ {
			vals = append(vals, xv[(n*C+c)*S:(n*C+c+1)*S]...)
		}
		for _, v := range vals {
			bm[c] += v / float64(len(vals))
		}
		for _, v := range vals {
			bv[c] += (v - bm[c]) * (v - bm[c]) / float64(len(vals))
		}
	}
	wantY := bnReference(xv, scale.Float64s(), bias.Float64s(), bm, bv, C, S, 1e-5)
	runMean, runVar := make([]float64, C), make([]float64, C)
	for c := range runMean {
		runMean[c] = mean.Float64s()[c]*0.8 + bm[c]*0.2
		runVar[c] = variance.Float64s()[c]*0.8 + bv[c]*0.2
	}
	// Opset 15: mean and var may have their own type (T2): FP64 here.
	mean64, _ := castTo(mean, tensor.Float64)
	var64, _ := castTo(variance, tensor.Float64)
	ins := []pnInput{{name: "x", dt: tensor.Float32}, {name: "s", dt: tensor.Float32}, {name: "b", dt: tensor.Float32}, {name: "m", dt: tensor.Float64}, {name: "v", dt: tensor.Float64}}
	m, err := pnModel(15, "BatchNormalization", ins, []string{"y", "rm", "rv"}, pnInt("training_mode", 1), pnFloat("momentum", 0.8))
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Run(context.Background(), map[string]*tensor.Tensor{"x": x, "s": scale, "b": bias, "m": mean64, "v": var64}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pnClose(t, "training Y", res["y"].Float64s(), wantY, 1e-5)
	if res["rm"].DType != tensor.Float64 || res["rv"].DType != tensor.Float64 {
		t.Errorf("running statistics are %v and %v, want the type of mean and var", res["rm"].DType, res["rv"].DType)
	}
	pnClose(t, "running mean", res["rm"].Float64s(), runMean, 1e-6)
	pnClose(t, "running var", res["rv"].Float64s(), runVar, 1e-6)

	// Opset 9: training mode because the node asks for its statistics.
	ins = []pnInput{{name: "x", dt: tensor.Float32}, {name: "s", dt: tensor.Float32}, {name: "b", dt: tensor.Float32}, {name: "m", dt: tensor.Float32}, {name: "v", dt: tensor.Float32}}
	m, err = pnModel(9, "BatchNormalization", ins, []string{"y", "rm", "rv", "sm", "sv"}, pnFloat("momentum", 0.8))
	if err != nil {
		t.Fatal(err)
	}
	if !m.Steps()[0].Params.(*BatchNormAttrs).Training {
		t.Fatal("opset 9 with five outputs is not training")
	}
	res, err = m.Run(context.Background(), map[string]*tensor.Tensor{"x": x, "s": scale, "b": bias, "m": mean, "v": variance}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pnClose(t, "opset 9 Y", res["y"].Float64s(), wantY, 1e-5)
	pnClose(t, "opset 9 running mean", res["rm"].Float64s(), runMean, 1e-6)
	pnClose(t, "opset 9 running var", res["rv"].Float64s(), runVar, 1e-6)
	pnClose(t, "opset 9 saved mean", res["sm"].Float64s(), bm, 1e-6)
	pnClose(t, "opset 9 saved var", res["sv"].Float64s(), bv, 1e-6)
}

// TestBatchNormRefusals: what a model or a request gets wrong.
func TestBatchNormRefusals(t *testing.T) {
	p := [4]*tensor.Tensor{tensor.From([]int{2}, []float32{1, 1}), tensor.From([]int{2}, []float32{0, 0}), tensor.From([]int{2}, []float32{0, 0}), tensor.From([]int{2}, []float32{1, 1})}
	for _, c := range []struct {
		opset int64
		outs  []string
		attrs []*onnxpb.Attribute
		want  string
	}{
		{15, []string{"y", "rm", "rv"}, nil, "only with training_mode=1"},
		{9, []string{"y"}, []*onnxpb.Attribute{pnInt("spatial", 0)}, `"spatial" was removed after opset 8`},
		{13, []string{"y"}, []*onnxpb.Attribute{pnInt("training_mode", 1)}, `"training_mode" is defined from opset 14`},
		{15, []string{"y", "a", "b", "c"}, nil, "has 4 outputs"},
	} {
		_, err := pnModel(c.opset, "BatchNormalization", bnInputs(true, p), c.outs, c.attrs...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("opset %d %v: %v, want %q", c.opset, c.outs, err, c.want)
		}
	}
	for _, consts := range []bool{true, false} {
		m, err := pnModel(15, "BatchNormalization", bnInputs(consts, p), []string{"y"})
		if err != nil {
			t.Fatal(err)
		}
		in := map[string]*tensor.Tensor{}
		if !consts {
			for i, name := range []string{"scale", "B", "mean", "var"} {
				in[name] = p[i]
			}
		}
		for _, c := range []struct {
			x    *tensor.Tensor
			want string
		}{
			{tensor.From([]int{1, 3, 2}, make([]float32, 6)), "3 channels, its scale 2"},
			{tensor.Scalar(float32(1)), "rank 1 or more"},
		} {
			in["x"] = c.x
			if _, err := m.Run(context.Background(), in, nil); !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("constants %v, x %v: %v, want an input error with %q", consts, c.x.Shape, err, c.want)
			}
		}
		if !consts {
			in["x"] = tensor.From([]int{1, 2}, []float32{1, 2})
			in["var"] = tensor.From([]int{3}, []float32{1, 1, 1})
			if _, err := m.Run(context.Background(), in, nil); !errors.Is(err, ErrInput) {
				t.Errorf("var of 3 values for 2 channels: %v", err)
			}
		}
	}
}

// TestNormTypes runs every normalization over FP64, FP16 and BF16: the
// float32 result in that type.
func TestNormTypes(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	x := pnRandom(r, 2, 4, 3)
	scale4, bias4 := pnRandom(r, 4), pnRandom(r, 4)
	scale2, bias2 := pnRandom(r, 2), pnRandom(r, 2)
	for _, c := range []struct {
		opset  int64
		op     string
		params []*tensor.Tensor
		attrs  []*onnxpb.Attribute
	}{
		{15, "BatchNormalization", []*tensor.Tensor{scale4, bias4, pnRandom(r, 4), tensor.From([]int{4}, pnPositive(r, 4))}, nil},
		{22, "InstanceNormalization", []*tensor.Tensor{scale4, bias4}, nil},
		{21, "GroupNormalization", []*tensor.Tensor{scale4, bias4}, []*onnxpb.Attribute{pnInt("num_groups", 2)}},
		{18, "GroupNormalization", []*tensor.Tensor{scale2, bias2}, []*onnxpb.Attribute{pnInt("num_groups", 2)}},
		{13, "LRN", nil, []*onnxpb.Attribute{pnInt("size", 3)}},
		{13, "MeanVarianceNormalization", nil, []*onnxpb.Attribute{pnInts("axes", 0, 2)}},
		{22, "LpNormalization", nil, []*onnxpb.Attribute{pnInt("axis", 1)}},
	} {
		var want []float64
		for _, dt := range []tensor.DataType{tensor.Float32, tensor.Float64, tensor.Float16, tensor.BFloat16} {
			xt, _ := castTo(x, dt)
			ins := []pnInput{{name: "x", dt: dt}}
			in := map[string]*tensor.Tensor{"x": xt}
			for i, p := range c.params {
				name := string(rune('a' + i))
				pt, _ := castTo(p, dt)
				ins = append(ins, pnInput{name: name, dt: dt})
				in[name] = pt
			}
			m, err := pnModel(c.opset, c.op, ins, []string{"y"}, c.attrs...)
			if err != nil {
				t.Fatal(err)
			}
			res, err := m.Run(context.Background(), in, nil)
			if err != nil {
				t.Fatalf("%s %v: %v", c.op, dt, err)
			}
			y := res["y"]
			if y.DType != dt || !equalShape(y.Shape, x.Shape) {
				t.Fatalf("%s %v: output %v %v", c.op, dt, y.DType, y.Shape)
			}
			if dt == tensor.Float32 {
				want = y.Float64s()
				continue
			}
			// Half inputs are rounded before the op and its result after:
			// a few units of the type's precision.
			tol := map[tensor.DataType]float64{tensor.Float64: 1e-5, tensor.Float16: 1e-2, tensor.BFloat16: 6e-2}[dt]
			for i, g := range y.Float64s() {
				if math.Abs(g-want[i]) > tol*(1+math.Abs(want[i])) {
					t.Fatalf("%s %v: element %d = %v, float32 gives %v", c.op, dt, i, g, want[i])
				}
			}
		}
		xi := tensor.From([]int{2, 4, 3}, make([]int32, 24))
		ins := []pnInput{{name: "x", dt: tensor.Int32}}
		in := map[string]*tensor.Tensor{"x": xi}
		for i, p := range c.params {
			name := string(rune('a' + i))
			ins = append(ins, pnInput{name: name, dt: tensor.Float32})
			in[name] = p
		}
		m, err := pnModel(c.opset, c.op, ins, []string{"y"}, c.attrs...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Run(context.Background(), in, nil); !errors.Is(err, ErrInput) {
			t.Errorf("%s over INT32: %v, want an input error", c.op, err)
		}
	}
}

// TestInstanceAndGroupNorm checks both against direct per-group
// statistics, and GroupNormalization-18 (a scale per group) against -21
// (a scale per channel) given the same scales.
func TestInstanceAndGroupNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	N, C, S, G := 2, 6, 5, 3
	x := pnRandom(r, N, C, S)
	xv := x.Float64s()
	scaleG, biasG := pnRandom(r, G), pnRandom(r, G)
	scaleC, biasC := make([]float32, C), make([]float32, C)
	for c := 0; c < C; c++ {
		scaleC[c], biasC[c] = scaleG.Data.([]float32)[c/(C/G)], biasG.Data.([]float32)[c/(C/G)]
	}
	want := func(groups int, scale, bias []float32, eps float64) []float64 {
		y := make([]float64, len(xv))
		per := C / groups * S
		for blk := 0; blk < N*groups; blk++ {
			vals := xv[blk*per : (blk+1)*per]
			var m, v float64
			for _, e := range vals {
				m += e / float64(per)
			}
			for _, e := range vals {
				v += (e - m) * (e - m) / float64(per)
			}
			for j, e := range vals {
				c := (blk*per + j) / S % C
				y[blk*per+j] = float64(scale[c])*(e-m)/math.Sqrt(v+eps) + float64(bias[c])
			}
		}
		return y
	}
	run := func(opset int64, op string, scale, bias *tensor.Tensor, attrs ...*onnxpb.Attribute) (*tensor.Tensor, error) {
		m, err := pnModel(opset, op, []pnInput{{name: "x", dt: tensor.Float32}, {name: "s", dt: tensor.Float32}, {name: "b", dt: tensor.Float32}}, []string{"y"}, attrs...)
		if err != nil {
			t.Fatal(err)
		}
		res, err := m.Run(context.Background(), map[string]*tensor.Tensor{"x": x, "s": scale, "b": bias}, nil)
		if err != nil {
			return nil, err
		}
		return res["y"], nil
	}
	sc, bc := tensor.From([]int{C}, scaleC), tensor.From([]int{C}, biasC)
	y21, err := run(21, "GroupNormalization", sc, bc, pnInt("num_groups", int64(G)), pnFloat("epsilon", 1e-3))
	if err != nil {
		t.Fatal(err)
	}
	pnClose(t, "GroupNormalization-21", y21.Float64s(), want(G, scaleC, biasC, 1e-3), 1e-5)
	y18, err := run(18, "GroupNormalization", scaleG, biasG, pnInt("num_groups", int64(G)), pnFloat("epsilon", 1e-3))
	if err != nil {
		t.Fatal(err)
	}
	pnClose(t, "GroupNormalization-18", y18.Float64s(), y21.Float64s(), 1e-6)
	yi, err := run(22, "InstanceNormalization", sc, bc)
	if err != nil {
		t.Fatal(err)
	}
	pnClose(t, "InstanceNormalization", yi.Float64s(), want(C, scaleC, biasC, 1e-5), 1e-5)

	if _, err := run(21, "GroupNormalization", sc, bc, pnInt("num_groups", 4)); !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "do not split into 4 groups") {
		t.Errorf("6 channels in 4 groups: %v", err)
	}
	if _, err := run(18, "GroupNormalization", sc, bc, pnInt("num_groups", int64(G))); !errors.Is(err, ErrInput) {
		t.Errorf("GroupNormalization-18 with a scale per channel: %v", err)
	}
	if _, err := run(22, "InstanceNormalization", scaleG, biasG); !errors.Is(err, ErrInput) {
		t.Errorf("InstanceNormalization with 3 scales for 6 channels: %v", err)
	}
	for _, c := range []struct {
		opset int64
		attrs []*onnxpb.Attribute
		want  string
	}{
		{21, nil, "needs num_groups"},
		{21, []*onnxpb.Attribute{pnInt("num_groups", 2), pnInt("stash_type", 7)}, "stash_type 7"},
		{18, []*onnxpb.Attribute{pnInt("num_groups", 2), pnInt("stash_type", 1)}, `"stash_type" is defined from opset 21`},
	} {
		_, err := pnModel(c.opset, "GroupNormalization", []pnInput{{name: "x", dt: tensor.Float32}, {name: "s", dt: tensor.Float32}, {name: "b", dt: tensor.Float32}}, []string{"y"}, c.attrs...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("opset %d %v: %v, want %q", c.opset, c.attrs, err, c.want)
		}
	}
	// Zero channels or images: empty outputs, no division by zero.
	empty := tensor.From([]int{0, 6, 5}, []float32{})
	m, _ := pnModel(22, "InstanceNormalization", []pnInput{{name: "x", dt: tensor.Float32}, {name: "s", dt: tensor.Float32}, {name: "b", dt: tensor.Float32}}, []string{"y"})
	if res, err := m.Run(context.Background(), map[string]*tensor.Tensor{"x": empty, "s": sc, "b": bc}, nil); err != nil || res["y"].Len() != 0 {
		t.Errorf("empty batch: %v", err)
	}
	noC := tensor.From([]int{2, 0, 5}, []float32{})
	if res, err := m.Run(context.Background(), map[string]*tensor.Tensor{"x": noC, "s": tensor.From([]int{0}, []float32{}), "b": tensor.From([]int{0}, []float32{})}, nil); err != nil || res["y"].Len() != 0 {
		t.Errorf("no channels: %v", err)
	}
}

// TestLRNAndLpNormAndMVN checks the three against their formulas,
// written out directly.
func TestLRNAndLpNormAndMVN(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	N, C, S := 2, 7, 3
	x := pnRandom(r, N, C, S)
	xv := x.Float64s()
	for _, beta := range []float32{0.75, 0.6} {
		for _, size := range []int64{1, 4, 5} {
			got, err := pnRun(t, 13, "LRN", x, 1, pnInt("size", size), pnFloat("alpha", 0.3), pnFloat("beta", beta), pnFloat("bias", 1.5))
			if err != nil {
				t.Fatal(err)
			}
			want := make([]float64, len(xv))
			for n := 0; n < N; n++ {
				for c := 0; c < C; c++ {
					for s := 0; s < S; s++ {
						var sq float64
						for c2 := c - int(size-1)/2; c2 <= c+int(size)-1-int(size-1)/2; c2++ {
							if c2 >= 0 && c2 < C {
								v := xv[(n*C+c2)*S+s]
								sq += v * v
							}
						}
						i := (n*C+c)*S + s
						want[i] = xv[i] / math.Pow(1.5+0.3/float64(size)*sq, float64(beta))
					}
				}
			}
			pnClose(t, "LRN", got[0].Float64s(), want, 1e-6)
		}
	}
	// LpNormalization along axis 1, with one all-zero vector.
	xz := x.Clone()
	for c := 0; c < C; c++ {
		xz.Data.([]float32)[c*S+1] = 0 // image 0, position 1
	}
	xzv := xz.Float64s()
	for _, p := range []int64{1, 2} {
		got, err := pnRun(t, 22, "LpNormalization", xz, 1, pnInt("axis", 1), pnInt("p", p))
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float64, len(xzv))
		for n := 0; n < N; n++ {
			for s := 0; s < S; s++ {
				var norm float64
				for c := 0; c < C; c++ {
					v := xzv[(n*C+c)*S+s]
					if p == 1 {
						norm += math.Abs(v)
					} else {
						norm += v * v
					}
				}
				if p == 2 {
					norm = math.Sqrt(norm)
				}
				for c := 0; c < C; c++ {
					if norm != 0 {
						want[(n*C+c)*S+s] = xzv[(n*C+c)*S+s] / norm
					}
				}
			}
		}
		pnClose(t, "LpNormalization", got[0].Float64s(), want, 1e-6)
	}
	// MeanVarianceNormalization over axes {0, -1}: statistics per channel.
	got, err := pnRun(t, 13, "MeanVarianceNormalization", x, 1, pnInts("axes", 0, -1))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, len(xv))
	for c := 0; c < C; c++ {
		var m, v float64
		for n := 0; n < N; n++ {
			for s := 0; s < S; s++ {
				m += xv[(n*C+c)*S+s] / float64(N*S)
			}
		}
		for n := 0; n < N; n++ {
			for s := 0; s < S; s++ {
				d := xv[(n*C+c)*S+s] - m
				v += d * d / float64(N*S)
			}
		}
		for n := 0; n < N; n++ {
			for s := 0; s < S; s++ {
				want[(n*C+c)*S+s] = (xv[(n*C+c)*S+s] - m) / (math.Sqrt(v) + 1e-9)
			}
		}
	}
	pnClose(t, "MeanVarianceNormalization", got[0].Float64s(), want, 1e-6)

	for _, c := range []struct {
		op    string
		x     *tensor.Tensor
		attrs []*onnxpb.Attribute
	}{
		{"LRN", tensor.From([]int{3}, []float32{1, 2, 3}), []*onnxpb.Attribute{pnInt("size", 3)}},
		{"LpNormalization", tensor.Scalar(float32(1)), nil},
		{"LpNormalization", x, []*onnxpb.Attribute{pnInt("axis", 3)}},
		{"MeanVarianceNormalization", x, nil}, // default axes 0, 2, 3 need rank 4
	} {
		if _, err := pnRun(t, 22, c.op, c.x, 1, c.attrs...); !errors.Is(err, ErrInput) {
			t.Errorf("%s %v %v: %v, want an input error", c.op, c.x.Shape, c.attrs, err)
		}
	}
	for _, c := range []struct {
		op    string
		attrs []*onnxpb.Attribute
		want  string
	}{
		{"LRN", nil, "needs size"},
		{"LRN", []*onnxpb.Attribute{pnInt("size", 0)}, "needs size"},
		{"LpNormalization", []*onnxpb.Attribute{pnInt("p", 3)}, "p = 3"},
	} {
		_, err := pnModel(22, c.op, []pnInput{{name: "x", dt: tensor.Float32}}, []string{"y"}, c.attrs...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v, want %q", c.op, c.attrs, err, c.want)
		}
	}
}

// TestAffineChannelsUnrolled checks the 4-wide batch-normalization loop
// against one element at a time, for every tail length.
func TestAffineChannelsUnrolled(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 14))
	for size := 0; size <= 13; size++ {
		C := 3
		x := pnRandom(r, 2*C*size).Data.([]float32)
		a, b := pnRandom(r, C).Data.([]float32), pnRandom(r, C).Data.([]float32)
		got := affineChannels(x, a, b, size)
		for i, v := range x {
			c := i / size % C
			if want := v*a[c] + b[c]; got[i] != want {
				t.Fatalf("size %d: element %d = %v, want %v", size, i, got[i], want)
			}
		}
	}
	if got := affineChannels([]float32{}, []float32{}, []float32{}, 4); len(got) != 0 {
		t.Error("no channels")
	}
	if !slices.Equal(affinePlanes([]float32{1, 2, 3, 4}, []float64{2, 3}, []float64{1, 0}, 2), []float32{3, 5, 9, 12}) {
		t.Error("affinePlanes")
	}
}

// BenchmarkBatchNorm is inference BatchNormalization over 1×256×56×56
// (a ResNet-50 stage-1 shape): folded at load (constants), with the
// parameters as inputs (coefficients per run, same loop), a fresh copy of
// the input (the memory floor) and the formula per element as ONNX
// states it.
func BenchmarkBatchNorm(b *testing.B) {
	r := rand.New(rand.NewPCG(15, 15))
	const C, S = 256, 56 * 56
	x := pnRandom(r, 1, C, 56, 56)
	p := [4]*tensor.Tensor{pnRandom(r, C), pnRandom(r, C), pnRandom(r, C), tensor.From([]int{C}, pnPositive(r, C))}
	for _, consts := range []bool{true, false} {
		name := "folded"
		if !consts {
			name = "inputs"
		}
		m, err := pnModel(15, "BatchNormalization", bnInputs(consts, p), []string{"y"})
		if err != nil {
			b.Fatal(err)
		}
		in := map[string]*tensor.Tensor{"x": x}
		if !consts {
			for i, n := range []string{"scale", "B", "mean", "var"} {
				in[n] = p[i]
			}
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(4 * x.Len()))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Run(context.Background(), in, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("copy", func(b *testing.B) { // the memory floor: a fresh output, written once
		xs := x.Data.([]float32)
		b.SetBytes(int64(4 * x.Len()))
		for b.Loop() {
			y := make([]float32, len(xs))
			copy(y, xs)
		}
	})
	b.Run("formula", func(b *testing.B) {
		xs := x.Data.([]float32)
		s, bb, mm, vv := p[0].Data.([]float32), p[1].Data.([]float32), p[2].Data.([]float32), p[3].Data.([]float32)
		b.SetBytes(int64(4 * x.Len()))
		for b.Loop() {
			y := make([]float32, len(xs))
			for i, v := range xs {
				c := i / S
				y[i] = s[c]*(v-mm[c])/float32(math.Sqrt(float64(vv[c]+1e-5))) + bb[c]
			}
		}
	})
}
