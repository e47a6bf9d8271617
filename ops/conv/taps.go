package conv

import "github.com/quantserve/quantserve/tensor"

// taps are a geometry's kernel offsets, in row-major kernel order: the
// per-axis displacement k·dilation and the displacement over the
// row-major In positions.
type taps struct {
	g      *Geometry
	d      int
	disp   []int // kk×d
	lin    []int // kk
	inStr  []int
	outStr []int
	extent []int // (k-1)·dilation per axis
	// With one group and unit dilation along the last axis, the taps of
	// one kernel row read adjacent positions, which channels-last are one
	// run of run·C values; runLin holds each run's first tap's lin.
	run    int
	runLin []int
}

// tapsOf returns g's taps: those made with g when it is kept across runs,
// new ones otherwise.
func tapsOf(g *Geometry) *taps {
	if g.taps != nil {
		return g.taps
	}
	return newTaps(g)
}

func newTaps(g *Geometry) *taps {
	d := len(g.In)
	kk := g.KernelSize()
	t := &taps{g: g, d: d, disp: make([]int, kk*d), lin: make([]int, kk), inStr: tensor.Strides(g.In), outStr: tensor.Strides(g.Out), extent: make([]int, d)}
	for i := 0; i < d; i++ {
		t.extent[i] = (g.Kernel[i] - 1) * g.Dilations[i]
	}
	kStr := tensor.Strides(g.Kernel)
	for kidx := 0; kidx < kk; kidx++ {
		for i := 0; i < d; i++ {
			k := kidx / kStr[i] % g.Kernel[i]
			t.disp[kidx*d+i] = k * g.Dilations[i]
			t.lin[kidx] += k * g.Dilations[i] * t.inStr[i]
		}
	}
	t.run = 1
	if d > 0 && g.Group == 1 && g.Dilations[d-1] == 1 {
		t.run = g.Kernel[d-1]
	}
	for kidx := 0; kidx < kk; kidx += t.run {
		t.runLin = append(t.runLin, t.lin[kidx])
	}
	return t
}

// position walks output positions in row-major order, keeping the input
// position of kernel offset 0 (base) per axis.
type position struct {
	t        *taps
	interior bool // every kernel offset lands inside In
	lin      int  // linear In index of base, when interior
	// outer says whether the kernel lies inside In along every axis but
	// the last, which a step along the last axis keeps.
	outer bool
	// axes holds the output position (o) and base of up to posAxes
	// axes, wide those of more. A position keeps no slice of itself
	// (coords makes them), so a walker holds it by value on its stack:
	// an int8 network's tiles start hundreds of walks a run, each two
	// slices on the heap before.
	axes [2 * posAxes]int
	wide []int
}

// posAxes is how many axes a position holds in place.
const posAxes = 3

// pos returns a position at output position p.
func (t *taps) pos(p int) position {
	c := position{t: t}
	if t.d > posAxes {
		c.wide = make([]int, 2*t.d)
	}
	o, _ := c.coords()
	for i := range o {
		o[i] = p / t.outStr[i] % t.g.Out[i]
	}
	c.update()
	return c
}

// coords returns c's output position and base, an entry an axis.
func (c *position) coords() (o, base []int) {
	d := c.t.d
	if c.wide != nil {
		return c.wide[:d:d], c.wide[d:]
	}
	return c.axes[:d:d], c.axes[posAxes : posAxes+d : posAxes+d]
}

func (c *position) update() {
	g := c.t.g
	o, base := c.coords()
	c.outer, c.lin = true, 0
	last := len(o) - 1
	for i := range o {
		b := o[i]*g.Strides[i] - g.PadBegin[i]
		base[i] = b
		if i < last && (b < 0 || b+c.t.extent[i] >= g.In[i]) {
			c.outer = false
		}
		c.lin += b * c.t.inStr[i]
	}
	c.interior = c.outer && c.lastInside(base)
}

// lastInside reports whether the kernel at base (c's) lies inside In
// along the last axis.
func (c *position) lastInside(base []int) bool {
	last := len(base) - 1
	if last < 0 {
		return true
	}
	b := base[last]
	return b >= 0 && b+c.t.extent[last] < c.t.g.In[last]
}

func (c *position) next() {
	g := c.t.g
	o, base := c.coords()
	last := len(o) - 1
	if last >= 0 && o[last]+1 < g.Out[last] { // a step along the last axis
		o[last]++
		base[last] += g.Strides[last]
		c.lin += g.Strides[last] // the last axis's stride in In is 1
		c.interior = c.outer && c.lastInside(base)
		return
	}
	for i := last; i >= 0; i-- {
		o[i]++
		if o[i] < g.Out[i] {
			break
		}
		o[i] = 0
	}
	c.update()
}

