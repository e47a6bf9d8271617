//go:build autodiff

package autodiff

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/ops/attention"
	"github.com/quantserve/quantserve/ops/norm"
	"github.com/quantserve/quantserve/ops/reduce"
	"github.com/quantserve/quantserve/tensor"
)

// Backward of the reductions, the transformer normalizations and
// Attention. Sums run in float64.

func init() {
	bindGrad(reduceBackward(sumRule), reduce.ReduceSum)
	bindGrad(reduceBackward(meanRule), reduce.ReduceMean)
	bindGrad(reduceBackward(extremeRule), reduce.ReduceMax, reduce.ReduceMin)
	bindGrad(reduceBackward(prodRule), reduce.ReduceProd)
	bindGrad(reduceBackward(l1Rule), reduce.ReduceL1)
	bindGrad(reduceBackward(l2Rule), reduce.ReduceL2)
	bindGrad(reduceBackward(logSumRule), reduce.ReduceLogSum)
	bindGrad(reduceBackward(logSumExpRule), reduce.ReduceLogSumExp)
	bindGrad(reduceBackward(sumSquareRule), reduce.ReduceSumSquare)
	bindGrad(layerNormBackward, norm.LayerNormalization)
	bindGrad(rmsNormBackward, norm.RMSNormalization)
	bindGrad(attentionBackward, attention.Attention)
}

// reduceRule computes the input's gradient g of one reduction: each calls
// f(i, o) for every input element i and the output element o it reduced
// into; count is the number of elements each output reduced.
type reduceRule func(each func(f func(i, o int)), g, xv, yv, dy []float32, count int)

// reduceBackward spreads dy over the elements each output reduced by
// rule: dx = dy·∂y/∂x.
func reduceBackward(rule reduceRule) gradFunc {
	return func(st model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, _ []bool) ([][]float32, error) {
		return reduceGrad(st, in, y, dy, rule)
	}
}

func reduceGrad(st model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, rule reduceRule) ([][]float32, error) {
	x := in[0]
	xv, err := floats(x, "the input")
	if err != nil {
		return nil, err
	}
	yv, err := floats(y, "the output")
	if err != nil {
		return nil, err
	}
	red, ok := st.Params.(reduce.Reduction)
	if !ok {
		return nil, fmt.Errorf("autodiff: %s has no reduction attributes", st.Op)
	}
	var axes *tensor.Tensor
	if len(in) > 1 {
		axes = in[1]
	}
	mask, err := red.ReducedAxes(x.Rank(), axes)
	if err != nil {
		return nil, err
	}
	// outStr maps an input position to the output element it reduced into.
	outStr := make([]int, x.Rank())
	count := 1
	for i, s := x.Rank()-1, 1; i >= 0; i-- {
		if mask[i] {
			count *= x.Shape[i]
			continue
		}
		outStr[i] = s
		s *= x.Shape[i]
	}
	each := func(f func(i, o int)) {
		it := tensor.NewIter(x.Shape, outStr)
		for i := 0; it.Next(); i++ {
			f(i, it.Off(0))
		}
	}
	g := make([]float32, len(xv))
	rule(each, g, xv, yv, dy, count)
	dx := make([][]float32, len(in))
	dx[0] = g
	return dx, nil
}

// sumRule is ReduceSum's: dy to every element.
func sumRule(each func(f func(i, o int)), g, xv, yv, dy []float32, count int) {
	each(func(i, o int) { g[i] = dy[o] })
}

// meanRule is ReduceMean's: dy shared evenly.
func meanRule(each func(f func(i, o int)), g, xv, yv, dy []float32, count int) {
	each(func(i, o int) { g[i] = dy[o] / float32(count) })
}

// extremeRule is ReduceMax's and ReduceMin's: dy to the elements equal
// to the output, ties sharing it equally.
func extremeRule(each func(f func(i, o int)), g, xv, yv, dy []float32, count int) {
	ties := make([]float32, len(yv))
	each(func(i, o int) {
		if xv[i] == yv[o] {
			ties[o]++
		}
	})
	each(func(i, o int) {
		if xv[i] == yv[o] {
			g[i] = dy[o] / ties[o]
		}
	})
}

