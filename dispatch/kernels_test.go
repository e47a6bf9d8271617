package dispatch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/quant"
)

const guard = 0x5a // sentinel around outputs

// qCase is one quantized block problem: rows of activations, np panels of
// weights (each with its true column sums), per-row and per-column
// epilogue values, and a starting Acc/FSum.
type qCase struct {
	rows, np, kq, ldu, pstr int
	u                       []uint8
	b                       []int8
	colsum                  []int32
	zp                      []int32
	sa, sb                  []float32
	acc0                    []int32
	fsum0                   []float32
	full                    bool      // u or b outside [0, 128] × [-127, 127]: FullRange tables only
	bias, res               []float32 // QFinish's (res rows ldr apart)
	lo, hi                  float32
}

const ldc, accStr, ldr = 53, 57, 61 // strides with room for guard values

func newQCase(r *rand.Rand, rows, np, kq int, u []uint8, b []int8, ldu, pstr int) *qCase {
	c := &qCase{rows: rows, np: np, kq: kq, ldu: ldu, pstr: pstr, u: u, b: b}
	c.colsum = make([]int32, np*16)
	for p := 0; p < np; p++ {
		for g := 0; g < kq; g++ {
			for col := 0; col < 16; col++ {
				for i := 0; i < 4; i++ {
					c.colsum[p*16+col] += int32(b[p*pstr+64*g+4*col+i])
				}
			}
		}
	}
	for i := 0; i < rows; i++ {
		c.zp = append(c.zp, int32(64*r.IntN(2)))
		c.sa = append(c.sa, float32(r.ExpFloat64()/100))
	}
	for j := 0; j < np*16; j++ {
		c.sb = append(c.sb, float32(r.ExpFloat64()/50))
	}
	c.acc0 = make([]int32, rows*accStr)
	c.fsum0 = make([]float32, rows*accStr)
	for i := range c.acc0 {
		c.acc0[i] = int32(r.IntN(1<<20) - 1<<19)
		c.fsum0[i] = float32(r.NormFloat64())
	}
	for j := 0; j < np*16; j++ {
		c.bias = append(c.bias, float32(r.NormFloat64()))
	}
	for i := 0; i < (rows-1)*ldr+np*16; i++ {
		c.res = append(c.res, float32(r.NormFloat64()))
	}
	c.lo, c.hi = float32(math.Inf(-1)), float32(math.Inf(1))
	switch r.IntN(3) {
	case 0: // Relu
		c.lo = 0
	case 1: // Relu6's clamp
		c.lo, c.hi = 0, 6
	}
	return c
}

// guarded returns a slice of n values inside sentinels, and a check that
// the sentinels survived.
func guarded[T int32 | float32](n int, fill []T) ([]T, func() bool) {
	buf := make([]T, n+8)
	for i := range buf {
		buf[i] = guard
	}
	copy(buf[4:4+n], fill)
	return buf[4 : 4+n], func() bool {
		for _, i := range []int{0, 1, 2, 3, n + 4, n + 5, n + 6, n + 7} {
			if buf[i] != guard {
				return false
			}
		}
		return true
	}
}

// qFlagSets are the flags the int8 block tests run: QCached (the
// weights in the cache: no streaming ahead) changes no value.
var qFlagSets = []int{
	0,
	kernels.QLoadAcc,
	kernels.QOutChannel,
	kernels.QLoadAcc | kernels.QOutChannel,
	kernels.QOutBlock,
	kernels.QOutBlock | kernels.QLoadSum,
	kernels.QOutBlock | kernels.QFinal,
	kernels.QOutBlock | kernels.QLoadSum | kernels.QFinal,
	kernels.QOutChannel | kernels.QFinish,
	kernels.QLoadAcc | kernels.QOutChannel | kernels.QFinish,
	kernels.QOutChannel | kernels.QFinish | withRes,
	kernels.QLoadAcc | kernels.QOutChannel | kernels.QFinish | withRes,
	kernels.QCached,
	kernels.QOutChannel | kernels.QCached,
	kernels.QLoadAcc | kernels.QOutChannel | kernels.QFinish | kernels.QCached | withRes,
}

