package conv

import "github.com/quantserve/quantserve/ops"

// adjoint computes x (Batch×C×InSize) = convᵀ(y (Batch×M×OutSize)) + bias
// (nil or C values): ConvTranspose, and the data gradient of Conv. The
// rows are y's positions, channels-last; each product row is scattered
// back to the In positions its kernel offsets reach, in a channels-last
// accumulator. Tiles run in order (their scatters overlap); products split
// across cores.
func (cw *gemmWeights) adjoint(c *ops.Context, g *Geometry, y, bias, x []float32) error {
	inSize, outSize := g.InSize(), g.OutSize()
	cg, mg := g.cg(), g.mg()
	if g.Batch == 0 || g.C == 0 || inSize == 0 {
		return nil
	}
	if cw.k == 0 || outSize == 0 {
		fillBias(x, bias, g.Batch, g.C, inSize)
		return nil
	}
	e := c.Engine()
	taps := newTaps(g)
	kk := len(taps.lin)
	tile := tileRows(max(cw.k, cw.n))
	yt := c.Scratch(outSize * g.M)
	defer c.Free(yt)
	acc := make([]float32, inSize*g.C)
	s := getScratch()
	defer putScratch(s)
	for b := 0; b < g.Batch; b++ {
		if err := channelsLast(c, yt, y[b*g.M*outSize:], g.M, outSize); err != nil {
			return err
		}
		clear(acc)
		for gi := 0; gi < g.Group; gi++ {
			for p0 := 0; p0 < outSize; p0 += tile {
				if err := c.Tick(tile * cw.k * cw.n); err != nil {
					return err
				}
				n := min(tile, outSize-p0)
				var rows []float32
				if g.Group == 1 {
					rows = yt[p0*g.M : (p0+n)*g.M]
				} else {
					s.rows = grow(s.rows, n*mg)
					rows = s.rows
					for r := 0; r < n; r++ {
						copy(rows[r*mg:(r+1)*mg], yt[(p0+r)*g.M+gi*mg:])
					}
				}
				s.out = grow(s.out, n*cw.n)
				if err := cw.gemmTo(e, s, gi, rows, n, s.out, cw.n); err != nil {
					return err
				}
				pos := taps.pos(p0)
				for r := 0; r < n; r++ {
					prod := s.out[r*cw.n : (r+1)*cw.n]
					for kidx := 0; kidx < kk; kidx++ {
						if at := pos.at(kidx); at >= 0 {
							addTo(acc[at*g.C+gi*cg:at*g.C+(gi+1)*cg], prod[kidx*cg:])
						}
					}
					pos.next()
				}
			}
		}
		xb := x[b*g.C*inSize : (b+1)*g.C*inSize]
		if err := transposeTo(c, xb, acc, inSize, g.C); err != nil {
			return err
		}
		if bias != nil {
			for ch := 0; ch < g.C; ch++ {
				dst := xb[ch*inSize : (ch+1)*inSize]
				for i := range dst {
					dst[i] += bias[ch]
				}
			}
		}
	}
	return nil
}