// prodRule is ReduceProd's: dy times the product of the other elements.
func prodRule(each func(f func(i, o int)), g, xv, yv, dy []float32, count int) {
	// ∂y/∂x_i is the product of the others: y/x_i, or with one zero
	// among them the product of the non-zeros at that zero.
	zeros := make([]int, len(yv))
	nonzero := make([]float64, len(yv))
	for o := range nonzero {
		nonzero[o] = 1
	}
	each(func(i, o int) {
		if xv[i] == 0 {
			zeros[o]++
		} else {
			nonzero[o] *= float64(xv[i])
		}
	})
	each(func(i, o int) {
		switch {
		case zeros[o] == 0:
			g[i] = float32(float64(dy[o]) * nonzero[o] / float64(xv[i]))
		case zeros[o] == 1 && xv[i] == 0:
			g[i] = float32(float64(dy[o]) * nonzero[o])
		}
	})
}

// l1Rule is ReduceL1's: dy·sign(x).
func l1Rule(each func(f func(i, o int)), g, xv, yv, dy []float32, count int) {
	each(func(i, o int) {
		switch {
		case xv[i] > 0:
			g[i] = dy[o]
		case xv[i] < 0:
			g[i] = -dy[o]
		}
	})
}

// l2Rule is ReduceL2's: dy·x/y.
func l2Rule(each func(f func(i, o int)), g, xv, yv, dy []float32, count int) {
	each(func(i, o int) {
		if yv[o] != 0 {
			g[i] = dy[o] * xv[i] / yv[o]
		}
	})
}

// logSumRule is ReduceLogSum's: y = log Σx, so dy·e^-y.
func logSumRule(each func(f func(i, o int)), g, xv, yv, dy []float32, count int) {
	each(func(i, o int) { g[i] = float32(float64(dy[o]) * math.Exp(-float64(yv[o]))) })
}

// logSumExpRule is ReduceLogSumExp's: dy·e^(x-y).
func logSumExpRule(each func(f func(i, o int)), g, xv, yv, dy []float32, count int) {
	each(func(i, o int) { g[i] = float32(float64(dy[o]) * math.Exp(float64(xv[i])-float64(yv[o]))) })
}

// sumSquareRule is ReduceSumSquare's: 2·dy·x.
func sumSquareRule(each func(f func(i, o int)), g, xv, yv, dy []float32, count int) {
	each(func(i, o int) { g[i] = 2 * dy[o] * xv[i] })
}

// normStats returns each row's mean (zero for RMS normalization) and
// 1/sqrt(variance + eps) (or 1/sqrt(mean square + eps)).
func normStats(x []float32, outer, inner int, eps float64, rms bool) (mean, inv []float64) {
	mean, inv = make([]float64, outer), make([]float64, outer)
	for r := 0; r < outer; r++ {
		row := x[r*inner : (r+1)*inner]
		var m, v float64
		if !rms {
			for _, xv := range row {
				m += float64(xv)
			}
			m /= float64(inner)
		}
		for _, xv := range row {
			d := float64(xv) - m
			v += d * d
		}
		mean[r], inv[r] = m, 1/math.Sqrt(v/float64(inner)+eps)
	}
	return mean, inv
}

