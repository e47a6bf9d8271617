package conv

import "github.com/quantserve/quantserve/ops"

// directConv is the defining loop of a convolution, for float64:
//
//	y[b][m][o] = bias[m] + Σ_{ci, k} x[b][g·Cg+ci][o·s − p + k·d] · w[m][ci][k]
func directConv[T float32 | float64](c *ops.Context, g *Geometry, x, w, bias, y []T) error {
	inSize, outSize, kk := g.InSize(), g.OutSize(), g.KernelSize()
	cg, mg := g.cg(), g.mg()
	taps := newTaps(g)
	for b := 0; b < g.Batch; b++ {
		for m := 0; m < g.M; m++ {
			if err := c.Tick(outSize * cg * kk); err != nil {
				return err
			}
			gi := m / mg
			dst := y[(b*g.M+m)*outSize:][:outSize]
			pos := taps.pos(0)
			for o := range dst {
				var s T
				if bias != nil {
					s = bias[m]
				}
				for ci := 0; ci < cg; ci++ {
					plane := x[(b*g.C+gi*cg+ci)*inSize:][:inSize]
					wk := w[(m*cg+ci)*kk:][:kk]
					for kidx, wv := range wk {
						if at := pos.at(kidx); at >= 0 {
							s += plane[at] * wv
						}
					}
				}
				dst[o] = s
				if o+1 < len(dst) {
					pos.next()
				}
			}
		}
	}
	return nil
}

// directAdjoint is the defining loop of ConvTranspose, for float64: every
// input value y[b][m][o] adds y·w[m][ci][k] to x[b][g·Cg+ci] at
// o·s − p + k·d.
func directAdjoint[T float32 | float64](c *ops.Context, g *Geometry, y, w, bias, x []T) error {
	inSize, outSize, kk := g.InSize(), g.OutSize(), g.KernelSize()
	cg, mg := g.cg(), g.mg()
	for b := 0; b < g.Batch; b++ {
		for ch := 0; ch < g.C; ch++ {
			dst := x[(b*g.C+ch)*inSize:][:inSize]
			for i := range dst {
				dst[i] = 0
				if bias != nil {
					dst[i] = bias[ch]
				}
			}
		}
	}
	if outSize == 0 {
		return nil
	}
	taps := newTaps(g)
	for b := 0; b < g.Batch; b++ {
		for m := 0; m < g.M; m++ {
			if err := c.Tick(outSize * cg * kk); err != nil {
				return err
			}
			gi := m / mg
			src := y[(b*g.M+m)*outSize:][:outSize]
			pos := taps.pos(0)
			for o, v := range src {
				for ci := 0; ci < cg; ci++ {
					dst := x[(b*g.C+gi*cg+ci)*inSize:][:inSize]
					wk := w[(m*cg+ci)*kk:][:kk]
					for kidx, wv := range wk {
						if at := pos.at(kidx); at >= 0 {
							dst[at] += v * wv
						}
					}
				}
				if o+1 < len(src) {
					pos.next()
				}
			}
		}
	}
	return nil
}