// withRes, among qFlagSets, gives a QFinish block the case's residual.
const withRes = 1 << 30

// run calls tb's block kernel (or the reference, tb == nil) on c with the
// given flags and returns Acc, FSum and C, checking guard bands and that
// the inputs are unmodified.
func (c *qCase) run(t *testing.T, tb *Table, flags int) ([]int32, []float32, []float32) {
	t.Helper()
	qoff := int32(0)
	if tb != nil {
		qoff = tb.QOffset
	}
	off := make([]int32, c.rows)
	for i := range off {
		off[i] = qoff - c.zp[i]
	}
	acc, accOK := guarded(len(c.acc0), c.acc0)
	fsum, fsumOK := guarded(len(c.fsum0), c.fsum0)
	out, outOK := guarded[float32]((c.rows-1)*ldc+c.np*16, nil)
	q := &kernels.QBlock{U: c.u, LDU: c.ldu, Rows: c.rows, B: c.b, PStr: c.pstr, NP: c.np, KQ: c.kq, Flags: flags &^ withRes,
		Acc: acc, AccStr: accStr, FSum: fsum, Off: off, SA: c.sa, Colsum: c.colsum, SB: c.sb, C: out, LDC: ldc}
	if flags&kernels.QFinish != 0 {
		q.Bias, q.Lo, q.Hi = c.bias, c.lo, c.hi
		if flags&withRes != 0 {
			q.Res, q.LDR = c.res, ldr
		}
	}
	uc, bc := slices.Clone(c.u), slices.Clone(c.b)
	if tb == nil {
		kernels.QBlockRef(q)
	} else {
		tb.QBlock(q)
	}
	if !accOK() || !fsumOK() || !outOK() {
		t.Fatalf("%v rows=%d np=%d kq=%d flags=%#x: guard band overwritten", tb, c.rows, c.np, c.kq, flags)
	}
	if !slices.Equal(uc, c.u) || !slices.Equal(bc, c.b) {
		t.Fatalf("%v modified its inputs", tb)
	}
	if flags&(kernels.QOutChannel|kernels.QOutBlock) == 0 && qoff != 0 {
		// Acc out is Σ (u - QOffset)·b: add QOffset·colsum back
		for r := 0; r < c.rows; r++ {
			for j := 0; j < c.np*16; j++ {
				acc[r*accStr+j] += qoff * c.colsum[j]
			}
		}
	}
	return acc, fsum, out
}

// check runs every table on c with every flag set and compares each with
// the reference bit for bit.
func (c *qCase) check(t *testing.T) {
	t.Helper()
	for _, flags := range qFlagSets {
		wantAcc, wantSum, wantC := c.run(t, nil, flags)
		for _, tb := range Available() {
			if c.rows > tb.MR || c.np > tb.NP || c.full && !tb.FullRange || flags&kernels.QFinish != 0 && !tb.QFinish {
				continue
			}
			acc, sum, out := c.run(t, tb, flags)
			for i := range wantAcc {
				if acc[i] != wantAcc[i] {
					t.Fatalf("%v rows=%d np=%d kq=%d flags=%#x: acc[%d] = %d, want %d", tb, c.rows, c.np, c.kq, flags, i, acc[i], wantAcc[i])
				}
				if math.Float32bits(sum[i]) != math.Float32bits(wantSum[i]) {
					t.Fatalf("%v rows=%d np=%d kq=%d flags=%#x: fsum[%d] = %v, want %v", tb, c.rows, c.np, c.kq, flags, i, sum[i], wantSum[i])
				}
			}
			for i := range wantC {
				if math.Float32bits(out[i]) != math.Float32bits(wantC[i]) {
					t.Fatalf("%v rows=%d np=%d kq=%d flags=%#x: c[%d] = %v, want %v", tb, c.rows, c.np, c.kq, flags, i, out[i], wantC[i])
				}
			}
		}
	}
}

