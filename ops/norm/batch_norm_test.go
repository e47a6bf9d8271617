package norm

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

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

// compileBN compiles BatchNormalization at opset with nOut outputs; with
// consts, scale, B, mean and var are known at load (p).
func compileBN(opset int64, nOut int, consts bool, p [4]*tensor.Tensor, attrs ...*onnxpb.Attribute) (*BatchNorm, error) {
	n := opstest.Node{Op: "BatchNormalization", Opset: opset, Outputs: nOut, Attrs: attrs}
	if consts {
		n.Consts = []*tensor.Tensor{nil, p[0], p[1], p[2], p[3]}
	}
	op, _, err := opstest.Compile(n, 5)
	if err != nil {
		return nil, err
	}
	return op.(*BatchNorm), nil
}

// bnIn is the inputs of a run: the parameters held by a folded node are
// not fed (the graph compiler drops them).
func bnIn(x *tensor.Tensor, b *BatchNorm, p [4]*tensor.Tensor) []*tensor.Tensor {
	if b.Folded() != nil {
		return []*tensor.Tensor{x, nil, nil, nil, nil}
	}
	return []*tensor.Tensor{x, p[0], p[1], p[2], p[3]}
}

// TestBatchNormInference checks inference against the formula, with the
// parameters as constants (folded at load into one multiply-add per
// channel, the constants not read) and as inputs; for every layout the
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
			S = ops.ProdInts(c.shape[2:])
			if !c.spatial {
				C, S = ops.ProdInts(c.shape[1:]), 1
			}
		}
		x := opstest.Normal(r, c.shape...)
		p := [4]*tensor.Tensor{opstest.Normal(r, C), opstest.Normal(r, C), opstest.Normal(r, C), tensor.From([]int{C}, positive(r, C))}
		want := bnReference(x.Float64s(), p[0].Float64s(), p[1].Float64s(), p[2].Float64s(), p[3].Float64s(), C, S, 1e-3)
		var attrs []*onnxpb.Attribute
		if !c.spatial {
			attrs = append(attrs, opstest.AttrInt("spatial", 0))
		}
		attrs = append(attrs, opstest.AttrFloat("epsilon", 1e-3))
		for _, consts := range []bool{true, false} {
			b, err := compileBN(c.opset, 1, consts, p, attrs...)
			if err != nil {
				t.Fatal(err)
			}
			if consts != (b.Folded() != nil) || b.Training() {
				t.Fatalf("%v: constants %v, folded %v, training %v", c.shape, consts, b.Folded() != nil, b.Training())
			}
			out, err := b.Run(opstest.Background(), bnIn(x, b, p))
			if err != nil {
				t.Fatal(err)
			}
			if !ops.EqualShape(out[0].Shape, c.shape) {
				t.Fatalf("shape %v", out[0].Shape)
			}
			opstest.Close(t, "BatchNormalization", out[0].Float64s(), want, 1e-5)
		}
	}
}

