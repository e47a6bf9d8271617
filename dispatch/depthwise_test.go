package dispatch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/kernels"
)

// depthwiseDef is kernels.DepthwiseRows's definition, written out as its
// doc comment states it, in float64 sums of each value's terms: the
// magnitude that scales the rounding it allows.
func depthwiseDef(init, src, w []float32, offs []int, step, channels int) (want, mag []float64) {
	want, mag = make([]float64, len(init)), make([]float64, len(init))
	for p := 0; p < len(init)/channels; p++ {
		for c := 0; c < channels; c++ {
			i := p*channels + c
			want[i], mag[i] = float64(init[i]), math.Abs(float64(init[i]))
			for t, off := range offs {
				v := float64(w[t*channels+c]) * float64(src[p*step+off+c])
				want[i] += v
				mag[i] += math.Abs(v)
			}
		}
	}
	return want, mag
}

// depthwiseClose returns the first index where got is not within
// DepthwiseRows's stated rounding of want (mag: the sum of the terms'
// magnitudes), or -1.
func depthwiseClose(got, want []float32, mag []float64) int {
	for i := range got {
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= 1e-6*mag[i]+1e-7) {
			return i
		}
	}
	return -1
}

// TestDepthwiseRowsEveryTable runs every table's DepthwiseRows on channel
// counts around the vector widths (16, 8, 4 and the tails), pixel counts
// around the four-pixel blocks, one to nine taps at scattered and
// overlapping offsets, steps of a stride-1 and a stride-2 row and
// unaligned ones, with aligned and unaligned slices (depthwiseCase).
func TestDepthwiseRowsEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 21))
	for _, channels := range []int{1, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 20, 24, 31, 32, 33, 40, 48, 88} {
		for _, pixels := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 13} {
			for _, taps := range []int{1, 2, 3, 5, 9} {
				for _, step := range []int{channels, 2 * channels, channels + 3, 0} {
					for _, shift := range []int{0, 1} {
						depthwiseCase(t, r, channels, pixels, taps, step, shift)
					}
				}
			}
		}
	}
}

// FuzzDepthwiseRows decodes bytes into a DepthwiseRows problem (channels,
// pixels, taps, step, alignment, values) and compares every table with
// the reference (depthwiseCase).
func FuzzDepthwiseRows(f *testing.F) {
	f.Add(uint8(8), uint8(5), uint8(9), uint8(16), false, int64(1))
	f.Add(uint8(33), uint8(13), uint8(25), uint8(35), true, int64(2))
	f.Fuzz(func(t *testing.T, channels8, pixels8, taps8, step8 uint8, unaligned bool, seed int64) {
		channels := 1 + int(channels8)%96
		shift := 0
		if unaligned {
			shift = 1
		}
		r := rand.New(rand.NewPCG(uint64(seed), 3))
		depthwiseCase(t, r, channels, int(pixels8)%24, 1+int(taps8)%25, int(step8)%(3*channels+1), shift)
	})
}

// depthwiseCase runs every table's DepthwiseRows on random values of the
// shape given, offsets scattered and overlapping: within the stated
// rounding of the reference, which is within it of the definition, with
// guard bands around dst and the inputs checked unmodified.
func depthwiseCase(t *testing.T, r *rand.Rand, channels, pixels, taps, step, shift int) {
	t.Helper()
	offs := make([]int, taps)
	for i := range offs {
		offs[i] = r.IntN(4*channels + 5)
	}
	depthwiseOffsCase(t, r, channels, pixels, offs, step, shift)
}