// activations returns rows of ldu bytes after offset bytes: random values
// in [0, 128] with the range ends forced in.
func activations(r *rand.Rand, n, offset int) []uint8 {
	buf := make([]uint8, n+offset)
	u := buf[offset:]
	for i := range u {
		switch r.IntN(6) {
		case 0:
			u[i] = 0
		case 1:
			u[i] = 128
		case 2:
			u[i] = 127
		default:
			u[i] = uint8(r.IntN(129))
		}
	}
	return u
}

func weights(r *rand.Rand, n, offset int) []int8 {
	buf := make([]int8, n+offset)
	b := buf[offset:]
	for i := range b {
		switch r.IntN(6) {
		case 0:
			b[i] = 127
		case 1:
			b[i] = -127
		default:
			b[i] = int8(r.IntN(255) - 127)
		}
	}
	return b
}

func maxTile() (mr, np int) {
	for _, tb := range Available() {
		mr, np = max(mr, tb.MR), max(np, tb.NP)
	}
	return mr, np
}

// blockRows returns the row counts the block tests run up to mr: every
// one to 40 (every tile height and remainder of every table, and of a
// kernel's groups of 32 rows, once), then the ends of the later groups
// (not under the race detector).
func blockRows(mr int) []int {
	var rows []int
	for r := 1; r <= mr; r++ {
		if r <= 40 || !raceEnabled && (r%32 <= 1 || r%32 == 31 || r%32 == 17 || r == mr) {
			rows = append(rows, r)
		}
	}
	return rows
}

// TestQBlockEveryTable runs every table's block kernel against the
// reference for every k from 0 to 132 (kq 0..33: every tail around the
// vector widths and tile steps), the row counts of blockRows and every
// panel count up to the largest tile, unaligned starts, every flag set,
// guard bands around each output.
func TestQBlockEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	mr, mp := maxTile()
	for kq := 0; kq <= 33; kq++ {
		for _, rows := range blockRows(mr) {
			for np := 1; np <= mp; np++ {
				ldu := 4*kq + 4*r.IntN(3)
				pstr := 64*kq + 64*r.IntN(2) + r.IntN(3)
				u := activations(r, (rows-1)*ldu+4*kq, (kq+rows)%3)
				b := weights(r, (np-1)*pstr+64*kq, (kq+np)%2)
				newQCase(r, rows, np, kq, u, b, ldu, pstr).check(t)
			}
		}
	}
}

// TestQBlockFullRange runs the tables whose sums are exact for any bytes
// (FullRange) on u in [0, 255] and b in [-128, 127], the inputs of
// MatMulInteger, with the extremes forced in.
func TestQBlockFullRange(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	mr, mp := maxTile()
	for _, kq := range []int{0, 1, 2, 3, 7, 8, 9, 16, 17, 33, 300} {
		for _, rows := range blockRows(mr) {
			for np := 1; np <= mp; np++ {
				ldu, pstr := 4*kq+4*r.IntN(2), 64*kq+r.IntN(3)
				u := make([]uint8, (rows-1)*ldu+4*kq)
				for i := range u {
					u[i] = []uint8{0, 255, 128, 129, uint8(r.IntN(256))}[r.IntN(5)]
				}
				b := make([]int8, (np-1)*pstr+64*kq)
				for i := range b {
					b[i] = []int8{-128, 127, -127, int8(r.IntN(256) - 128)}[r.IntN(4)]
				}
				c := newQCase(r, rows, np, kq, u, b, ldu, pstr)
				c.full = true
				c.check(t)
			}
		}
	}
}

// TestQBlockExtremes saturates every pair: u = 128 against b = ±127 in
// every position, long K (the int32 sums reach 2^26).
func TestQBlockExtremes(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	mr, mp := maxTile()
	for _, bv := range []int8{127, -127} {
		for _, kq := range []int{1, 40, 1024} {
			ldu, pstr := 4*kq, 64*kq
			u := make([]uint8, mr*ldu)
			for i := range u {
				u[i] = 128
			}
			b := make([]int8, mp*pstr)
			for i := range b {
				b[i] = bv
			}
			newQCase(r, mr, mp, kq, u, b, ldu, pstr).check(t)
		}
	}
}

