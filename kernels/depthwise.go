package kernels

import "fmt"

// DepthwiseRows adds the kernel taps of a channels-last depthwise
// convolution to a run of output pixels, each of channels values:
//
//	for p := 0; p < len(dst)/channels; p++ {
//		for t := range offs {
//			for c := 0; c < channels; c++ {
//				dst[p*channels+c] += w[t*channels+c] * src[p*step+offs[t]+c]
//			}
//		}
//	}
//
// (each dst value gets its taps added in the order of offs). src is a
// channels-last image the taps never leave (a zero-padded copy, so there
// are no borders): pixel p's tap t reads the channels at p·step + offs[t];
// w holds each tap's channels-wide weights. Preconditions: channels >= 1,
// len(dst) a multiple of channels, step >= 0, every offs[t] >= 0,
// len(w) >= len(offs)·channels and len(src) >= (len(dst)/channels − 1)·step
// + max(offs) + channels. A twin that fuses each multiply-add
// (vfmadd231ps, fmla, as the compiler may on some architectures) agrees
// within rounding, as ConvTaps's do: |Δ| ≤ 1e-6·(|dst[i]| + Σ_t |w·src|)
// + 1e-7.
func DepthwiseRows(dst, src, w []float32, offs []int, step, channels int) {
	DepthwiseRowsCols(dst, src, w, offs, step, channels, 0)
}

// DepthwiseRowsCols is DepthwiseRows on channels [c0, channels) of every
// pixel only: what a twin whose vectors cover the first c0 channels
// leaves. 0 <= c0 <= channels.
func DepthwiseRowsCols(dst, src, w []float32, offs []int, step, channels, c0 int) {
	if channels <= 0 || c0 >= channels || len(dst) < channels || len(offs) == 0 {
		return
	}
	n := len(dst) / channels
	w = w[:len(offs)*channels]
	for p := 0; p < n; p++ {
		d := dst[p*channels+c0 : (p+1)*channels]
		base := p*step + c0
		for t, off := range offs {
			s := src[base+off:][:len(d)]
			wt := w[t*channels+c0:][:len(d)]
			for c := range d {
				d[c] += wt[c] * s[c]
			}
		}
	}
}

// PadChannels copies n pixels of ch channels each, packed in src, into
// dst at a stride of cs channels (cs >= ch), each pixel's channels past
// ch cleared: dst[i·cs+c] = src[i·ch+c] for c < ch, 0 for ch <= c < cs.
// It widens a channels-last image to the channel multiple DepthwiseRows
// runs its widest vectors on. It panics unless cs >= ch >= 0, n >= 0,
// len(src) >= n·ch and len(dst) >= n·cs.
func PadChannels(dst, src []float32, n, ch, cs int) {
	CheckPadChannels(dst, src, n, ch, cs)
	if cs == ch {
		copy(dst[:n*ch], src[:n*ch])
		return
	}
	for i := range n {
		copy(dst[i*cs:i*cs+ch], src[i*ch:(i+1)*ch])
		clear(dst[i*cs+ch : (i+1)*cs])
	}
}

// CheckPadChannels panics unless PadChannels's preconditions hold.
func CheckPadChannels(dst, src []float32, n, ch, cs int) {
	if n < 0 || ch < 0 || cs < ch || len(src) < n*ch || len(dst) < n*cs {
		panic(fmt.Sprintf("kernels: PadChannels of %d pixels of %d channels (stride %d) from %d values into %d", n, ch, cs, len(src), len(dst)))
	}
}

// CopyBlock copies rows rows of cols values from src (row stride lds)
// into dst (row stride ldd): dst[r·ldd+c] = src[r·lds+c]. It narrows the
// widened channels of a depthwise row's sums back to their own and moves
// a product's padded last panel out of its scratch. It panics unless
// rows, cols >= 0, ldd, lds >= cols and the slices hold the blocks (when
// rows and cols are not 0).
func CopyBlock(dst []float32, ldd int, src []float32, lds int, rows, cols int) {
	CheckCopyBlock(dst, ldd, src, lds, rows, cols)
	if rows == 0 || cols == 0 {
		return
	}
	if ldd == cols && lds == cols {
		copy(dst[:rows*cols], src[:rows*cols])
		return
	}
	for r := range rows {
		copy(dst[r*ldd:r*ldd+cols], src[r*lds:r*lds+cols])
	}
}

// CheckCopyBlock panics unless CopyBlock's preconditions hold.
func CheckCopyBlock(dst []float32, ldd int, src []float32, lds int, rows, cols int) {
	if rows < 0 || cols < 0 || rows > 0 && cols > 0 && (ldd < cols || lds < cols || len(dst) < (rows-1)*ldd+cols || len(src) < (rows-1)*lds+cols) {
		panic(fmt.Sprintf("kernels: CopyBlock of %d rows of %d values from %d (row stride %d) into %d (row stride %d)", rows, cols, len(src), lds, len(dst), ldd))
	}
}

// EveryOther sets dst[j] = src[2j] for j < len(dst): a plane row's even
// or odd columns (from src one value on) for a stride-2 convolution's
// phased layout. It panics unless len(src) >= 2·len(dst) − 1.
func EveryOther(dst, src []float32) {
	CheckEveryOther(dst, src)
	if len(dst) == 0 {
		return
	}
	src = src[:2*len(dst)-1]
	for j := range dst {
		dst[j] = src[2*j]
	}
}

// CheckEveryOther panics unless EveryOther's precondition holds.
func CheckEveryOther(dst, src []float32) {
	if len(dst) > 0 && len(src) < 2*len(dst)-1 {
		panic(fmt.Sprintf("kernels: EveryOther of %d values from %d", len(dst), len(src)))
	}
}
