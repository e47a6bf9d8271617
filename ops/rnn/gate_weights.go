package rnn

import (
	"errors"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/quant"
)

// gateWeights is one direction's weight matrix (gates·hidden × k, as ONNX
// stores W and R), prepared for products x·Wᵀ.
type gateWeights struct {
	k, n int
	q    *gemm.QWeights
	f    *gemm.FWeights
}

// newGateWeights packs w (n rows of k) transposed for the kernels: int8
// when quantize is set and the weight is large enough. It returns the
// kernels the products run on.
func newGateWeights(w []float32, n, k int, quantize bool, scheme quant.Scheme) (*gateWeights, string, error) {
	wt := make([]float32, k*n) // k×n
	for i := 0; i < n; i++ {
		for j := 0; j < k; j++ {
			wt[j*n+i] = w[i*k+j]
		}
	}
	g := &gateWeights{k: k, n: n}
	if quantize && k*n >= ops.MinQuantizedWeights && k <= gemm.MaxQK {
		qw, err := quant.QuantizeWeights(wt, k, n, scheme)
		if err != nil {
			return nil, "", err
		}
		if g.q, err = gemm.PackQ(qw); err != nil {
			return nil, "", err
		}
		return g, "int8 " + scheme.String(), nil
	}
	g.f = gemm.PackF(k, n, wt, n)
	return g, "float32", nil
}

// mul computes out (m×n) = a (m×k) · Wᵀ on engine e.
func (g *gateWeights) mul(e *gemm.Engine, a []float32, m int, out []float32) error {
	if m == 0 {
		return nil
	}
	if g.q != nil {
		if err := e.QMatMul(a, m, g.q, out); err != nil {
			if errors.Is(err, gemm.ErrNotFinite) {
				return ops.InputErrorf("%v", err)
			}
			return err
		}
		return nil
	}
	return e.MatMul(a, m, g.f, out)
}