// fFlagSets are the flags the float block tests run: FFinish with and
// without a residual (withRes) among them.
// fFlagSets are the flags the float block tests run: FCached (the
// weights in the cache: no streaming ahead) changes no value.
var fFlagSets = []int{0, kernels.FLoadC, kernels.FFinish, kernels.FLoadC | kernels.FFinish, kernels.FFinish | withRes, kernels.FLoadC | kernels.FFinish | withRes,
	kernels.FCached, kernels.FLoadC | kernels.FFinish | kernels.FCached | withRes}

// finishCase is an FBlock's finish: a bias, a residual of rows ldr apart
// and a clamp (Relu's, Relu6's or none).
type finishCase struct {
	bias, res []float32
	lo, hi    float32
}

func newFinish(r *rand.Rand, rows, np int) *finishCase {
	fc := &finishCase{lo: float32(math.Inf(-1)), hi: float32(math.Inf(1))}
	for j := 0; j < np*16; j++ {
		fc.bias = append(fc.bias, float32(r.NormFloat64()))
	}
	for i := 0; i < (rows-1)*ldr+np*16; i++ {
		fc.res = append(fc.res, float32(r.NormFloat64()))
	}
	switch r.IntN(3) {
	case 0:
		fc.lo = 0
	case 1:
		fc.lo, fc.hi = 0, 6
	}
	return fc
}

// set gives f the finish when flags ask for it.
func (fc *finishCase) set(f *kernels.FBlock, flags int) {
	if flags&kernels.FFinish == 0 {
		return
	}
	f.Bias, f.Lo, f.Hi = fc.bias, fc.lo, fc.hi
	if flags&withRes != 0 {
		f.Res, f.LDR = fc.res, ldr
	}
}

func fCase(t *testing.T, r *rand.Rand, rows, np, k int) {
	t.Helper()
	fCaseOn(t, r, rows, np, k, "FBlock", func(tb *Table) func(*kernels.FBlock) {
		if rows > tb.FMR || np > tb.FNP {
			return nil
		}
		return tb.FBlock
	})
}

// fCaseOn runs a block of rows×np panels of k on the kernel each table
// gives (nil: none) and compares each with kernels.FBlockRef, bit for bit.
func fCaseOn(t *testing.T, r *rand.Rand, rows, np, k int, name string, kernel func(*Table) func(*kernels.FBlock)) {
	t.Helper()
	lda := k + r.IntN(3)
	pstr := 16*k + 16*r.IntN(2)
	a := make([]float32, (rows-1)*lda+k+1)[1:]
	for i := range a {
		a[i] = float32(r.NormFloat64())
	}
	b := make([]float32, (np-1)*pstr+16*k)
	for i := range b {
		b[i] = float32(r.NormFloat64())
	}
	c0 := make([]float32, (rows-1)*ldc+np*16)
	for i := range c0 {
		c0[i] = float32(r.NormFloat64())
	}
	fin := newFinish(r, rows, np)
	for _, flags := range fFlagSets {
		run := func(tb *Table) []float32 {
			out, ok := guarded(len(c0), c0)
			f := &kernels.FBlock{A: a, LDA: lda, Rows: rows, B: b, PStr: pstr, NP: np, K: k, Flags: flags &^ withRes, C: out, LDC: ldc}
			fin.set(f, flags)
			if tb == nil {
				kernels.FBlockRef(f)
			} else {
				kernel(tb)(f)
			}
			if !ok() {
				t.Fatalf("%v %s rows=%d np=%d k=%d: guard band overwritten", tb, name, rows, np, k)
			}
			return out
		}
		want := run(nil)
		for _, tb := range Available() {
			if kernel(tb) == nil {
				continue
			}
			got := run(tb)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%v %s rows=%d np=%d k=%d flags=%d: c[%d] = %v, want %v", tb, name, rows, np, k, flags, i, got[i], want[i])
				}
			}
		}
	}
}