// layerNormBackward: with x̂ = (x - μ)·σ⁻¹ and g = dy·γ over a row of n,
// dx = σ⁻¹·(g - mean(g) - x̂·mean(g·x̂)), dγ = Σ dy·x̂, dβ = Σ dy (each
// summed over the axes γ and β broadcast along).
func layerNormBackward(st model.Step, in []*tensor.Tensor, _ *tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
	at := st.Params.(*norm.LayerNormAttrs)
	x := in[0]
	xv, err := floats(x, "X")
	if err != nil {
		return nil, err
	}
	sv, err := floats(in[1], "Scale")
	if err != nil {
		return nil, err
	}
	a, err := axisOf(at.Axis, x.Rank())
	if err != nil {
		return nil, err
	}
	outer, inner, _ := geometry(x.Shape, a, true)
	gamma := expand(sv, in[1].Shape, x.Shape)
	mean, inv := normStats(xv, outer, inner, float64(at.Epsilon), false)
	gx := make([]float32, len(xv))
	dgamma := make([]float32, len(xv))
	for r := 0; r < outer; r++ {
		var mg, mgx float64
		for j := r * inner; j < (r+1)*inner; j++ {
			xh := (float64(xv[j]) - mean[r]) * inv[r]
			g := float64(dy[j]) * float64(gamma[j])
			mg += g
			mgx += g * xh
			dgamma[j] = float32(float64(dy[j]) * xh)
		}
		mg /= float64(inner)
		mgx /= float64(inner)
		for j := r * inner; j < (r+1)*inner; j++ {
			xh := (float64(xv[j]) - mean[r]) * inv[r]
			g := float64(dy[j]) * float64(gamma[j])
			gx[j] = float32(inv[r] * (g - mg - xh*mgx))
		}
	}
	dx := make([][]float32, len(in))
	dx[0] = gx
	if need[1] {
		dx[1] = reduceTo(dgamma, x.Shape, in[1].Shape)
	}
	if len(in) > 2 && in[2] != nil && need[2] {
		dx[2] = reduceTo(dy, x.Shape, in[2].Shape)
	}
	return dx, nil
}

// rmsNormBackward: with r = (mean(x²) + eps)^-½ and g = dy·γ over a row
// of n, dx = r·g - x·r³·mean(g·x) and dγ = Σ dy·x·r.
func rmsNormBackward(st model.Step, in []*tensor.Tensor, _ *tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
	at := st.Params.(*norm.RMSNormAttrs)
	x := in[0]
	xv, err := floats(x, "X")
	if err != nil {
		return nil, err
	}
	sv, err := floats(in[1], "scale")
	if err != nil {
		return nil, err
	}
	a, err := axisOf(at.Axis, x.Rank())
	if err != nil {
		return nil, err
	}
	outer, inner, _ := geometry(x.Shape, a, true)
	gamma := expand(sv, in[1].Shape, x.Shape)
	_, inv := normStats(xv, outer, inner, float64(at.Epsilon), true)
	gx := make([]float32, len(xv))
	dgamma := make([]float32, len(xv))
	for r := 0; r < outer; r++ {
		var mgx float64
		for j := r * inner; j < (r+1)*inner; j++ {
			mgx += float64(dy[j]) * float64(gamma[j]) * float64(xv[j])
			dgamma[j] = float32(float64(dy[j]) * float64(xv[j]) * inv[r])
		}
		mgx /= float64(inner)
		r3 := inv[r] * inv[r] * inv[r]
		for j := r * inner; j < (r+1)*inner; j++ {
			g := float64(dy[j]) * float64(gamma[j])
			gx[j] = float32(inv[r]*g - float64(xv[j])*r3*mgx)
		}
	}
	dx := make([][]float32, len(in))
	dx[0] = gx
	if need[1] {
		dx[1] = reduceTo(dgamma, x.Shape, in[1].Shape)
	}
	return dx, nil
}

