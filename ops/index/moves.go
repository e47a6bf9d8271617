package index

import (
	"slices"

	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
)

// The moves of the package's operators under the request: each goes in
// pieces of about ops.TickEvery elements, counted with c.Tick, and stops
// with the request's error once the request ends.

// runs is mv.Runs in pieces: dst[at+i·run:][:run] = src[base+offs[i]:][:run].
// The runs must not overlap dst.
func runs(c *ops.Context, mv tensorops.Mover, dst any, at int, src any, base int, offs []int, run int) error {
	if run > ops.TickEvery { // long runs: each copied in pieces
		for i, o := range offs {
			for k := 0; k < run; k += ops.TickEvery {
				n := min(ops.TickEvery, run-k)
				if err := c.Tick(n); err != nil {
					return err
				}
				mv.CopyN(dst, at+i*run+k, src, base+o+k, n)
			}
		}
		return nil
	}
	// Runs of their own: pieces of them split across the engine's cores
	// (an embedding's rows, read from memory a row at a time).
	return c.ParallelRows(len(offs), max(run, 1)*copyCost, func(i, j int) {
		mv.Runs(dst, at+i*run, src, base, offs[i:j], run)
	})
}

// copyCost is a value copied from a place of its own (ops.VectorCost
// units a value read and one written).
const copyCost = 2 * ops.VectorCost

// put is mv.Put in pieces: dst[base+offs[i]:][:run] = src[at+i·run:][:run],
// in order.
func put(c *ops.Context, mv tensorops.Mover, dst any, base int, offs []int, src any, at int, run int) error {
	if run > ops.TickEvery {
		for i, o := range offs {
			for k := 0; k < run; k += ops.TickEvery {
				n := min(ops.TickEvery, run-k)
				if err := c.Tick(n); err != nil {
					return err
				}
				mv.CopyN(dst, base+o+k, src, at+i*run+k, n)
			}
		}
		return nil
	}
	group := ops.TickEvery / max(run, 1)
	for i := 0; i < len(offs); i += group {
		j := min(i+group, len(offs))
		if err := c.Tick((j - i) * run); err != nil {
			return err
		}
		mv.Put(dst, base, offs[i:j], src, at+i*run, run)
	}
	return nil
}

// clone returns a copy of data, n elements, made in pieces.
func clone(c *ops.Context, mv tensorops.Mover, data any, n int) (any, error) {
	out := mv.Alloc(n)
	err := c.InPieces(n, func(lo, hi int) { mv.CopyN(out, lo, data, lo, hi-lo) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// fill sets dst[d:d+n] to v[0] in pieces.
func fill(c *ops.Context, mv tensorops.Mover, dst any, d, n int, v any) error {
	return c.InPieces(n, func(lo, hi int) { mv.Fill(dst, d+lo, hi-lo, v) })
}

// sortStable sorts s by cmp as slices.SortStableFunc does, counting cost
// units of work per comparison with c.Tick. A sort has no way out: once
// the request ends sortStable leaves it by a panic of its own, recovered
// here, and returns the request's error (s is then in some order).
func sortStable[E any](c *ops.Context, s []E, cost int, cmp func(a, b E) int) (err error) {
	defer func() {
		if p := recover(); p != nil {
			st, ok := p.(stopSort)
			if !ok {
				panic(p)
			}
			err = st.err
		}
	}()
	slices.SortStableFunc(s, func(a, b E) int {
		if err := c.Tick(cost); err != nil {
			panic(stopSort{err})
		}
		return cmp(a, b)
	})
	return nil
}

// stopSort carries the request's error out of sortStable's sort.
type stopSort struct{ err error }
