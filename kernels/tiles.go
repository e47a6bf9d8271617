package kernels

// Tile4 and Tile1 are quantized tile kernels of 4 rows and 1 row × one
// panel of 16 columns: acc is overwritten with the tile's sums over kq
// groups of 4 k (QTile's contract, less the table's QOffset).
type (
	Tile4 func(u []uint8, ldu int, bp []int8, kq int, acc []int32)
	Tile1 func(u []uint8, bp []int8, kq int, acc []int32)
)

// QBlockTiles runs q panel by panel on a table's tile kernels, with the
// epilogue in Go (QStore). Tables whose assembly stops at int32 sums use
// it as their block kernel; it gives the bits QBlockRef gives.
func QBlockTiles(q *QBlock, tile4 Tile4, tile1 Tile1) {
	acc := &q.tile
	for p := 0; p < q.NP; p++ {
		b := q.B[p*q.PStr : p*q.PStr+64*q.KQ]
		for r0 := 0; r0 < q.Rows; {
			// The tile covers rows base..base+rows-1; rows r0.. of it are
			// stored. The last 1-3 rows of a block of 4 or more run as a
			// 4-row tile ending at the last row (a 1-row tile streams the
			// panel as often as a 4-row one), storing only the rows not
			// stored yet: an accumulating store must not see a row twice.
			base, rows := r0, 4
			switch {
			case r0+4 <= q.Rows:
				tile4(q.U[r0*q.LDU:], q.LDU, b, q.KQ, acc[:])
			case q.Rows >= 4:
				base = q.Rows - 4
				tile4(q.U[base*q.LDU:], q.LDU, b, q.KQ, acc[:])
			case q.Rows == 3 && len(q.U) >= 3*q.LDU+4*q.KQ:
				// 3 rows with room for a fourth (QRows pads them): one
				// 4-row tile whose extra row is never stored.
				rows = q.Rows
				tile4(q.U, q.LDU, b, q.KQ, acc[:])
			default:
				rows = 1
				tile1(q.U[r0*q.LDU:r0*q.LDU+4*q.KQ], b, q.KQ, acc[:PanelN])
			}
			for r := r0 - base; r < rows; r++ {
				QStoreRow(q, base+r, p*PanelN, acc[r*PanelN:(r+1)*PanelN])
			}
			r0 = base + rows
		}
	}
}

// FTileN and FTile1 are float tile kernels of some rows and 1 row × one
// panel: c = (load ? c : 0) + Σ a·b in k order.
type (
	FTileN func(a []float32, lda int, bp []float32, k int, c []float32, ldc int, load bool)
	FTile1 func(a []float32, bp []float32, k int, c []float32, load bool)
)

// FBlockTiles runs f panel by panel on a table's float tiles of rows rows
// and of one row; a segmented f segment by segment (BySegments); with
// FFinish, its rows finished after (FinishRows on ConvFinish).
func FBlockTiles(f *FBlock, rows int, tileN FTileN, tile1 FTile1) {
	if f.Segs != nil {
		BySegments(f, func(g *FBlock) { FBlockTiles(g, rows, tileN, tile1) })
		return
	}
	load := f.Flags&FLoadC != 0
	for p := 0; p < f.NP; p++ {
		b := f.B[p*f.PStr : p*f.PStr+PanelN*f.K]
		r0 := 0
		for ; r0+rows <= f.Rows; r0 += rows {
			tileN(f.A[r0*f.LDA:], f.LDA, b, f.K, f.C[r0*f.LDC+p*PanelN:], f.LDC, load)
		}
		for ; r0 < f.Rows; r0++ {
			tile1(f.A[r0*f.LDA:r0*f.LDA+f.K], b, f.K, f.C[r0*f.LDC+p*PanelN:], load)
		}
	}
	if f.Flags&FFinish != 0 {
		f.FinishRows(ConvFinish)
	}
}

// QBlockRows runs q on block, a kernel of at most n rows, n rows at a
// time, each call's row-indexed operands moved to its first row. q is
// changed in place (an argument passed to a kernel through a function
// value escapes) and restored before it returns.
func QBlockRows(q *QBlock, n int, block func(*QBlock)) {
	if q.Rows <= n {
		block(q)
		return
	}
	rows, u, off, sa, acc, fsum, c, res := q.Rows, q.U, q.Off, q.SA, q.Acc, q.FSum, q.C, q.Res
	for r0 := 0; r0 < rows; r0 += n {
		q.Rows = min(n, rows-r0)
		q.U = sliceFrom(u, r0*q.LDU)
		q.Off, q.SA = sliceFrom(off, r0), sliceFrom(sa, r0)
		q.Acc, q.FSum = sliceFrom(acc, r0*q.AccStr), sliceFrom(fsum, r0*q.AccStr)
		q.C, q.Res = sliceFrom(c, r0*q.LDC), sliceFrom(res, r0*q.LDR)
		block(q)
	}
	q.Rows, q.U, q.Off, q.SA, q.Acc, q.FSum, q.C, q.Res = rows, u, off, sa, acc, fsum, c, res
}

// sliceFrom returns s from index i on, or its empty end when it is
// shorter: an operand the flags do not use may be short or nil (and stays
// nil).
func sliceFrom[T any](s []T, i int) []T { return s[min(i, len(s)):] }