// attentionBackward differentiates Y with respect to Q, K, V and the past
// key and value. Per head, with P the probabilities and S the scaled
// scores before softcap c:
//
//	dV += Pᵀ·dY;  dP = dY·Vᵀ;  dZ = P∘(dP - rowsum(dP∘P))
//	dS = dZ∘(1 - tanh²(S/c))  (dS = dZ without softcap)
//	dQ = scale·dS·K;  dK += scale·dSᵀ·Q
//
// (the masks only add constants to the scores). Grouped query heads add
// into the key/value head they share.
func attentionBackward(st model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
	for i, t := range in[:min(len(in), 6)] {
		if t != nil && i != 3 && t.DType != tensor.Float32 {
			return nil, fmt.Errorf("autodiff: Attention input %d is %v; gradients flow through FP32 only", i, t.DType)
		}
	}
	f, err := attention.Trace(st.Params.(*attention.AttentionAttrs), in)
	if err != nil {
		return nil, err
	}
	b, hq, hkv, sq, t, d, dv := f.B, f.QHeads, f.KVHeads, f.QLen, f.Len, f.HeadSize, f.VHeadSize
	if len(dy) != b*hq*sq*dv {
		return nil, fmt.Errorf("autodiff: Attention output gradient has %d values, want %d", len(dy), b*hq*sq*dv)
	}
	// dY head-major
	gy := make([]float64, len(dy))
	for bi := 0; bi < b; bi++ {
		for h := 0; h < hq; h++ {
			for i := 0; i < sq; i++ {
				src := ((bi*hq+h)*sq + i) * dv
				if f.Rank3 {
					src = ((bi*sq+i)*hq + h) * dv
				}
				for c := 0; c < dv; c++ {
					gy[((bi*hq+h)*sq+i)*dv+c] = float64(dy[src+c])
				}
			}
		}
	}
	dq := make([]float64, len(f.Q))
	dk := make([]float64, len(f.K))
	dvv := make([]float64, len(f.V))
	rep := hq / hkv
	dp := make([]float64, t)
	for bi := 0; bi < b; bi++ {
		for h := 0; h < hq; h++ {
			g := h / rep
			qh, dqh := f.Q[(bi*hq+h)*sq*d:], dq[(bi*hq+h)*sq*d:]
			kg, dkg := f.K[(bi*hkv+g)*t*d:], dk[(bi*hkv+g)*t*d:]
			vg, dvg := f.V[(bi*hkv+g)*t*dv:], dvv[(bi*hkv+g)*t*dv:]
			for i := 0; i < sq; i++ {
				row := ((bi*hq+h)*sq + i) * t
				p, s := f.Probs[row:row+t], f.Scores[row:row+t]
				gyi := gy[((bi*hq+h)*sq+i)*dv:]
				var sum float64
				for j := 0; j < t; j++ {
					var acc float64
					for c := 0; c < dv; c++ {
						acc += gyi[c] * vg[j*dv+c]
						dvg[j*dv+c] += p[j] * gyi[c]
					}
					dp[j] = acc
					sum += acc * p[j]
				}
				if math.IsNaN(sum) {
					continue // every key masked: Y is NaN
				}
				for j := 0; j < t; j++ {
					ds := p[j] * (dp[j] - sum)
					if f.Softcap > 0 {
						th := math.Tanh(s[j] / f.Softcap)
						ds *= 1 - th*th
					}
					ds *= f.Scale
					if ds == 0 {
						continue
					}
					for e := 0; e < d; e++ {
						dqh[i*d+e] += ds * kg[j*d+e]
						dkg[j*d+e] += ds * qh[i*d+e]
					}
				}
			}
		}
	}
	dx := make([][]float32, len(in))
	dx[0] = fromHeads(dq, b, hq, sq, d, 0, sq, f.Rank3)
	dx[1] = fromHeads(dk, b, hkv, t, d, f.Past, t-f.Past, f.Rank3)
	dx[2] = fromHeads(dvv, b, hkv, t, dv, f.Past, t-f.Past, f.Rank3)
	if len(in) > 5 && in[4] != nil {
		dx[4] = fromHeads(dk, b, hkv, t, d, 0, f.Past, false)
		dx[5] = fromHeads(dvv, b, hkv, t, dv, 0, f.Past, false)
	}
	return dx, nil
}

// fromHeads takes positions [from, from+n) of head-major x (b, h, s, d)
// into (b, h, n, d), or (b, n, h·d) for rank-3 inputs.
func fromHeads(x []float64, b, h, s, d, from, n int, rank3 bool) []float32 {
	out := make([]float32, b*h*n*d)
	for bi := 0; bi < b; bi++ {
		for hi := 0; hi < h; hi++ {
			for j := 0; j < n; j++ {
				src := ((bi*h+hi)*s + from + j) * d
				dst := ((bi*h+hi)*n + j) * d
				if rank3 {
					dst = ((bi*n+j)*h + hi) * d
				}
				for e := 0; e < d; e++ {
					out[dst+e] = float32(x[src+e])
				}
			}
		}
	}
	return out
}
