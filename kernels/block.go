package kernels

import "fmt"

// The block kernels: the one contract every table's product kernel keeps.
//
// A quantized block is Rows (≤ the table's MR) rows of unsigned activations
// times NP (≤ the table's NP) adjacent packed weight panels over KQ groups
// of 4 k. The GEMM driver walks a product block by block; it may split K
// into several calls (cache blocking), carrying int32 partial sums in Acc.
//
// Flags choose where a block starts and what it writes:
//
//	QLoadAcc    s starts from Acc instead of zero
//	QOutChannel c = float32(s + off·colsum) · sa · sb        (per-channel epilogue)
//	QOutBlock   t = float32(float32(s + off·colsum) · sb)     (one K block of the
//	            f = (QLoadSum ? fsum : 0) + t                  per-block scheme)
//	            c = sa · f when QFinal, else fsum = f
//	neither     Acc = s
//	QFinish     with QOutChannel: c = clamp((c + Bias[j]) + Res[r*LDR+j])
//	            to [Lo, Hi], as ConvFinish finishes c (Res nil: no term);
//	            on a table that takes QFinish, Res may be C itself (LDR =
//	            LDC): its QBlock reads each residual value before it
//	            writes the output over it (the reference's does not)
//
// in float32, left to right, never fused: every table gives the same bits.
// A table takes QFinish only where its QBlockFinish says so.
const (
	QLoadAcc    = 1 << 0
	QOutChannel = 1 << 1
	QOutBlock   = 1 << 2
	QLoadSum    = 1 << 3
	QFinal      = 1 << 4
	QFinish     = 1 << 5
	// QCached says an earlier tile of the same block read its weights,
	// as FCached does. It changes no value.
	QCached = 1 << 6
)

// QBlock describes one call of a quantized block kernel. The assembly
// kernels read its fields at fixed offsets (see the ISA packages' tests);
// Check validates every slice before a call, so a kernel may trust it.
type QBlock struct {
	U     []uint8 // row r at U[r*LDU:], 4·KQ bytes read
	LDU   int
	Rows  int
	B     []int8 // panel p at B[p*PStride:], 64·KQ bytes read
	PStr  int    // PStride, bytes between panels
	NP    int
	KQ    int
	Flags int

	Acc    []int32 // int32 sums, row r at Acc[r*AccStr:], NP·16 entries
	AccStr int
	FSum   []float32 // per-block running sums, same layout as Acc

	Off    []int32   // per row: QOffset - zero point
	SA     []float32 // per row: activation scale
	Colsum []int32   // per column (NP·16): Σ_k b of this K range
	SB     []float32 // per column (NP·16): weight scale
	C      []float32 // row r at C[r*LDC:], NP·16 entries
	LDC    int

	// tile is QBlockTiles' accumulator: kept here, beside the arguments
	// that live as long as the caller's task, rather than allocated on
	// every call (it escapes through the tile function values). Last, so
	// no assembly offset moves.
	tile [4 * PanelN]int32

	// The finish QFinish adds (after tile, so no offset above moves).
	Bias   []float32 // per column (NP·16)
	Res    []float32 // row r at Res[r*LDR:], NP·16 entries; nil: none
	LDR    int
	Lo, Hi float32
}

