package rnn

import "github.com/quantserve/quantserve/ops"

// direction runs one direction over the sequence, updating hd (and cd)
// in place and writing its slice of y; it checks c's deadline at every
// step.
func (rc *recurrent) direction(c *ops.Context, d int, back bool, seq, batch int, lens []int, xw, wb, rb, peep, hd, cd []float32, rfull, rzr, rh *gateWeights, y []float32) error {
	h, gh, dirs := rc.hidden, rc.cell.gates*rc.hidden, rc.dirs
	acts := rc.acts[d]
	hr := make([]float32, batch*gh)
	var rhBuf, hh []float32
	if rh != nil {
		rhBuf, hh = make([]float32, batch*h), make([]float32, batch*h)
	}
	gate := make([]float32, gh)
	clip := func(v float32) float32 { return min(max(v, -rc.clip), rc.clip) }
	maxLen := 0
	for _, l := range lens {
		maxLen = max(maxLen, l)
	}
	e := c.Engine()
	for step := 0; step < maxLen; step++ {
		if err := c.Err(); err != nil {
			return err
		}
		if rfull != nil {
			if err := rfull.mul(e, hd, batch, hr); err != nil {
				return err
			}
		} else { // GRU: z and r gates now, the h gate after the reset
			if err := rzr.mul(e, hd, batch, hr[:batch*2*h]); err != nil {
				return err
			}
			// hr is laid out batch×(2h) here; spread to batch×(3h).
			for b := batch - 1; b >= 0; b-- {
				copy(hr[b*gh:b*gh+2*h], hr[b*2*h:(b+1)*2*h])
			}
		}
		// Gate pre-activations (without the GRU h gate's recurrent term).
		pre := func(b, t int) []float32 {
			xrow := xw[(t*batch+b)*gh : (t*batch+b+1)*gh]
			for j := range gate {
				v := xrow[j]
				if wb != nil {
					v += wb[j]
				}
				gate[j] = v
			}
			return gate
		}
		if rh != nil {
			// r_t first, for every batch entry, then (r⊙h)·Rhᵀ.
			for b := 0; b < batch; b++ {
				t := step
				if back {
					t = lens[b] - 1 - step
				}
				if step >= lens[b] {
					clear(hh[b*h : (b+1)*h])
					continue
				}
				g := pre(b, t)
				for j := 0; j < h; j++ {
					v := g[h+j] + hr[b*gh+h+j]
					if rb != nil {
						v += rb[h+j]
					}
					hh[b*h+j] = acts[0](clip(v)) * hd[b*h+j]
				}
			}
			if err := rh.mul(e, hh, batch, rhBuf); err != nil {
				return err
			}
		}
		for b := 0; b < batch; b++ {
			if step >= lens[b] {
				continue
			}
			t := step
			if back {
				t = lens[b] - 1 - step
			}
			g := pre(b, t)
			rrow := hr[b*gh : (b+1)*gh]
			hrow := hd[b*h : (b+1)*h]
			rbAt := func(j int) float32 {
				if rb == nil {
					return 0
				}
				return rb[j]
			}
			switch rc.cell.kind {
			case cellRNN:
				for j := 0; j < h; j++ {
					hrow[j] = acts[0](clip(g[j] + rrow[j] + rbAt(j)))
				}
			case cellGRU:
				for j := 0; j < h; j++ {
					z := acts[0](clip(g[j] + rrow[j] + rbAt(j)))
					r := acts[0](clip(g[h+j] + rrow[h+j] + rbAt(h+j)))
					var hc float32
					if rh != nil {
						hc = acts[1](clip(g[2*h+j] + rhBuf[b*h+j] + rbAt(2*h+j)))
					} else {
						hc = acts[1](clip(g[2*h+j] + r*(rrow[2*h+j]+rbAt(2*h+j))))
					}
					hrow[j] = (1-z)*hc + z*hrow[j]
				}
			case cellLSTM:
				crow := cd[b*h : (b+1)*h]
				for j := 0; j < h; j++ {
					iv := g[j] + rrow[j] + rbAt(j)
					ov := g[h+j] + rrow[h+j] + rbAt(h+j)
					fv := g[2*h+j] + rrow[2*h+j] + rbAt(2*h+j)
					cv := g[3*h+j] + rrow[3*h+j] + rbAt(3*h+j)
					if peep != nil {
						iv += peep[j] * crow[j]
						fv += peep[2*h+j] * crow[j]
					}
					i := acts[0](clip(iv))
					f := acts[0](clip(fv))
					if rc.cell.inputForget {
						f = 1 - i
					}
					ct := f*crow[j] + i*acts[1](clip(cv))
					crow[j] = ct
					if peep != nil {
						ov += peep[h+j] * ct
					}
					hrow[j] = acts[0](clip(ov)) * acts[2](ct)
				}
			}
			copy(y[((t*dirs+d)*batch+b)*h:], hrow)
		}
	}
	return nil
}
