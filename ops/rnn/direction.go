package rnn

import (
	"math"

	"github.com/quantserve/quantserve/ops"
)

// direction runs one direction over the sequence, updating hd (and cd)
// in place and writing its slice of y; it checks c's deadline at every
// step. A step works a gate at a time: each batch entry's pre-activations
// are summed into one row, and each activation runs over a gate's
// values (the table's Sigmoid and Tanh kernels for the default ones).
func (rc *recurrent) direction(c *ops.Context, d int, back bool, seq, batch int, lens []int, xw, wb, rb, peep, hd, cd []float32, rfull, rzr, rh *gateWeights, y []float32) error {
	h, gh, dirs := rc.hidden, rc.cell.gates*rc.hidden, rc.dirs
	e := c.Engine()
	var acts [3]func(dst, src []float32)
	for i, a := range rc.acts[d] {
		acts[i] = a.on(e.Table())
	}
	hr := make([]float32, batch*gh)
	var rhBuf, hh []float32
	if rh != nil {
		rhBuf, hh = make([]float32, batch*h), make([]float32, batch*h)
	}
	g := make([]float32, gh)  // a batch entry's pre-activations, then activations
	tmp := make([]float32, h) // LSTM's tanh of the cell
	maxLen := 0
	for _, l := range lens {
		maxLen = max(maxLen, l)
	}
	at := func(b, step int) int { // the time of batch entry b at step
		if back {
			return lens[b] - 1 - step
		}
		return step
	}
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
		if rh != nil {
			// r_t first, for every batch entry, then (r⊙h)·Rhᵀ.
			for b := 0; b < batch; b++ {
				if step >= lens[b] {
					clear(hh[b*h : (b+1)*h])
					continue
				}
				r := g[h : 2*h]
				rc.preact(r, xw, wb, hr, rb, (at(b, step)*batch+b)*gh, b*gh, h)
				acts[0](r, r)
				hb, hdb := hh[b*h:(b+1)*h], hd[b*h:(b+1)*h]
				for j := range hb {
					hb[j] = r[j] * hdb[j]
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
			t := at(b, step)
			hrow := hd[b*h : (b+1)*h]
			switch rc.cell.kind {
			case cellRNN:
				rc.preact(g, xw, wb, hr, rb, (t*batch+b)*gh, b*gh, 0)
				acts[0](hrow, g)
			case cellGRU:
				rc.gru(acts, g, xw, wb, hr, rb, rhBuf, hrow, (t*batch+b)*gh, b, rh != nil)
			case cellLSTM:
				rc.lstm(acts, g, tmp, xw, wb, hr, rb, peep, hrow, cd[b*h:(b+1)*h], (t*batch+b)*gh, b*gh)
			}
			copy(y[((t*dirs+d)*batch+b)*h:], hrow)
		}
	}
	return nil
}

// preact sets g[j] to the clipped pre-activation ((xw + wb) + hr) + rb of
// gate value from+j, for j < len(g): xw's row at xo, hr's at ho (wb, rb
// nil: no bias).
func (rc *recurrent) preact(g, xw, wb, hr, rb []float32, xo, ho, from int) {
	n := len(g)
	sumInto(g, xw[xo+from:][:n], part(wb, from, n), hr[ho+from:][:n], part(rb, from, n))
	rc.clipTo(g)
}

// sumInto sets g[j] = ((x[j] + wb[j]) + r[j]) + rb[j] for j < len(g),
// the terms that are nil left out.
func sumInto(g, x, wb, r, rb []float32) {
	copy(g, x[:len(g)])
	for _, t := range [...][]float32{wb, r, rb} {
		if t == nil {
			continue
		}
		for j, v := range t[:len(g)] {
			g[j] += v
		}
	}
}

// part returns s[from:from+n], nil for a nil s.
func part(s []float32, from, n int) []float32 {
	if s == nil {
		return nil
	}
	return s[from : from+n]
}

// clipTo clips g to [-clip, clip] when the node sets a clip.
func (rc *recurrent) clipTo(g []float32) {
	if math.IsInf(float64(rc.clip), 1) {
		return
	}
	for j, v := range g {
		g[j] = min(max(v, -rc.clip), rc.clip)
	}
}

// gru computes one GRU step of batch entry b into hrow: z and r from g's
// first two gates, the h gate from (r⊙h)·Rhᵀ (rhBuf, when split) or
// r⊙(h·Rhᵀ + rb) (linear_before_reset).
func (rc *recurrent) gru(acts [3]func(dst, src []float32), g, xw, wb, hr, rb, rhBuf, hrow []float32, xo, b int, split bool) {
	h, gh := rc.hidden, rc.cell.gates*rc.hidden
	ho := b * gh
	rc.preact(g[:2*h], xw, wb, hr, rb, xo, ho, 0)
	acts[0](g[:2*h], g[:2*h]) // z, r
	hc := g[2*h:]
	if split {
		sumInto(hc, xw[xo+2*h:], part(wb, 2*h, h), rhBuf[b*h:], part(rb, 2*h, h))
	} else {
		sumInto(hc, xw[xo+2*h:], part(wb, 2*h, h), nil, nil)
		rr := hr[ho+2*h:][:h]
		for j := range hc {
			v := rr[j]
			if rb != nil {
				v += rb[2*h+j]
			}
			hc[j] += g[h+j] * v
		}
	}
	rc.clipTo(hc)
	acts[1](hc, hc)
	for j, z := range g[:h] {
		hrow[j] = (1-z)*hc[j] + z*hrow[j]
	}
}

// lstm computes one LSTM step of a batch entry into hrow and crow, its
// gates i, o, f, c in g's quarters; tmp holds the tanh of the cell.
func (rc *recurrent) lstm(acts [3]func(dst, src []float32), g, tmp, xw, wb, hr, rb, peep, hrow, crow []float32, xo, ho int) {
	h := rc.hidden
	if peep == nil {
		rc.preact(g, xw, wb, hr, rb, xo, ho, 0)
		acts[0](g[:3*h], g[:3*h]) // i, o, f
	} else {
		// The input and forget gates see the old cell, the output gate
		// the new one: its clip and activation wait for it.
		sumInto(g, xw[xo:], part(wb, 0, 4*h), hr[ho:], part(rb, 0, 4*h))
		for j, c := range crow {
			g[j] += peep[j] * c
			g[2*h+j] += peep[2*h+j] * c
		}
		i, f := g[:h], g[2*h:3*h]
		rc.clipTo(i)
		rc.clipTo(f)
		rc.clipTo(g[3*h:])
		acts[0](i, i)
		acts[0](f, f)
	}
	i, o, f, cg := g[:h], g[h:2*h], g[2*h:3*h], g[3*h:]
	if rc.cell.inputForget {
		for j, v := range i {
			f[j] = 1 - v
		}
	}
	acts[1](cg, cg)
	for j := range crow {
		crow[j] = f[j]*crow[j] + i[j]*cg[j]
	}
	if peep != nil {
		for j, c := range crow {
			o[j] += peep[h+j] * c
		}
		rc.clipTo(o)
		acts[0](o, o)
	}
	acts[2](tmp, crow)
	for j := range hrow {
		hrow[j] = o[j] * tmp[j]
	}
}