// TestFBlockEveryTable runs every table's float block kernel against the
// reference, which accumulates with fused multiply-adds in k order: the
// results agree bit for bit.
func TestFBlockEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	var mr, mp int
	for _, tb := range Available() {
		mr, mp = max(mr, tb.FMR), max(mp, tb.FNP)
	}
	for k := 0; k <= 131; k += 1 + k/24 {
		for rows := 1; rows <= mr; rows++ {
			for np := 1; np <= mp; np++ {
				fCase(t, r, rows, np, k)
			}
		}
	}
}

// TestFRowEveryTable runs every table's row kernel (Table.FRow) against
// the reference on blocks of one row: panel counts that take each of its
// widths and their sums, K odd and even, every flag.
func TestFRowEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	for k := 0; k <= 67; k += 1 + k/16 {
		for np := 1; np <= 19; np++ {
			fCaseOn(t, r, 1, np, k, "FRow", func(tb *Table) func(*kernels.FBlock) { return tb.FRow })
		}
	}
}

// TestFRowRefuses: a row kernel takes one row and K where it lies.
func TestFRowRefuses(t *testing.T) {
	for _, tb := range Available() {
		c := make([]float32, 2*16)
		for _, f := range []kernels.FBlock{
			{A: make([]float32, 8), LDA: 4, Rows: 2, B: make([]float32, 64), NP: 1, K: 4, C: c, LDC: 16},
			{A: make([]float32, 8), LDA: 4, Rows: 1, B: make([]float32, 64), NP: 1, K: 4, C: c, LDC: 16, Segs: []int{0}, SegK: 4},
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%v FRow ran a block of %d rows, %d segments", tb, f.Rows, len(f.Segs))
					}
				}()
				tb.FRow(&f)
			}()
		}
	}
}

