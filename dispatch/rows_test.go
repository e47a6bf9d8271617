package dispatch

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/quant"
)

// rowKinds fills a row of k values as the rows the convolutions and
// products quantize come: after a ReLU, signed, all negative, all zero,
// below quant.MinScaleRange, wider than a float32 span, one value alone.
var rowKinds = []func(r *rand.Rand, x []float32){
	func(r *rand.Rand, x []float32) {
		for i := range x {
			x[i] = max(0, float32(r.NormFloat64()*3))
		}
	},
	func(r *rand.Rand, x []float32) {
		for i := range x {
			x[i] = float32(r.NormFloat64() * 10)
		}
	},
	func(r *rand.Rand, x []float32) {
		for i := range x {
			x[i] = -float32(r.ExpFloat64()) - 0.5
		}
	},
	func(r *rand.Rand, x []float32) {
		for i := range x {
			x[i] = float32(math.Copysign(0, float64(i%2)-0.5))
		}
	},
	func(r *rand.Rand, x []float32) {
		for i := range x {
			x[i] = float32(r.NormFloat64()) * 0x1p-126
		}
	},
	func(r *rand.Rand, x []float32) {
		for i := range x {
			x[i] = float32(math.Copysign(3e38, r.NormFloat64()))
		}
	},
	func(r *rand.Rand, x []float32) {
		clear(x)
		if len(x) > 0 {
			x[r.IntN(len(x))] = float32(r.NormFloat64())
		}
	},
}

// TestQuantizeRowsEveryTable compares every table's QuantizeRowsU8 with
// MinMax, quant.RowParams and QuantizeU8 row by row: bytes, zeros to the
// row stride, zero points and scales, bit for bit, nothing written past
// the rows, and the first non-finite row reported with the rows before it
// written. Blocks of rows (the AVX-512 kernel takes sixteen at a time)
// end anywhere: one row, a whole block, one past it, a part-block after
// two.
func TestQuantizeRowsEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(91, 91))
	for _, k := range []int{0, 1, 3, 4, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 147, 256, 300} {
		for _, m := range []int{0, 1, 2, 7, 9, 16, 17, 40} {
			lda, ldu := k+r.IntN(3), kernels.PackedKLen(k)+4*r.IntN(2)
			a := make([]float32, max(0, (m-1)*lda+k))
			for i := range m {
				rowKinds[(i+k)%len(rowKinds)](r, a[i*lda:i*lda+k])
			}
			want := make([]uint8, m*ldu)
			wantZP, wantScale := make([]int32, m), make([]float32, m)
			for i := range m {
				row := a[i*lda : i*lda+k]
				lo, hi, _ := kernels.MinMax(row)
				s, inv, zp := quant.RowParams(lo, hi)
				kernels.QuantizeU8(row, inv, zp, want[i*ldu:i*ldu+k])
				wantZP[i], wantScale[i] = zp, s
			}
			for _, tb := range Available() {
				u := slices.Repeat([]uint8{guard}, m*ldu+5)
				zp, scale := slices.Repeat([]int32{-9}, m+1), slices.Repeat([]float32{-9}, m+1)
				if bad := tb.QuantizeRowsU8(a, lda, m, k, u, ldu, zp, scale); bad != -1 {
					t.Fatalf("%v: %d rows of %d: row %d refused", tb, m, k, bad)
				}
				if !slices.Equal(u[:m*ldu], want) || slices.ContainsFunc(u[m*ldu:], func(b uint8) bool { return b != guard }) {
					t.Fatalf("%v: %d rows of %d (strides %d, %d):\n got %v\nwant %v", tb, m, k, lda, ldu, u, want)
				}
				for i := range m {
					if zp[i] != wantZP[i] || math.Float32bits(scale[i]) != math.Float32bits(wantScale[i]) {
						t.Fatalf("%v: %d rows of %d: row %d zero point %d scale %v, want %d %v", tb, m, k, i, zp[i], scale[i], wantZP[i], wantScale[i])
					}
				}
				if zp[m] != -9 || scale[m] != -9 {
					t.Fatalf("%v: %d rows of %d wrote a row's parameters past them", tb, m, k)
				}
			}
		}
	}
	for _, v := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		// Rows of 128 values or more run two chains of vectors, the
		// second from value 32 on (offset 40 of a row of 200 is in the
		// second, 20 in the first, 199 in the masked tail); the other
		// rows take the value at a random offset.
		// The refused row is the first of a block, within one, or the
		// last of the rows, and the rows before it whole blocks or not.
		for _, c := range []struct{ k, off, m, row int }{{1, -1, 4, 2}, {5, -1, 4, 2}, {16, -1, 4, 2}, {40, -1, 4, 2}, {200, 20, 4, 2}, {200, 40, 4, 2}, {200, 199, 4, 2}, {130, -1, 4, 2},
			{64, -1, 20, 16}, {64, -1, 40, 37}, {3, -1, 17, 16}, {64, -1, 33, 0}} {
			m, k, off, row := c.m, c.k, c.off, c.row
			if off < 0 {
				off = r.IntN(k)
			}
			a := make([]float32, m*k)
			for i := range a {
				a[i] = float32(i%7) - 2
			}
			at := row*k + off
			a[at] = v
			for _, tb := range Available() {
				ldu := kernels.PackedKLen(k)
				u, zp, scale := make([]uint8, m*ldu), make([]int32, m), make([]float32, m)
				if bad := tb.QuantizeRowsU8(a, k, m, k, u, ldu, zp, scale); bad != row {
					t.Fatalf("%v: %v at %d of %d rows of %d: row %d reported, want %d", tb, v, at, m, k, bad, row)
				}
				for i, s := range scale {
					if (s != 0) != (i < row) {
						t.Fatalf("%v: %v in row %d of %d: scales %v, want the rows before it written and none after", tb, v, row, m, scale)
					}
				}
			}
		}
	}
}