// Check panics unless every slice q's flags touch is long enough for rows
// ≤ mr and panels ≤ np. It is the one bounds check before assembly runs.
func (q *QBlock) Check(mr, np int) {
	if q.Rows < 1 || q.Rows > mr || q.NP < 1 || q.NP > np || q.KQ < 0 || q.PStr < 0 || q.LDU < 0 {
		panic(fmt.Sprintf("kernels: QBlock rows=%d np=%d kq=%d outside 1..%d, 1..%d", q.Rows, q.NP, q.KQ, mr, np))
	}
	cols := q.NP * PanelN
	need := func(what string, have, want int) {
		if have < want {
			panic(fmt.Sprintf("kernels: QBlock %s has %d entries, needs %d", what, have, want))
		}
	}
	need("U", len(q.U), (q.Rows-1)*q.LDU+4*q.KQ)
	need("B", len(q.B), (q.NP-1)*q.PStr+64*q.KQ)
	out := q.Flags & (QOutChannel | QOutBlock)
	if q.Flags&QLoadAcc != 0 || out == 0 {
		need("Acc", len(q.Acc), (q.Rows-1)*q.AccStr+cols)
	}
	if out != 0 {
		need("Off", len(q.Off), q.Rows)
		need("Colsum", len(q.Colsum), cols)
		need("SB", len(q.SB), cols)
	}
	if q.Flags&QOutChannel != 0 || q.Flags&(QOutBlock|QFinal) == QOutBlock|QFinal {
		need("SA", len(q.SA), q.Rows)
		need("C", len(q.C), (q.Rows-1)*q.LDC+cols)
	}
	if q.Flags&QOutBlock != 0 && (q.Flags&QLoadSum != 0 || q.Flags&QFinal == 0) {
		need("FSum", len(q.FSum), (q.Rows-1)*q.AccStr+cols)
	}
	if q.Flags&QFinish != 0 {
		if q.Flags&QOutChannel == 0 {
			panic("kernels: QBlock QFinish without QOutChannel")
		}
		need("Bias", len(q.Bias), cols)
		if q.Res != nil {
			need("Res", len(q.Res), (q.Rows-1)*q.LDR+cols)
		}
	}
}

// QBlockRef is the reference block kernel: for r < Rows and j < NP·16
// (panel p = j/16, column col = j%16),
//
//	s = Σ_{g<KQ} Σ_{i<4} int32(U[r*LDU+4g+i]) * int32(B[p*PStr+64g+4col+i])
//	    (+ Acc[r*AccStr+j] with QLoadAcc)
//
// then the output the flags choose (see QLoadAcc).
func QBlockRef(q *QBlock) {
	q.Check(q.Rows, q.NP)
	for r := 0; r < q.Rows; r++ {
		for j := 0; j < q.NP*PanelN; j++ {
			p, col := j/PanelN, j%PanelN
			var s int32
			if q.Flags&QLoadAcc != 0 {
				s = q.Acc[r*q.AccStr+j]
			}
			b := q.B[p*q.PStr:]
			for g := 0; g < q.KQ; g++ {
				for i := 0; i < 4; i++ {
					s += int32(q.U[r*q.LDU+4*g+i]) * int32(b[64*g+4*col+i])
				}
			}
			QStore(q, r, j, s)
		}
	}
}

// QStoreRow writes the outputs of row r's sums s, columns j0 on, as QStore
// does each (adding Acc first with QLoadAcc, into s: a tile's scratch),
// with the flags read once for the row.
func QStoreRow(q *QBlock, r, j0 int, s []int32) {
	if q.Flags&QLoadAcc != 0 {
		acc := q.Acc[r*q.AccStr+j0:][:len(s)]
		for j := range s {
			s[j] += acc[j]
		}
	}
	if q.Flags&QOutChannel == 0 {
		for j, v := range s {
			QStore(q, r, j0+j, v)
		}
		return
	}
	c := q.C[r*q.LDC+j0:][:len(s)]
	colsum, sb := q.Colsum[j0:][:len(s)], q.SB[j0:][:len(s)]
	off, sa := q.Off[r], q.SA[r]
	for j, v := range s {
		c[j] = float32(v+off*colsum[j]) * sa * sb[j]
	}
	if q.Flags&QFinish != 0 {
		var res []float32
		if q.Res != nil {
			res = q.Res[r*q.LDR+j0:][:len(s)]
		}
		ConvFinish(c, q.Bias[j0:][:len(s)], res, q.Lo, q.Hi)
	}
}

// QStore writes the output of sum s for row r, column j of q as q.Flags
// ask: the epilogue every table shares, in Go for the kernels whose
// assembly stops at int32 sums.
func QStore(q *QBlock, r, j int, s int32) {
	switch {
	case q.Flags&QOutChannel != 0:
		c := q.C[r*q.LDC+j:][:1]
		c[0] = float32(s+q.Off[r]*q.Colsum[j]) * q.SA[r] * q.SB[j]
		if q.Flags&QFinish != 0 {
			var res []float32
			if q.Res != nil {
				res = q.Res[r*q.LDR+j:][:1]
			}
			ConvFinish(c, q.Bias[j:][:1], res, q.Lo, q.Hi)
		}
	case q.Flags&QOutBlock != 0:
		t := float32(float32(s+q.Off[r]*q.Colsum[j]) * q.SB[j])
		var f float32
		if q.Flags&QLoadSum != 0 {
			f = q.FSum[r*q.AccStr+j]
		}
		f = float32(f + t)
		if q.Flags&QFinal != 0 {
			q.C[r*q.LDC+j] = q.SA[r] * f
		} else {
			q.FSum[r*q.AccStr+j] = f
		}
	default:
		q.Acc[r*q.AccStr+j] = s
	}
}