// TestFBlockSegmentsEveryTable runs every table's float block kernel on
// segmented blocks (FBlock.Segs: K's columns read in segments where they
// lie, rows overlapping as a convolution's rows read its image) against
// the reference on the same block and against the reference on the rows
// gathered into a plain matrix: the same bits, with and without FLoadC,
// with and without weights ahead to draw (FBlock.Ahead), and nothing
// written past the tile.
func TestFBlockSegmentsEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	var mr, mp int
	for _, tb := range Available() {
		mr, mp = max(mr, tb.FMR), max(mp, tb.FNP)
	}
	for iter := 0; iter < 400; iter++ {
		rows, np := 1+r.IntN(mr), 1+r.IntN(mp)
		nseg := r.IntN(8) // 0: K = 0
		segK := 1 + r.IntN(40)
		if iter%7 == 0 {
			segK = 64 + r.IntN(200)
		}
		k := nseg * segK
		lda := r.IntN(2 * segK)
		a := make([]float32, (rows-1)*lda+segK+r.IntN(300))
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		segs := make([]int, nseg)
		for i := range segs {
			segs[i] = r.IntN(len(a) - (rows-1)*lda - segK + 1)
		}
		pstr := 16*k + 16*r.IntN(2)
		b := make([]float32, (np-1)*pstr+16*k)
		for i := range b {
			b[i] = float32(r.NormFloat64())
		}
		// The same rows gathered: row i is segment s's SegK values in turn.
		gathered := make([]float32, rows*k)
		for i := 0; i < rows; i++ {
			for s, off := range segs {
				copy(gathered[i*k+s*segK:], a[off+i*lda:off+i*lda+segK])
			}
		}
		c0 := make([]float32, (rows-1)*ldc+np*16)
		for i := range c0 {
			c0[i] = float32(r.NormFloat64())
		}
		fin := newFinish(r, rows, np)
		for _, flags := range fFlagSets {
			run := func(tb *Table, f kernels.FBlock) []float32 {
				out, ok := guarded(len(c0), c0)
				f.C, f.LDC, f.B, f.PStr, f.NP, f.Rows, f.K, f.Flags = out, ldc, b, pstr, np, rows, k, flags&^withRes
				fin.set(&f, flags)
				if tb == nil {
					kernels.FBlockRef(&f)
				} else {
					tb.FBlock(&f)
				}
				if !ok() {
					t.Fatalf("%v FBlock rows=%d np=%d segments %d of %d: guard band overwritten", tb, rows, np, nseg, segK)
				}
				return out
			}
			want := run(nil, kernels.FBlock{A: gathered, LDA: k})
			seg := kernels.FBlock{A: a, LDA: lda, Segs: segs, SegK: segK}
			// Weights to draw toward the cache (a block's next) change no
			// value: none, too short to draw, or a run of b's.
			switch iter % 3 {
			case 1:
				seg.Ahead = b[len(b)-min(len(b), 15):]
			case 2:
				seg.Ahead = b[r.IntN(len(b)/2+1):]
			}
			for _, tb := range append([]*Table{nil}, Available()...) {
				if tb != nil && (rows > tb.FMR || np > tb.FNP) {
					continue
				}
				got := run(tb, seg)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%v FBlock rows=%d np=%d lda=%d segments %d of %d flags=%d: c[%d] = %v, gathered %v", tb, rows, np, lda, nseg, segK, flags, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestQuantizeDivU8BitExact: every table's QuantizeDivU8 gives the
// reference's bytes (DynamicQuantizeLinear's) on every length to 70, for
// scales and zero points as DynamicQuantizeLinear picks them from the
// values' range, with quotients exactly halfway between integers (ties
// to even), beyond the byte range either way (saturated), infinite, and
// signed zeros; it writes no byte past len(x).
func TestQuantizeDivU8BitExact(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	inf := float32(math.Inf(1))
	for n := 0; n <= 70; n++ {
		for _, spread := range []float64{1e-3, 1, 40} {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(r.NormFloat64() * spread)
			}
			lo, hi, _ := kernels.MinMax(x)
			lo, hi = min(lo, 0), max(hi, 0)
			scale := (hi - lo) / 255
			if scale == 0 {
				scale = 1
			}
			zp := int32(min(max(math.RoundToEven(float64(-lo/scale)), 0), 255))
			if n > 6 {
				x[r.IntN(n)] = (float32(r.IntN(200)-100) + 0.5) * scale // a tie
				x[r.IntN(n)] = 300 * scale                              // above 255 - zp
				x[r.IntN(n)] = -300 * scale                             // below -zp
				x[r.IntN(n)] = inf
				x[r.IntN(n)] = -inf
				x[r.IntN(n)] = float32(math.Copysign(0, -1))
			}
			want := make([]uint8, n)
			kernels.QuantizeDivU8(x, scale, zp, want)
			for i, v := range x { // the reference is DynamicQuantizeLinear's formula
				f := math.RoundToEven(float64(v/scale)) + float64(zp)
				if b := uint8(min(max(f, 0), 255)); want[i] != b {
					t.Fatalf("QuantizeDivU8(%v / %v + %d) = %d, want %d", v, scale, zp, want[i], b)
				}
			}
			for _, tb := range Available() {
				ubuf := make([]uint8, n+2)
				ubuf[0], ubuf[n+1] = guard, guard
				tb.QuantizeDivU8(x, scale, zp, ubuf[1:n+1])
				if !slices.Equal(ubuf[1:n+1], want) || ubuf[0] != guard || ubuf[n+1] != guard {
					t.Fatalf("%v QuantizeDivU8 n=%d scale=%v zp=%d:\n got %v\nwant %v", tb, n, scale, zp, ubuf[1:n+1], want)
				}
			}
		}
	}
}

// TestQuantizeDivU8Midpoints: every table's QuantizeDivU8 gives the
// reference's bytes for quotients at, and one and two ulps either side
// of, every midpoint between integers of the byte range and beyond it,
// for scales of every magnitude (one whose reciprocal is subnormal, one
// whose reciprocal overflows), in blocks, halves of blocks and tails (a
// kernel that multiplies by the reciprocal must divide near a midpoint).
func TestQuantizeDivU8Midpoints(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, scale := range []float32{0.0235, 3.7e-5, 0.021, 0.1, 1.9, 1e30, 0x1p127, 1e-40} {
		var x []float32
		for i := -1100; i <= 1100; i++ {
			v := float32(i) / 2 * scale
			up, down := math.Nextafter32(v, float32(math.Inf(1))), math.Nextafter32(v, float32(math.Inf(-1)))
			x = append(x, v, up, down, math.Nextafter32(up, float32(math.Inf(1))), math.Nextafter32(down, float32(math.Inf(-1))))
		}
		for range 2000 {
			x = append(x, float32(r.NormFloat64()*float64(scale)*math.Pow(10, float64(r.IntN(4)))))
		}
		r.Shuffle(len(x), func(i, j int) { x[i], x[j] = x[j], x[i] })
		for i, v := range x { // quotients finite: x/scale is never NaN
			if math.IsInf(float64(v), 0) {
				x[i] = 0
			}
		}
		for _, zp := range []int32{0, 128, 131, 255} {
			for _, off := range []int{0, 7, 16, 29} {
				in := x[off:]
				want := make([]uint8, len(in))
				kernels.QuantizeDivU8(in, scale, zp, want)
				for _, tb := range Available() {
					got := make([]uint8, len(in))
					tb.QuantizeDivU8(in, scale, zp, got)
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("%v QuantizeDivU8(%v / %v + %d) = %d, want %d", tb, in[i], scale, zp, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

func TestRowQuantizationBitExact(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	for n := 0; n <= 131; n++ {
		for _, signed := range []bool{false, true} {
			buf := make([]float32, n+1)
			x := buf[1:]
			for i := range x {
				x[i] = float32(r.NormFloat64() * 10)
				if !signed {
					x[i] = float32(math.Abs(float64(x[i])))
				}
			}
			if n > 2 {
				x[r.IntN(n)] = 0
				x[r.IntN(n)] = float32(math.Copysign(0, -1))
			}
			lo, hi, fin := kernels.MinMax(x)
			_, inv, zp := quant.RowParams(lo, hi)
			want := make([]uint8, n)
			kernels.QuantizeU8(x, inv, zp, want)
			for _, tb := range Available() {
				l2, h2, f2 := tb.MinMax(x)
				if l2 != lo || h2 != hi || f2 != fin {
					t.Fatalf("%v MinMax n=%d: %v %v %v, want %v %v %v", tb, n, l2, h2, f2, lo, hi, fin)
				}
				ubuf := make([]uint8, n+2)
				ubuf[0], ubuf[n+1] = guard, guard
				tb.QuantizeU8(x, inv, zp, ubuf[1:n+1])
				if !slices.Equal(ubuf[1:n+1], want) || ubuf[0] != guard || ubuf[n+1] != guard {
					t.Fatalf("%v QuantizeU8 n=%d zp=%d:\n got %v\nwant %v", tb, n, zp, ubuf[1:n+1], want)
				}
			}
		}
	}
	// Non-finite values are reported wherever they are.
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		for pos := 0; pos < 19; pos++ {
			x := make([]float32, 19)
			x[pos] = bad
			for _, tb := range Available() {
				if _, _, fin := tb.MinMax(x); fin {
					t.Fatalf("%v MinMax misses %v at %d", tb, bad, pos)
				}
			}
		}
	}
}

// TestBlockCheck: a kernel never runs on slices too short for its call;
// Check panics in Go first.
func TestBlockCheck(t *testing.T) {
	for _, tb := range Available() {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%v QBlock ran with a short U", tb)
				}
			}()
			tb.QBlock(&kernels.QBlock{U: make([]uint8, 3), LDU: 4, Rows: 1, B: make([]int8, 64), NP: 1, KQ: 1, Acc: make([]int32, 16), AccStr: 16})
		}()
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%v FBlock ran with a short C", tb)
				}
			}()
			tb.FBlock(&kernels.FBlock{A: make([]float32, 1), LDA: 1, Rows: 1, B: make([]float32, 16), NP: 1, K: 1, C: make([]float32, 15)})
		}()
	}
}

func TestSelect(t *testing.T) {
	if tb, err := Select(""); err != nil || tb != Default() {
		t.Errorf("Select(\"\") = %v, %v", tb, err)
	}
	if tb, err := Select("generic"); err != nil || tb.Name != "generic" {
		t.Errorf("Select(generic) = %v, %v", tb, err)
	}
	if _, err := Select("sse9"); err == nil {
		t.Error("unknown table accepted")
	}
	all := Available()
	if all[len(all)-1].Name != "generic" {
		t.Errorf("reference is not last: %v", all)
	}
	if Selected() != all[0] {
		t.Errorf("Selected() = %v, want the best available %v", Selected(), all[0])
	}
	// Every table name is known: it selects, or says why it cannot run.
	for _, name := range Names() {
		tb, err := Select(name)
		runs := slices.ContainsFunc(all, func(tb *Table) bool { return tb.Name == name })
		if runs != (err == nil) {
			t.Errorf("Select(%s): %v, but available %v", name, err, all)
		}
		if err == nil && tb.Name != name {
			t.Errorf("Select(%s) = %v", name, tb)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "cannot run here") {
				t.Errorf("Select(%s): %v does not say why", name, err)
			}
			t.Logf("Select(%s): %v", name, err)
		}
	}
}