// depthwiseOffsCase is depthwiseCase for the offsets given; it returns
// the problem and the first vector table's answer (nil without one).
func depthwiseOffsCase(t *testing.T, r *rand.Rand, channels, pixels int, offs []int, step, shift int) (init, src, w, vector []float32) {
	t.Helper()
	taps := len(offs)
	nsrc := slices.Max(offs) + channels
	if pixels > 0 {
		nsrc += (pixels - 1) * step
	}
	src = vecInput(r, shift+nsrc, 1, false)[shift:]
	w = vecInput(r, taps*channels, 1, false)
	init = vecInput(r, pixels*channels, 1, false)
	def, mag := depthwiseDef(init, src, w, offs, step, channels)
	want := slices.Clone(init)
	kernels.DepthwiseRows(want, src, w, offs, step, channels)
	what := fmt.Sprintf("channels=%d pixels=%d taps=%d step=%d shift=%d", channels, pixels, taps, step, shift)
	for i := range want {
		if d := math.Abs(float64(want[i]) - def[i]); !(d <= 1e-6*mag[i]+1e-7) {
			t.Fatalf("reference %s: dst[%d] = %v, definition %v", what, i, want[i], def[i])
		}
	}
	srcCopy, wCopy, offsCopy := slices.Clone(src), slices.Clone(w), slices.Clone(offs)
	// vector is the first vector table's answer.
	for _, tb := range Available() {
		dst, outside := inGuard(init, shift)
		tb.DepthwiseRows(dst, src, w, offs, step, channels)
		if i := depthwiseClose(dst, want, mag); i >= 0 {
			t.Fatalf("%v %s: dst[%d] = %v, reference %v", tb, what, i, dst[i], want[i])
		}
		// The vector tables of an architecture add the taps in the same
		// order with the same fused multiply-adds: the same bits.
		if tb != Reference() {
			if vector == nil {
				vector = slices.Clone(dst)
			} else if i := diffBits(dst, vector); i >= 0 {
				t.Fatalf("%v %s: dst[%d] = %v, the first vector table wrote %v", tb, what, i, dst[i], vector[i])
			}
		}
		if i := outside(); i >= 0 {
			t.Fatalf("%v %s: wrote outside dst at %d", tb, what, i)
		}
		if diffBits(src, srcCopy) >= 0 || diffBits(w, wCopy) >= 0 || !slices.Equal(offs, offsCopy) {
			t.Fatalf("%v %s: inputs modified", tb, what)
		}
	}
	return init, src, w, vector
}

// TestDepthwiseRowsGrid runs every table's DepthwiseRows on the problems
// the channels-last convolutions give it: taps on a grid of rows of
// adjacent pixels (3x3, 5x5, 3x5, 1x3, 2x5, one 3-wide and one 5-wide
// grid kernel's), output pixels adjacent (step = channels), rows of a
// padded image apart. Within the reference's rounding (depthwiseOffsCase),
// and with the bits each table gives pixel by pixel, which its grid
// kernels, eight pixels at a time, never take.
func TestDepthwiseRowsGrid(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 22))
	for _, channels := range []int{3, 8, 16, 24, 32, 48, 88, 200} {
		for _, pixels := range []int{1, 7, 8, 9, 16, 21} {
			for _, g := range [][2]int{{3, 3}, {5, 5}, {3, 5}, {1, 3}, {2, 5}} {
				kh, kw := g[0], g[1]
				row := (pixels + kw - 1 + r.IntN(3)) * channels // a padded row
				var offs []int
				for y := range kh {
					for x := range kw {
						offs = append(offs, y*row+x*channels)
					}
				}
				for _, shift := range []int{0, 1} {
					init, src, w, _ := depthwiseOffsCase(t, r, channels, pixels, offs, channels, shift)
					for _, tb := range Available() {
						whole := slices.Clone(init)
						tb.DepthwiseRows(whole, src, w, offs, channels, channels)
						one := slices.Clone(init)
						for p := range pixels {
							tb.DepthwiseRows(one[p*channels:(p+1)*channels], src[p*channels:], w, offs, channels, channels)
						}
						if i := diffBits(whole, one); i >= 0 {
							t.Fatalf("%v channels=%d pixels=%d grid %dx%d shift=%d: dst[%d] = %v, pixel by pixel %v",
								tb, channels, pixels, kh, kw, shift, i, whole[i], one[i])
						}
					}
				}
			}
		}
	}
}