// FBlock describes one call of a float block kernel: Rows rows of A times
// NP adjacent packed float panels over K values of k.
//
//	c[r*LDC+j] = (FLoadC ? c[r*LDC+j] : 0) + Σ_{p<K} a(r, p) * B[panel*PStr+16p+col]
//
// accumulated in p order with fused multiply-adds (FMA32), so a product
// split along K gives the same sums as one call, and every table the same
// bits. a(r, p) is A[r*LDA+p]; with Segs, A's columns are len(Segs)
// segments of SegK (K = len(Segs)·SegK), each read where it lies:
// a(r, s·SegK+t) = A[Segs[s]+r*LDA+t] for t < SegK. Rows may overlap
// (LDA < K): a convolution reads its channels-last image in place, a
// kernel row of taps a segment, an output position a row.
type FBlock struct {
	A     []float32
	LDA   int
	Rows  int
	B     []float32
	PStr  int // elements between panels
	NP    int
	K     int
	Flags int
	C     []float32
	LDC   int
	Segs  []int
	SegK  int

	// The finish FFinish adds, as QBlock's QFinish does.
	Bias   []float32 // per column (NP·16)
	Res    []float32 // row r at Res[r*LDR:], NP·16 entries; nil: none
	LDR    int
	Lo, Hi float32

	// Ahead is memory a later block reads or writes: packed weights (the
	// next K block, or the next panel group's first), or a share of a
	// convolution's next tile of output rows. A kernel may draw it toward
	// its core's cache as it runs, from Ahead's start on and within it,
	// so that what comes from memory is in the cache when a block reads
	// or writes it. It changes no value.
	Ahead []float32
}

// The flags of an FBlock: FLoadC makes it start from C's values instead
// of zero; FFinish finishes its sums once written, as ConvFinish does:
// c = clamp((c + Bias[j]) + Res[r*LDR+j]) to [Lo, Hi] (Res nil: no term).
// A table takes FFinish only where its FFinish says so.
//
// FCached says an earlier tile of the same block read its weights: they
// are in the cache, and a kernel that streams them from memory ahead of
// its reads (the first tile's) need not. It changes no value.
const (
	FLoadC  = 1
	FFinish = 2
	FCached = 4
)

// FRowCheck panics unless f is a block a table's FRow takes: one row,
// K's columns where they lie (no Segs), and every slice long enough.
func FRowCheck(f *FBlock) {
	if f.Rows != 1 || f.Segs != nil {
		panic(fmt.Sprintf("kernels: FRow of %d rows, %d segments: it takes one row, no segments", f.Rows, len(f.Segs)))
	}
	f.Check(1, f.NP)
}

// FRowRef is FBlockRef for the blocks a table's FRow takes (FRowCheck).
func FRowRef(f *FBlock) {
	FRowCheck(f)
	FBlockRef(f)
}