// TestNames: every table of this build is named in allTables, for this
// GOARCH, in allTables' order.
func TestNames(t *testing.T) {
	var want []string
	for _, a := range allTables {
		if a.arch == runtime.GOARCH || a.arch == "" {
			want = append(want, a.name)
		}
	}
	var got []string
	for _, tb := range tables {
		got = append(got, tb.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("this build's tables are %v; allTables lists %v for %s", got, want, runtime.GOARCH)
	}
}

// TestRequireKernels fails the run when QUANTSERVE_REQUIRE_KERNELS names a
// table the CPU did not select: CI sets it so a silent fallback cannot
// pass.
func TestRequireKernels(t *testing.T) {
	if err := RequireFromEnv(); err != nil {
		t.Fatal(err)
	}
	t.Logf("selected %v on %s; available %v; QUANTSERVE_REQUIRE_KERNELS=%q", Default(), CPU(), Available(), os.Getenv("QUANTSERVE_REQUIRE_KERNELS"))
}

func ExampleSelect() {
	t, err := Select("generic")
	fmt.Println(t, err)
	// Output: generic <nil>
}

// TestQBlockPaddedRows: 3 rows followed by room for a fourth (as QRows
// pads them) run as one 4-row tile on the tables that tile; the extra
// rows (and the bytes after 2 rows) hold bytes of any value, even ones no row of these sums may
// hold, and must change nothing: every table still equals the reference,
// and nothing is stored past the last row (the guard bands).
func TestQBlockPaddedRows(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 21))
	_, mp := maxTile()
	for _, kq := range []int{1, 2, 7, 16, 33, 300} {
		for rows := 2; rows <= 3; rows++ {
			for np := 1; np <= mp; np++ {
				ldu, pstr := 4*kq+4*r.IntN(2), 64*kq+r.IntN(3)
				u := activations(r, 3*ldu+4*kq, kq%3)
				for i := rows * ldu; i < len(u); i++ {
					u[i] = []uint8{255, 129, 0}[r.IntN(3)]
				}
				b := weights(r, (np-1)*pstr+64*kq, np%2)
				newQCase(r, rows, np, kq, u, b, ldu, pstr).check(t)
			}
		}
	}
}