// TestBatchNormTraining checks training mode: opset 14's training_mode
// (Y and running statistics, each in its input's type) and, before it,
// extra outputs (running and saved statistics).
func TestBatchNormTraining(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	N, C, S := 3, 2, 5
	x := opstest.Normal(r, N, C, S)
	scale, bias := opstest.Normal(r, C), opstest.Normal(r, C)
	mean, variance := opstest.Normal(r, C), tensor.From([]int{C}, positive(r, C))
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
	mean64, var64 := castTo(mean, tensor.Float64), castTo(variance, tensor.Float64)
	res, err := run(t, 15, "BatchNormalization", 3, []*tensor.Tensor{x, scale, bias, mean64, var64}, opstest.AttrInt("training_mode", 1), opstest.AttrFloat("momentum", 0.8))
	if err != nil {
		t.Fatal(err)
	}
	opstest.Close(t, "training Y", res[0].Float64s(), wantY, 1e-5)
	if res[1].DType != tensor.Float64 || res[2].DType != tensor.Float64 {
		t.Errorf("running statistics are %v and %v, want the type of mean and var", res[1].DType, res[2].DType)
	}
	opstest.Close(t, "running mean", res[1].Float64s(), runMean, 1e-6)
	opstest.Close(t, "running var", res[2].Float64s(), runVar, 1e-6)

	// Opset 9: training mode because the node asks for its statistics.
	b, err := compileBN(9, 5, false, [4]*tensor.Tensor{}, opstest.AttrFloat("momentum", 0.8))
	if err != nil {
		t.Fatal(err)
	}
	if !b.Training() {
		t.Fatal("opset 9 with five outputs is not training")
	}
	res, err = b.Run(opstest.Background(), []*tensor.Tensor{x, scale, bias, mean, variance})
	if err != nil {
		t.Fatal(err)
	}
	opstest.Close(t, "opset 9 Y", res[0].Float64s(), wantY, 1e-5)
	opstest.Close(t, "opset 9 running mean", res[1].Float64s(), runMean, 1e-6)
	opstest.Close(t, "opset 9 running var", res[2].Float64s(), runVar, 1e-6)
	opstest.Close(t, "opset 9 saved mean", res[3].Float64s(), bm, 1e-6)
	opstest.Close(t, "opset 9 saved var", res[4].Float64s(), bv, 1e-6)
}

// TestBatchNormRefusals: what a model or a request gets wrong.
func TestBatchNormRefusals(t *testing.T) {
	p := [4]*tensor.Tensor{tensor.From([]int{2}, []float32{1, 1}), tensor.From([]int{2}, []float32{0, 0}), tensor.From([]int{2}, []float32{0, 0}), tensor.From([]int{2}, []float32{1, 1})}
	for _, c := range []struct {
		opset int64
		outs  int
		attrs []*onnxpb.Attribute
		want  string
	}{
		{15, 3, nil, "only with training_mode=1"},
		{9, 1, []*onnxpb.Attribute{opstest.AttrInt("spatial", 0)}, `"spatial" was removed after opset 8`},
		{13, 1, []*onnxpb.Attribute{opstest.AttrInt("training_mode", 1)}, `"training_mode" is defined from opset 14`},
		{15, 4, nil, "has 4 outputs"},
	} {
		_, err := compileBN(c.opset, c.outs, true, p, c.attrs...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("opset %d %d outputs: %v, want %q", c.opset, c.outs, err, c.want)
		}
	}
	for _, consts := range []bool{true, false} {
		b, err := compileBN(15, 1, consts, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			x    *tensor.Tensor
			want string
		}{
			{tensor.From([]int{1, 3, 2}, make([]float32, 6)), "3 channels, its scale 2"},
			{tensor.Scalar(float32(1)), "rank 1 or more"},
		} {
			if _, err := b.Run(opstest.Background(), bnIn(c.x, b, p)); !errors.Is(err, ops.ErrInput) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("constants %v, x %v: %v, want an input error with %q", consts, c.x.Shape, err, c.want)
			}
		}
		if !consts {
			in := bnIn(tensor.From([]int{1, 2}, []float32{1, 2}), b, p)
			in[4] = tensor.From([]int{3}, []float32{1, 1, 1})
			if _, err := b.Run(opstest.Background(), in); !errors.Is(err, ops.ErrInput) {
				t.Errorf("var of 3 values for 2 channels: %v", err)
			}
		}
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
	x := opstest.Normal(r, 1, C, 56, 56)
	p := [4]*tensor.Tensor{opstest.Normal(r, C), opstest.Normal(r, C), opstest.Normal(r, C), tensor.From([]int{C}, positive(r, C))}
	for _, consts := range []bool{true, false} {
		name := "folded"
		if !consts {
			name = "inputs"
		}
		bn, err := compileBN(15, 1, consts, p)
		if err != nil {
			b.Fatal(err)
		}
		in := bnIn(x, bn, p)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(4 * x.Len()))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bn.Run(opstest.Background(), in); err != nil {
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