// TestQuantizeRowsCheck: every table refuses operands too short for the
// rows before a kernel reads or writes them.
func TestQuantizeRowsCheck(t *testing.T) {
	for _, tb := range Available() {
		for _, c := range []struct {
			name           string
			a, u, zp, s    int
			lda, k, m, ldu int
		}{
			{"a", 2*8 + 7, 3 * 8, 3, 3, 8, 8, 3, 8},
			{"u", 3 * 8, 3*8 - 1, 3, 3, 8, 8, 3, 8},
			{"zp", 3 * 8, 3 * 8, 2, 3, 8, 8, 3, 8},
			{"scale", 3 * 8, 3 * 8, 3, 2, 8, 8, 3, 8},
			{"ldu", 3 * 8, 3 * 8, 3, 3, 8, 8, 3, 7},
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%v: a short %s was not refused", tb, c.name)
					}
				}()
				tb.QuantizeRowsU8(make([]float32, c.a), c.lda, c.m, c.k, make([]uint8, c.u), c.ldu, make([]int32, c.zp), make([]float32, c.s))
			}()
		}
	}
}

// TestQuantizeRunsEveryTable compares every table's QuantizeRunsU8 with
// QuantizeU8 run by run: an image's rows of one to seven runs of 1-200
// values at overlapping and far offsets, each row with its own
// parameters, and nothing written between the rows' runs and the next
// row.
func TestQuantizeRunsEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(92, 92))
	x := make([]float32, 4000)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 4)
	}
	for _, w := range []int{1, 3, 15, 16, 17, 21, 48, 64, 100, 192, 200} {
		for _, runs := range []int{1, 2, 3, 7} {
			for _, n := range []int{0, 1, 2, 5} {
				offs, bases := randomRuns(r, len(x), runs, n, w)
				inv, zp := make([]float32, n), make([]int32, n)
				for i := range bases {
					inv[i], zp[i] = float32(r.ExpFloat64()*20), int32(r.IntN(128))
				}
				ldu := runs*w + r.IntN(5)
				want := slices.Repeat([]uint8{guard}, n*ldu+3)
				for i, b := range bases {
					for j, off := range offs {
						kernels.QuantizeU8(x[b+off:b+off+w], inv[i], zp[i], want[i*ldu+j*w:i*ldu+(j+1)*w])
					}
				}
				for _, tb := range Available() {
					u := slices.Repeat([]uint8{guard}, n*ldu+3)
					tb.QuantizeRunsU8(x, bases, offs, w, inv, zp, u, ldu)
					if !slices.Equal(u, want) {
						t.Fatalf("%v: %d rows of %d runs of %d (stride %d):\n got %v\nwant %v", tb, n, runs, w, ldu, u, want)
					}
				}
			}
		}
	}
	refusesRunsOutside(t, func(tb *Table, bases []int, ldu int) {
		tb.QuantizeRunsU8(make([]float32, 1000), bases, []int{0, 5}, 10, []float32{1}, []int32{0}, make([]uint8, 20), ldu)
	})
}

// randomRuns returns the offsets of runs runs and the bases of n rows of
// runs of w values inside an image of size values, overlapping or far
// apart.
func randomRuns(r *rand.Rand, size, runs, n, w int) (offs, bases []int) {
	offs, bases = make([]int, runs), make([]int, n)
	for j := range offs {
		offs[j] = r.IntN(size / 4)
	}
	for i := range bases {
		bases[i] = r.IntN(size - size/4 - w)
	}
	return offs, bases
}

