package matmul

import (
	"errors"
	"fmt"
	"sync"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// Linear is a product x·W by a constant 2-D float32 weight W (K×N),
// prepared at load: quantized and packed for the int8 kernels, or packed
// for the float kernels. It runs on the engine of the Context it is
// applied with.
type Linear struct {
	k, n int
	q    *gemm.QWeights
	f    *gemm.FWeights
	act  *gemm.Activations // how q's activations quantize (nil: per row)

	// For backward passes (builds with the autodiff tag): the weight as
	// loaded, and Wᵀ packed on first use.
	wq    *quant.Weights
	wf    []float32
	tOnce sync.Once
	tq    *gemm.QWeights
	tf    *gemm.FWeights
	tErr  error
}

// NewLinear prepares w, the constant weight (K×N float32) of node n's
// products x·w, taken from n's input wi (its value, or its transpose as
// Gemm's transB has it). qdq, when not nil, is the integer weight w was
// dequantized from (n.QDQInput(wi), laid out as w is): a model loaded
// with quantization runs it on the int8 kernels as it is. Otherwise a
// model loaded with quantization quantizes a weight of at least
// ops.MinQuantizedWeights values with its scheme, and the rest run on the
// float kernels. A product the compiler's quantization policy keeps in
// float32 (n.KeepFloat) runs on the float kernels, its layer saying why.
// An int8 product quantizes its activations as n.Activations says: per
// row by default, or with the per-tensor parameters a calibration fixed,
// its layer then saying "(static activations)".
//
// NewLinear tells n's compiler that the operator holds input wi
// (n.HoldInputs) and reports the product among the model's layers
// (n.AddLayer).
func NewLinear(n *ops.Node, wi int, w *tensor.Tensor, qdq *ops.QDQWeight) (*Linear, error) {
	data, ok := w.Data.([]float32)
	if !ok || w.Rank() != 2 {
		return nil, fmt.Errorf("matmul: a constant weight must be a 2-D FP32 tensor, got %v%s", w.DType, tensor.ShapeString(w.Shape))
	}
	k, cols := w.Shape[0], w.Shape[1]
	if qdq != nil && (qdq.Rows != k || qdq.Cols != cols) {
		return nil, fmt.Errorf("matmul: %d×%d integer weights for a %d×%d weight", qdq.Rows, qdq.Cols, k, cols)
	}
	l := &Linear{k: k, n: cols}
	kernels := "float32"
	n.HoldInputs(wi) // the weight lives in l from here on
	iw := intWeightsOf(qdq)
	quantize := n.Quantize && k <= gemm.MaxQK && (iw != nil || k*cols >= ops.MinQuantizedWeights)
	if keep := n.KeepFloat(); quantize && keep != "" {
		quantize, kernels = false, "float32 ("+keep+")"
	}
	if quantize && iw != nil {
		var err error
		if nw := iw.narrow(); nw != nil {
			if l.q, err = gemm.PackQ(nw); err != nil {
				return nil, err
			}
			if dispatch.AutodiffBuilt {
				l.wq = nw
			}
		} else { // wider than int8 (zero points, uint8): in parts
			if l.q, err = gemm.PackQInt(iw.K, iw.N, iw.Q, iw.Scheme, iw.Scales); err != nil {
				return nil, err
			}
			if dispatch.AutodiffBuilt {
				l.wf = data // backward runs through the dequantized weights
			}
		}
		kernels = "int8 " + iw.Scheme.String() + " (QDQ weights)"
	} else if quantize {
		qw, err := quant.QuantizeWeights(data, k, cols, n.Scheme)
		if err != nil {
			name := ""
			if wi >= 0 && wi < len(n.Inputs) {
				name = n.Inputs[wi]
			}
			return nil, fmt.Errorf("quantizing weight %q: %w", name, err)
		}
		if l.q, err = gemm.PackQ(qw); err != nil {
			return nil, err
		}
		if dispatch.AutodiffBuilt {
			l.wq = qw
		}
		kernels = "int8 " + n.Scheme.String()
	} else {
		l.f = gemm.PackF(k, cols, data, cols)
		if dispatch.AutodiffBuilt {
			l.wf = data
		}
		n.AddLayer(k, cols, kernels)
		return l, nil
	}
	if l.act = n.Activations(); l.act.Static() {
		if iw != nil {
			kernels = "int8 " + iw.Scheme.String() + " (QDQ weights, static activations)"
		} else {
			kernels += " (static activations)"
		}
	}
	n.AddLayer(k, cols, kernels)
	return l, nil
}

// K and N return W's shape.
func (l *Linear) K() int { return l.k }
func (l *Linear) N() int { return l.n }

// Quantized reports whether W runs on the int8 kernels.
func (l *Linear) Quantized() bool { return l.q != nil }

// Apply computes a·W on c's engine for float32 a of shape [..., K] (or
// [K]): a new tensor of shape [..., N], whose header and shape are c's
// run's (ops.Context.NewSingle): the run's next steps may read it, and
// the graph executor copies the header of an output it returns.
func (l *Linear) Apply(c *ops.Context, a *tensor.Tensor) (*tensor.Tensor, error) {
	return l.ApplyFinish(c, a, nil)
}

// ApplyFinish is Apply whose product's rows are finished as fin says
// (gemm.Finish: a bias, a residual, a clamp), each row tile as the
// kernels write it rather than in a pass of its own after the product;
// nil: not at all. A product over K = 0 (zeros) is not finished: the
// caller finishes it.
func (l *Linear) ApplyFinish(c *ops.Context, a *tensor.Tensor, fin *gemm.Finish) (*tensor.Tensor, error) {
	ad, ok := a.Data.([]float32)
	if !ok {
		return nil, ops.InputErrorf("MatMul with a FP32 weight takes FP32 input, got %v", a.DType)
	}
	if a.Rank() == 0 || a.Shape[a.Rank()-1] != l.k {
		return nil, ops.InputErrorf("MatMul inner dimensions differ: %s × [%d,%d]", tensor.ShapeString(a.Shape), l.k, l.n)
	}
	m := len(ad) / max(l.k, 1)
	if l.k == 0 {
		m, _ = tensor.NumElements(a.Shape[:a.Rank()-1])
	}
	// The output's header and shape are the run's Single: a small
	// model's products run by the thousand a second.
	y := c.NewSingle(a.Rank())
	shape := y.Shape()
	copy(shape, a.Shape[:a.Rank()-1])
	shape[len(shape)-1] = l.n
	size, err := tensor.NumElements(shape)
	if err != nil {
		return nil, err
	}
	out := c.Float32Output(size) // the product writes every element
	if m == 0 || l.k == 0 || l.n == 0 {
		// an empty product, or a sum over nothing: zeros of the right shape
		clear(out)
		return y.Float32s(out)[0], nil
	}
	e := c.Engine()
	switch {
	case l.q != nil:
		err = e.QMatMulAsFinish(ad, m, l.q, out, l.act, fin)
	case fin != nil:
		err = e.MatMulStridedFinish(ad, m, l.k, l.f, out, l.n, fin)
	default:
		err = e.MatMul(ad, m, l.f, out)
	}
	if err != nil {
		if errors.Is(err, gemm.ErrNotFinite) {
			return nil, ops.InputErrorf("%v", err)
		}
		return nil, err
	}
	return y.Float32s(out)[0], nil
}

// Weighted is implemented by the operators of this package that multiply
// by a constant weight the kernels hold: MatMul and Gemm, and quantserve's
// Linear, whose weight (input 1) is a constant 2-D float32 tensor.
type Weighted interface {
	// Weight returns the weight, or nil when the operator multiplies by
	// an input it reads at run time.
	Weight() *Linear
}

// WeightOf returns the constant weight op holds (see Weighted), or nil.
func WeightOf(op ops.Operator) *Linear {
	if w, ok := op.(Weighted); ok {
		return w.Weight()
	}
	return nil
}

// intWeights are K×N integer weights (values less zero points) with
// per-tensor or per-channel scales: W = Q·scale.
type intWeights struct {
	K, N   int
	Q      []int32
	Scheme quant.Scheme
	Scales []float32
}

// intWeightsOf returns the K×N weights of a product x·W by w (nil: none),
// or nil when the scales run along K (not a per-channel layout).
func intWeightsOf(w *ops.QDQWeight) *intWeights {
	if w == nil {
		return nil
	}
	if w.PerTensor {
		return &intWeights{Scheme: quant.PerTensor, K: w.Rows, N: w.Cols, Q: w.Q, Scales: []float32{w.Scales[0]}}
	}
	if w.Axis != 1 {
		return nil // scales along K: not a per-channel layout
	}
	return &intWeights{Scheme: quant.PerChannel, K: w.Rows, N: w.Cols, Q: w.Q, Scales: w.Scales}
}

// narrow returns w as int8 quant.Weights when every value is in
// [-127, 127], or nil.
func (w *intWeights) narrow() *quant.Weights {
	q := make([]int8, len(w.Q))
	for i, v := range w.Q {
		if v < -127 || v > 127 {
			return nil
		}
		q[i] = int8(v)
	}
	return &quant.Weights{Scheme: w.Scheme, K: w.K, N: w.N, Q: q, Scales: w.Scales}
}