// interiorRun returns how many interior positions, at most n, follow
// from c's along the last axis within its row (c's own included): 0
// when c is not interior.
func (c *position) interiorRun(n int) int {
	if !c.interior || n <= 0 {
		return 0
	}
	g := c.t.g
	o, base := c.coords()
	last := len(o) - 1
	if last < 0 {
		return 1
	}
	s := g.Strides[last]
	inside := (g.In[last]-1-c.t.extent[last]-base[last])/s + 1 // lastInside holds for these steps
	return min(n, g.Out[last]-o[last], inside)
}

// lastStride is the stride along the last axis (0 without one).
func (t *taps) lastStride() int {
	if t.d == 0 {
		return 0
	}
	return t.g.Strides[t.d-1]
}

// skip steps c j positions along the last axis, which interiorRun has
// vouched for: each one interior, c the last of them.
func (c *position) skip(j int) {
	if j == 0 {
		return
	}
	g := c.t.g
	o, base := c.coords()
	last := len(o) - 1
	o[last] += j
	base[last] += j * g.Strides[last]
	c.lin += j * g.Strides[last]
}

// at returns the linear In index kernel offset kidx reads, or -1 when it
// falls in the padding.
func (c *position) at(kidx int) int {
	if c.interior {
		return c.lin + c.t.lin[kidx]
	}
	g, d := c.t.g, c.t.d
	_, base := c.coords()
	lin := 0
	for i := 0; i < d; i++ {
		v := base[i] + c.t.disp[kidx*d+i]
		if v < 0 || v >= g.In[i] {
			return -1
		}
		lin += v * c.t.inStr[i]
	}
	return lin
}

// gatherImages is gatherRows over the images xt holds one after another
// (img values, size output positions each): positions [p0, p0+n) count
// on from one image's into the next's.
func (t *taps) gatherImages(rows, xt []float32, img, size, gi, p0, n int) {
	k := len(t.lin) * t.g.cg() // a row's values
	for n > 0 {
		i, q := p0/size, p0%size
		c := min(n, size-q)
		t.gatherRows(rows, xt[i*img:(i+1)*img], gi, q, c)
		rows, p0, n = rows[c*k:], p0+c, n-c
	}
}

// gatherRows writes the im2col rows of output positions [p0, p0+t) of
// group gi into rows (t×kk·Cg): row r, column kidx·Cg+ci is input channel
// gi·Cg+ci at the position kernel offset kidx reads, zero in the padding.
// xt is the image channels-last (InSize×C).
func (t *taps) gatherRows(rows, xt []float32, gi, p0, n int) {
	gather(t, rows, xt, gi, p0, n, 0)
}

// gather is gatherRows for any element type, pad in the padding.
func gather[T float32 | uint8 | int8](t *taps, rows, xt []T, gi, p0, n int, pad T) {
	gatherStrided(t, rows, len(t.lin)*t.g.cg(), xt, gi, p0, n, pad)
}

// gatherStrided is gather with row r at rows[r*ld:] (ld >= kk·Cg); what
// lies between rows is not written.
func gatherStrided[T float32 | uint8 | int8](t *taps, rows []T, ld int, xt []T, gi, p0, n int, pad T) {
	g := t.g
	c, cg := g.C, g.cg()
	kk := len(t.lin)
	k := kk * cg
	pos := t.pos(p0)
	xg := xt[gi*cg:]
	for r := 0; r < n; r++ {
		row := rows[r*ld : r*ld+k]
		if pos.interior {
			base := pos.lin
			w := t.run * cg // values per run
			if w >= 16 {
				for j, off := range t.runLin {
					at := (base + off) * c
					copy(row[j*w:(j+1)*w], xg[at:at+w])
				}
			} else {
				for j, off := range t.runLin {
					at := (base + off) * c
					dst, src := row[j*w:(j+1)*w], xg[at:at+w]
					for i := range dst {
						dst[i] = src[i]
					}
				}
			}
		} else {
			for kidx := 0; kidx < kk; kidx++ {
				dst := row[kidx*cg : (kidx+1)*cg]
				if at := pos.at(kidx); at >= 0 {
					copy(dst, xg[at*c:at*c+cg])
				} else {
					fill(dst, pad)
				}
			}
		}
		pos.next()
	}
}