// refusesRunsOutside checks that every table's call of a kernel of runs
// (two of 10 values at offsets 0 and 5 of an image of 1,000, into 20
// bytes) refuses rows that reach outside the image or the output.
func refusesRunsOutside(t *testing.T, call func(tb *Table, bases []int, ldu int)) {
	t.Helper()
	for _, tb := range Available() {
		for _, c := range []struct {
			name  string
			bases []int
			ldu   int
		}{{"a run past the image", []int{990}, 20}, {"a run before the image", []int{-1}, 20}, {"a short row stride", []int{0}, 19}, {"rows past the output", []int{0, 0}, 20}} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%v: %s was not refused", tb, c.name)
					}
				}()
				call(tb, c.bases, c.ldu)
			}()
		}
	}
}

// TestGatherRunsEveryTable compares every table's GatherRunsU8 with
// copies run by run: an image's rows of one to seven runs of 1-200 bytes
// (under, at and past a vector of 64, and a run of several) at
// overlapping and far offsets, and nothing written between the rows' runs
// and the next row; operands too short for the rows are refused.
func TestGatherRunsEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(93, 93))
	x := make([]uint8, 4000)
	for i := range x {
		x[i] = uint8(r.IntN(256))
	}
	for _, w := range []int{1, 3, 15, 63, 64, 65, 100, 128, 192, 200} {
		for _, runs := range []int{1, 2, 3, 7} {
			for _, n := range []int{0, 1, 2, 5} {
				offs, bases := randomRuns(r, len(x), runs, n, w)
				ldu := runs*w + r.IntN(5)
				want := slices.Repeat([]uint8{guard}, n*ldu+3)
				for i, b := range bases {
					for j, off := range offs {
						for v := range w {
							want[i*ldu+j*w+v] = x[b+off+v]
						}
					}
				}
				for _, tb := range Available() {
					u := slices.Repeat([]uint8{guard}, n*ldu+3)
					tb.GatherRunsU8(x, bases, offs, w, u, ldu)
					if !slices.Equal(u, want) {
						t.Fatalf("%v: %d rows of %d runs of %d (stride %d):\n got %v\nwant %v", tb, n, runs, w, ldu, u, want)
					}
				}
			}
		}
	}
	refusesRunsOutside(t, func(tb *Table, bases []int, ldu int) {
		tb.GatherRunsU8(make([]uint8, 1000), bases, []int{0, 5}, 10, make([]uint8, 20), ldu)
	})
}

// TestMinMaxRowsEveryTable compares every table's MinMaxRows with MinMax
// row by row (equal values: a zero's sign may differ), over the rows the
// quantizing kernels take, nothing written past the rows, and the first
// non-finite row reported with the ranges before it written.
func TestMinMaxRowsEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(94, 94))
	for _, k := range []int{0, 1, 15, 16, 17, 64, 127, 128, 129, 300} {
		for _, m := range []int{0, 1, 7, 17} {
			lda := k + r.IntN(3)
			a := make([]float32, max(0, (m-1)*lda+k))
			for i := range m {
				rowKinds[(i+k)%len(rowKinds)](r, a[i*lda:i*lda+k])
			}
			for _, tb := range Available() {
				lo, hi := slices.Repeat([]float32{-9}, m+1), slices.Repeat([]float32{-9}, m+1)
				if bad := tb.MinMaxRows(a, lda, m, k, lo, hi); bad != -1 {
					t.Fatalf("%v: %d rows of %d: row %d refused", tb, m, k, bad)
				}
				for i := range m {
					l, h, _ := kernels.MinMax(a[i*lda : i*lda+k])
					if lo[i] != l || hi[i] != h {
						t.Fatalf("%v: %d rows of %d: row %d range [%v, %v], want [%v, %v]", tb, m, k, i, lo[i], hi[i], l, h)
					}
				}
				if lo[m] != -9 || hi[m] != -9 {
					t.Fatalf("%v: %d rows of %d wrote a range past them", tb, m, k)
				}
			}
		}
	}
	for _, v := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		for _, c := range []struct{ k, m, row, off int }{{5, 4, 2, 3}, {200, 4, 1, 40}, {200, 4, 3, 199}, {64, 20, 17, 0}} {
			a := make([]float32, c.m*c.k)
			for i := range a {
				a[i] = float32(i%7) - 2
			}
			a[c.row*c.k+c.off] = v
			for _, tb := range Available() {
				lo, hi := make([]float32, c.m), make([]float32, c.m)
				if bad := tb.MinMaxRows(a, c.k, c.m, c.k, lo, hi); bad != c.row {
					t.Fatalf("%v: %v in row %d of %d rows of %d: row %d reported", tb, v, c.row, c.m, c.k, bad)
				}
				for i := range c.m {
					if written := lo[i] != 0 || hi[i] != 0; written != (i < c.row) {
						t.Fatalf("%v: %v in row %d: ranges %v %v, want the rows before it written and none after", tb, v, c.row, lo, hi)
					}
				}
			}
		}
	}
}