// TestDepthwiseRowsSpecials: NaN, subnormals and zeros of either sign
// among the inputs give NaN where the reference gives NaN and its value
// within rounding elsewhere, on every table (but where terms overflow or
// are infinite, which fused multiply-adds may round otherwise).
func TestDepthwiseRowsSpecials(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 22))
	for _, channels := range []int{8, 12, 16, 40} {
		for _, pixels := range []int{1, 4, 6} {
			offs := []int{0, channels, 2 * channels, 5 * channels}
			step := channels
			src := vecInput(r, (pixels-1)*step+offs[3]+channels, 1, true)
			w := vecInput(r, len(offs)*channels, 1, true)
			init := vecInput(r, pixels*channels, 1, true)
			want := slices.Clone(init)
			kernels.DepthwiseRows(want, src, w, offs, step, channels)
			_, mag := depthwiseDef(init, src, w, offs, step, channels)
			for _, tb := range Available() {
				got := slices.Clone(init)
				tb.DepthwiseRows(got, src, w, offs, step, channels)
				for i := range got {
					g, wv := float64(got[i]), float64(want[i])
					switch {
					case g == wv:
					case math.IsInf(mag[i], 0):
						// Terms that overflow: whether a fused multiply-add
						// brings a sum back is the rounding's business.
					case math.IsNaN(wv) || math.IsNaN(g):
						if math.IsNaN(wv) != math.IsNaN(g) {
							t.Fatalf("%v channels=%d pixels=%d: dst[%d] = %v, reference %v", tb, channels, pixels, i, g, wv)
						}
					case !(math.Abs(g-wv) <= 1e-6*mag[i]+1e-7):
						t.Fatalf("%v channels=%d pixels=%d: dst[%d] = %v, reference %v", tb, channels, pixels, i, g, wv)
					}
				}
			}
		}
	}
}

// BenchmarkDepthwiseRows runs every table's DepthwiseRows on output rows
// of 96 pixels of a 3×3 and a 5×5 kernel over a padded channels-last
// image (the rows of PaddleOCR's depthwise convolutions), reporting
// GOP/s (2 operations per multiply-add).
func BenchmarkDepthwiseRows(b *testing.B) {
	r := rand.New(rand.NewPCG(23, 23))
	for _, c := range []struct{ channels, k int }{{8, 3}, {32, 3}, {88, 5}, {200, 5}} {
		const pixels = 96
		cols := pixels + c.k - 1
		var offs []int
		for ky := 0; ky < c.k; ky++ {
			for kx := 0; kx < c.k; kx++ {
				offs = append(offs, (ky*cols+kx)*c.channels)
			}
		}
		src := vecInput(r, c.k*cols*c.channels, 1, false)
		w := vecInput(r, len(offs)*c.channels, 1, false)
		dst := make([]float32, pixels*c.channels)
		for _, tb := range Available() {
			b.Run(fmt.Sprintf("c%d_k%d/%s", c.channels, c.k, tb), func(b *testing.B) {
				b.SetBytes(int64(4 * len(dst)))
				b.ReportAllocs()
				for b.Loop() {
					tb.DepthwiseRows(dst, src, w, offs, c.channels, c.channels)
				}
				b.ReportMetric(2*float64(len(dst)*len(offs))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
			})
		}
	}
}

// TestPadChannelsEveryTable widens images of every channel count from 0
// to 50 to strides from their own to past the next two multiples of 16,
// on every table, against PadChannels's definition written out: dst
// starts as NaNs, so a lane left unwritten shows, and the values past the
// n pixels must stay NaNs. The source ends where its last pixel does (a
// tail load reading past it would fault or read a neighbour), and sources
// or destinations one value short are refused with a panic.
func TestPadChannelsEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(73, 73))
	nan := float32(math.NaN())
	for _, tb := range Available() {
		for ch := 0; ch <= 50; ch++ {
			for _, cs := range []int{ch, ch + 1, (ch + 15) / 16 * 16, (ch+15)/16*16 + 16, (ch+15)/16*16 + 32} {
				if cs < ch {
					continue
				}
				for _, n := range []int{0, 1, 2, 7} {
					src := make([]float32, n*ch)
					for i := range src {
						src[i] = r.Float32()*2 - 1
					}
					dst := make([]float32, n*cs+5)
					for i := range dst {
						dst[i] = nan
					}
					tb.PadChannels(dst, src, n, ch, cs)
					for i := range n {
						for c := range cs {
							want := float32(0)
							if c < ch {
								want = src[i*ch+c]
							}
							if got := dst[i*cs+c]; math.Float32bits(got) != math.Float32bits(want) {
								t.Fatalf("%v: %d pixels of %d channels at stride %d: pixel %d channel %d = %v, want %v", tb, n, ch, cs, i, c, got, want)
							}
						}
					}
					for i := n * cs; i < len(dst); i++ {
						if !math.IsNaN(float64(dst[i])) {
							t.Fatalf("%v: %d pixels of %d channels at stride %d wrote value %d past them", tb, n, ch, cs, i)
						}
					}
					if n == 0 || ch == 0 {
						continue
					}
					for _, short := range []struct{ dst, src int }{{n*cs - 1, n * ch}, {n * cs, n*ch - 1}} {
						func() {
							defer func() {
								if recover() == nil {
									t.Fatalf("%v: %d pixels of %d channels at stride %d into %d values from %d were not refused", tb, n, ch, cs, short.dst, short.src)
								}
							}()
							tb.PadChannels(dst[:short.dst], src[:short.src], n, ch, cs)
						}()
					}
				}
			}
		}
	}
}

