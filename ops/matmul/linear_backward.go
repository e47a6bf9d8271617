package matmul

import (
	"fmt"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/quant"
)

// BackwardInput returns dX = dY·Wᵀ (M×K) for dY (M×N) of m rows, on
// engine e. For int8 weights it is the straight-through estimator: the
// gradient flows as if through the dequantized weights W = q·s (s per
// column), and dY·Wᵀ = (dY∘s)·qᵀ runs on the int8 kernels (dY scaled per
// output channel, then quantized per row). Only builds with the autodiff
// tag keep what it needs (dispatch.ErrAutodiffUnavailable otherwise).
func (l *Linear) BackwardInput(e *gemm.Engine, dy []float32, m int) ([]float32, error) {
	if len(dy) != m*l.n {
		return nil, fmt.Errorf("matmul: backward of a %d×%d weight got %d values for %d rows", l.k, l.n, len(dy), m)
	}
	l.tOnce.Do(func() {
		if l.wq != nil && l.wq.Scheme == quant.PerBlock {
			// scales vary along K: back through the dequantized weights in float32
			l.wf, l.wq = l.wq.Dequantize(), nil
		}
		switch {
		case l.wq != nil:
			t := &quant.Weights{Scheme: quant.PerTensor, K: l.n, N: l.k, Q: make([]int8, len(l.wq.Q)), Scales: []float32{1}}
			for i := 0; i < l.k; i++ {
				for j := 0; j < l.n; j++ {
					t.Q[j*l.k+i] = l.wq.Q[i*l.n+j]
				}
			}
			l.tq, l.tErr = gemm.PackQ(t)
		case l.wf != nil:
			t := make([]float32, len(l.wf))
			for i := 0; i < l.k; i++ {
				for j := 0; j < l.n; j++ {
					t[j*l.k+i] = l.wf[i*l.n+j]
				}
			}
			l.tf = gemm.PackF(l.n, l.k, t, l.k)
		default:
			l.tErr = dispatch.ErrAutodiffUnavailable
		}
	})
	if l.tErr != nil {
		return nil, l.tErr
	}
	dx := make([]float32, m*l.k)
	if m == 0 {
		return dx, nil
	}
	if l.tq != nil {
		scaled := make([]float32, len(dy))
		for i := 0; i < m; i++ {
			for j := 0; j < l.n; j++ {
				scaled[i*l.n+j] = dy[i*l.n+j] * l.wq.Scale(0, j)
			}
		}
		if err := e.QMatMul(scaled, m, l.tq, dx); err != nil {
			return nil, err
		}
		return dx, nil
	}
	if err := e.MatMul(dy, m, l.tf, dx); err != nil {
		return nil, err
	}
	return dx, nil
}
