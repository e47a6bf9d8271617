//go:build gc && !purego

package amd64

import "github.com/quantserve/quantserve/kernels"

// The AMX tile kernel. A tile is up to 16 rows of up to 64 bytes; tdpbusd
// multiplies a tile of 16 rows × 64 activation bytes by one of 16 groups
// × 16 columns × 4 weight bytes (a panel's layout, 16 groups of it) into
// 16 × 16 int32 sums, 16,384 multiply-adds an instruction.

// amxConfig is two 64-byte tile configurations, as ldtilecfg loads them:
// the shapes of a step of 16 groups of 4 k, then those of the last,
// shorter step (when KQ is not a multiple of 16).
type amxConfig [2][64]byte

// amxConfigs is qBlockAMX's configurations: those of a group of 32 rows,
// then those of the last group of a block whose rows are not a multiple
// of 32.
type amxConfigs [2]amxConfig

// shape sets tile t of configuration c to rows rows of colsb bytes.
func (cfg *amxConfig) shape(c, t, rows, colsb int) {
	cfg[c][16+2*t] = byte(colsb)
	cfg[c][16+2*t+1] = byte(colsb >> 8)
	cfg[c][48+t] = byte(rows)
}

// set configures the tiles of a group of rows rows (1-32), np panels
// (1-2) and kq groups of 4 k: C(t, p) = tmm(2t+p), A(t) = tmm(4+t),
// B(p) = tmm(6+p), as qBlockAMX uses them.
func (cfg *amxConfig) set(rows, np, kq int) {
	*cfg = amxConfig{}
	tail := kq % 16
	for c := range cfg {
		steps := 16
		if c == 1 {
			if tail == 0 {
				break // no tail: its configuration stays empty
			}
			steps = tail
		}
		cfg[c][0] = 1 // palette 1: eight tiles of up to 16 rows × 64 bytes
		for t := 0; t < 2; t++ {
			r := min(16, rows-16*t)
			if r <= 0 {
				break
			}
			cfg.shape(c, 4+t, r, 4*steps)
			for p := 0; p < np; p++ {
				cfg.shape(c, 2*t+p, r, 64)
			}
		}
		for p := 0; p < np; p++ {
			cfg.shape(c, 6+p, steps, 64)
		}
	}
}

// amxGroups holds the configurations of a group of 32 rows, by panels
// (1-2) and kq%16, made once.
var amxGroups = func() (g [2][16]amxConfig) {
	for np := 1; np <= 2; np++ {
		for tail := range 16 {
			g[np-1][tail].set(32, np, 16+tail)
		}
	}
	return g
}()

// amxMinRows is the fewest rows QBlockAMX multiplies on tiles; blocks of
// fewer run on QBlockAVX512VNNI, eight rows at a time, as do blocks of
// under 16 groups of 4 k (a step's tile is filled by 16).
const amxMinRows = 8

// QBlockAMX computes kernels.QBlockRef(q) on AMX tiles, up to 96 rows × 2
// panels, in groups of 32 rows. Requires AMX-TILE and AMX-INT8 granted to
// the process (RequestAMX), and what QBlockAVX512VNNI requires.
//
// It takes QFinish: the per-channel epilogue finishes each output vector
// as it writes it.
func QBlockAMX(q *kernels.QBlock) {
	q.Check(96, 2)
	if q.Rows < amxMinRows || q.KQ < 16 {
		kernels.QBlockRows(q, 8, QBlockAVX512VNNI)
		return
	}
	var cfg amxConfigs
	cfg[0] = amxGroups[q.NP-1][q.KQ%16]
	if last := q.Rows % 32; last != 0 {
		cfg[1].set(last, q.NP, q.KQ)
	}
	qBlockAMX(q, &cfg)
}

// PeakAMXOpsPerIter is the ops of an iteration of PeakAMX's loop.
const PeakAMXOpsPerIter = 4 * 16 * 16 * 64 * 2

// PeakAMX runs the tdpbusd peak loop. Requires AMX granted (RequestAMX).
func PeakAMX(iters int) {
	peakAMX(&amxGroups[1][0], max(iters, 1)) // 32 rows, 2 panels: every tile full
}

// qBlockAMX computes kernels.QBlockRef(q) on AMX tiles configured by cfg
// (the configurations of a group of 32 rows and of the last group); q
// checked with q.Check(96, 2), 16 ≤ KQ.
//
//go:noescape
func qBlockAMX(q *kernels.QBlock, cfg *amxConfigs)

// peakAMX runs iters iterations of four independent tdpbusd chains on
// tiles configured by cfg (the full shape).
//
//go:noescape
func peakAMX(cfg *amxConfig, iters int)