// TestCopyBlockEveryTable copies blocks of 0 to 7 rows of every width
// from 0 to 50 between row strides of their own width, one more, the next
// multiples of 16 and beyond, on every table, against the definition:
// dst starts as NaNs, and what lies between its rows and past the block
// must stay so (a tail store must not write the next row's values or
// past the last); blocks one value short are refused with a panic.
func TestCopyBlockEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(79, 79))
	for _, tb := range Available() {
		for cols := 0; cols <= 50; cols++ {
			strides := []int{cols, cols + 1, (cols + 15) / 16 * 16, (cols+15)/16*16 + 16, 3*cols + 5}
			for si, lds := range strides {
				ldd := strides[(si+2)%len(strides)]
				if lds < cols || ldd < cols {
					continue
				}
				for _, rows := range []int{0, 1, 2, 7} {
					n := func(ld int) int {
						if rows == 0 || cols == 0 {
							return 0
						}
						return (rows-1)*ld + cols
					}
					src := make([]float32, n(lds))
					for i := range src {
						src[i] = r.Float32()*2 - 1
					}
					dst := make([]float32, n(ldd)+5)
					for i := range dst {
						dst[i] = float32(math.NaN())
					}
					tb.CopyBlock(dst, ldd, src, lds, rows, cols)
					for i := range dst {
						row, c := i/max(ldd, 1), i%max(ldd, 1)
						inside := row < rows && c < cols
						if inside && math.Float32bits(dst[i]) != math.Float32bits(src[row*lds+c]) {
							t.Fatalf("%v: %d rows of %d (strides %d <- %d): [%d][%d] = %v, want %v", tb, rows, cols, ldd, lds, row, c, dst[i], src[row*lds+c])
						}
						if !inside && !math.IsNaN(float64(dst[i])) {
							t.Fatalf("%v: %d rows of %d (strides %d <- %d) wrote value %d outside the block", tb, rows, cols, ldd, lds, i)
						}
					}
					if rows == 0 || cols == 0 {
						continue
					}
					for _, short := range []struct{ dst, src int }{{n(ldd) - 1, n(lds)}, {n(ldd), n(lds) - 1}} {
						func() {
							defer func() {
								if recover() == nil {
									t.Fatalf("%v: %d rows of %d (strides %d <- %d) into %d values from %d were not refused", tb, rows, cols, ldd, lds, short.dst, short.src)
								}
							}()
							tb.CopyBlock(dst[:short.dst], ldd, src[:short.src], lds, rows, cols)
						}()
					}
				}
			}
		}
	}
}

// TestEveryOtherEveryTable takes every other value of rows of 0 to 100
// outputs from sources of exactly 2n-1 values (the last one read is the
// source's last), 2n and more, on every table, against the definition;
// dst past its length is not written (it is a window of a NaN-filled
// row), and a source one value short is refused with a panic.
func TestEveryOtherEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(83, 83))
	for _, tb := range Available() {
		for n := 0; n <= 100; n++ {
			for _, extra := range []int{-1, 0, 7} {
				if n == 0 && extra < 0 {
					continue
				}
				src := make([]float32, 2*n+extra)
				for i := range src {
					src[i] = r.Float32()*2 - 1
				}
				row := make([]float32, n+3)
				for i := range row {
					row[i] = float32(math.NaN())
				}
				tb.EveryOther(row[:n], src)
				for j := range n {
					if math.Float32bits(row[j]) != math.Float32bits(src[2*j]) {
						t.Fatalf("%v: %d values from %d: [%d] = %v, want %v", tb, n, len(src), j, row[j], src[2*j])
					}
				}
				for j := n; j < len(row); j++ {
					if !math.IsNaN(float64(row[j])) {
						t.Fatalf("%v: %d values from %d wrote [%d]", tb, n, len(src), j)
					}
				}
				if n > 0 {
					func() {
						defer func() {
							if recover() == nil {
								t.Fatalf("%v: %d values from %d were not refused", tb, n, 2*n-2)
							}
						}()
						tb.EveryOther(row[:n], src[:2*n-2])
					}()
				}
			}
		}
	}
}