// Check panics unless every slice is long enough for rows ≤ mr and
// panels ≤ np, and the segments, if any, make K and lie within A.
func (f *FBlock) Check(mr, np int) {
	if f.Rows < 1 || f.Rows > mr || f.NP < 1 || f.NP > np || f.K < 0 || f.PStr < 0 || f.LDA < 0 {
		panic(fmt.Sprintf("kernels: FBlock rows=%d np=%d k=%d lda=%d outside 1..%d, 1..%d", f.Rows, f.NP, f.K, f.LDA, mr, np))
	}
	reach := f.K // A's values a row reads from its start
	if f.Segs != nil {
		if f.SegK < 0 || len(f.Segs)*f.SegK != f.K {
			panic(fmt.Sprintf("kernels: FBlock of K = %d in %d segments of %d", f.K, len(f.Segs), f.SegK))
		}
		reach = 0
		for _, off := range f.Segs {
			if off < 0 {
				panic(fmt.Sprintf("kernels: FBlock segment at %d", off))
			}
			reach = max(reach, off+f.SegK)
		}
	}
	if len(f.A) < (f.Rows-1)*f.LDA+reach || len(f.B) < (f.NP-1)*f.PStr+PanelN*f.K || len(f.C) < (f.Rows-1)*f.LDC+f.NP*PanelN {
		panic(fmt.Sprintf("kernels: FBlock slices too short: A %d, B %d, C %d", len(f.A), len(f.B), len(f.C)))
	}
	if f.Flags&FFinish != 0 && (len(f.Bias) < f.NP*PanelN || f.Res != nil && (f.LDR < 0 || len(f.Res) < (f.Rows-1)*f.LDR+f.NP*PanelN)) {
		panic(fmt.Sprintf("kernels: FBlock finish slices too short: Bias %d, Res %d", len(f.Bias), len(f.Res)))
	}
}

// FinishRows finishes the NP·16 columns of f's rows of C as FFinish does,
// on finish (a table's ConvFinish): what a kernel that writes its sums
// without the finish leaves to do.
func (f *FBlock) FinishRows(finish func(dst, bias, res []float32, lo, hi float32)) {
	FinishRows(finish, f.C, f.LDC, f.Rows, f.NP*PanelN, f.Bias, f.Res, f.LDR, f.Lo, f.Hi)
}

// FinishRows finishes the first cols values of rows rows of c (ldc
// apart) on finish (a table's ConvFinish, as ConvFinish finishes one
// run): bias's cols values added, then those of res's rows (ldr apart;
// nil: none), clamped to [lo, hi]. The finish of QFinish, FFinish and
// gemm.Finish done after the outputs are written.
func FinishRows(finish func(dst, bias, res []float32, lo, hi float32), c []float32, ldc, rows, cols int, bias, res []float32, ldr int, lo, hi float32) {
	for r := 0; r < rows; r++ {
		var rr []float32
		if res != nil {
			rr = res[r*ldr:][:cols]
		}
		finish(c[r*ldc:][:cols], bias[:cols], rr, lo, hi)
	}
}

// at returns the index in A of a(r, k).
func (f *FBlock) at(r, k int) int {
	if f.Segs == nil {
		return r*f.LDA + k
	}
	return f.Segs[k/f.SegK] + r*f.LDA + k%f.SegK
}

// BySegments runs f on block, a kernel that reads no Segs: one call per
// segment, each from the sums the one before left (FLoadC). Tables whose
// kernel reads no segments run a segmented block so.
func BySegments(f *FBlock, block func(*FBlock)) {
	if f.Segs == nil {
		block(f)
		return
	}
	f.Check(f.Rows, f.NP)
	if len(f.Segs) == 0 { // K = 0
		g := *f
		g.Segs = nil
		block(&g)
		return
	}
	g := *f
	g.Segs, g.K = nil, f.SegK
	for s, off := range f.Segs {
		g.A = f.A[off:]
		g.B = f.B[s*f.SegK*PanelN:]
		if s > 0 {
			g.Flags |= FLoadC
		}
		g.Flags &^= FFinish // after the last segment only
		if s == len(f.Segs)-1 {
			g.Flags |= f.Flags & FFinish
		}
		block(&g)
	}
}

// FBlockRef is the reference float block kernel.
func FBlockRef(f *FBlock) {
	f.Check(f.Rows, f.NP)
	for r := 0; r < f.Rows; r++ {
		for j := 0; j < f.NP*PanelN; j++ {
			p, col := j/PanelN, j%PanelN
			var s float32
			if f.Flags&FLoadC != 0 {
				s = f.C[r*f.LDC+j]
			}
			b := f.B[p*f.PStr:]
			for k := 0; k < f.K; k++ {
				s = FMA32(f.A[f.at(r, k)], b[PanelN*k+col], s)
			}
			f.C[r*f.LDC+j] = s
		}
	}
	if f.Flags&FFinish != 0 {
		f.FinishRows(ConvFinish)
	}
}
