package kernels

// Kernels of the convolution and pooling paths: a depthwise row of kernel
// taps, transposes between channel planes and channels-last rows, a
// convolution's output stage (bias, residual, clamp), the HardSigmoid
// family, per-channel row scaling and global pooling's sum. Each loop
// below is its kernel's definition; the SIMD twins give the same bits,
// but ConvTaps's, whose fused multiply-adds round once per tap (see
// ConvTaps).

// ConvTaps adds a row of kernel taps to dst:
//
//	for i := range dst {
//		for j := range w {
//			dst[i] += w[j] * src[i+j*step]
//		}
//	}
//
// (computed tap by tap, which adds the same terms to each dst[i] in the
// same order). len(src) >= len(dst) + (len(w)-1)·step, step >= 0. A twin
// that fuses each multiply-add (vfmadd231ps, as the compiler may on some
// architectures) agrees within rounding: |Δ| ≤ 1e-6·(|dst[i]| +
// Σ_j |w[j]·src[i+j·step]|) + 1e-7.
func ConvTaps(dst, src, w []float32, step int) {
	if len(dst) == 0 || len(w) == 0 {
		return
	}
	src = src[:len(dst)+(len(w)-1)*step]
	for j, a := range w {
		s := src[j*step : j*step+len(dst)]
		i := 0
		for ; i+4 <= len(dst); i += 4 {
			d, x := dst[i:i+4:i+4], s[i:i+4:i+4]
			d[0] += a * x[0]
			d[1] += a * x[1]
			d[2] += a * x[2]
			d[3] += a * x[3]
		}
		for ; i < len(dst); i++ {
			dst[i] += a * s[i]
		}
	}
}

// TransposeCols writes columns [c0, c1) of rows [r0, rows) of src
// (rows×cols) into dst (cols×rows): dst[c·rows + r] = src[r·cols + c]. It
// reads eight rows of src at a time, each a sequential stream, and writes
// eight adjacent values of dst per column.
func TransposeCols[T float32 | uint8 | int8](dst, src []T, rows, cols, r0, c0, c1 int) {
	r := r0
	for ; r+8 <= rows; r += 8 {
		s0, s1, s2, s3 := src[r*cols:][:cols], src[(r+1)*cols:][:cols], src[(r+2)*cols:][:cols], src[(r+3)*cols:][:cols]
		s4, s5, s6, s7 := src[(r+4)*cols:][:cols], src[(r+5)*cols:][:cols], src[(r+6)*cols:][:cols], src[(r+7)*cols:][:cols]
		for c := c0; c < c1; c++ {
			d := dst[c*rows+r : c*rows+r+8 : c*rows+r+8]
			d[0], d[1], d[2], d[3] = s0[c], s1[c], s2[c], s3[c]
			d[4], d[5], d[6], d[7] = s4[c], s5[c], s6[c], s7[c]
		}
	}
	if rows-r == 3 {
		// An RGB image's planes laid channels-last (a network's first
		// layer): a column's three values together, where the loop below
		// took 2-3 times as long writing each line of dst once a row.
		s0, s1, s2 := src[r*cols:][:cols], src[(r+1)*cols:][:cols], src[(r+2)*cols:][:cols]
		for c := c0; c < c1; c++ {
			d := dst[c*rows+r : c*rows+r+3 : c*rows+r+3]
			d[0], d[1], d[2] = s0[c], s1[c], s2[c]
		}
		return
	}
	for ; r < rows; r++ {
		sr := src[r*cols:][:cols]
		for c := c0; c < c1; c++ {
			dst[c*rows+r] = sr[c]
		}
	}
}

// Transpose8 writes a strip of eight rows of src (row stride lds) into
// columns of dst (row stride ldd):
//
//	for i := 0; i < 8; i++ {
//		for j := 0; j < n; j++ {
//			dst[j*ldd+i] = src[i*lds+j]
//		}
//	}
//
// ldd >= 8 (dst's rows do not overlap), lds >= 0.
func Transpose8(dst, src []float32, ldd, lds, n int) {
	if n <= 0 {
		return
	}
	for i := 0; i < 8; i++ {
		for j, v := range src[i*lds : i*lds+n] {
			dst[j*ldd+i] = v
		}
	}
}

// ConvFinish adds bias and res (each nil or as long as dst) to dst and
// clamps to [lo, hi] as the vector unit's max and min do:
//
//	v := dst[i] + bias[i] + res[i]
//	if lo > v { v = lo }
//	if hi < v { v = hi }
//
// so NaN stays NaN and a zero keeps its sign.
func ConvFinish(dst, bias, res []float32, lo, hi float32) {
	if bias != nil {
		bias = bias[:len(dst)]
	}
	if res != nil {
		res = res[:len(dst)]
	}
	for i, v := range dst {
		if bias != nil {
			v += bias[i]
		}
		if res != nil {
			v += res[i]
		}
		if lo > v {
			v = lo
		}
		if hi < v {
			v = hi
		}
		dst[i] = v
	}
}

// The forms of ConvHard.
const (
	HardT     = iota // t: HardSigmoid
	HardXT           // x·t: HardSwish
	HardXTDiv        // x·t/d: HardSwish spelled out, x·Clip(x + 3, 0, 6)/6
	HardXTMul        // x·t·d: the same with ·(1/6)
)

// ConvHard computes the HardSigmoid family in place, with x := dst[i]:
//
//	t := x·a + b                     (rounded after the product: no fused multiply-add)
//	if lo > t { t = lo }
//	if hi < t { t = hi }
//	dst[i] = t, x·t, x·t/d or x·t·d  (mode HardT, HardXT, HardXTDiv, HardXTMul)
//
// x·1 + c is x + c exactly, so the spelled-out HardSwish runs as written.
// Any other mode is a caller's bug: ConvHard panics.
func ConvHard(dst []float32, a, b, lo, hi, d float32, mode int) {
	if uint(mode) > HardXTMul {
		panic("kernels: ConvHard: unknown mode")
	}
	for i, x := range dst {
		t := float32(x*a) + b
		if lo > t {
			t = lo
		}
		if hi < t {
			t = hi
		}
		switch mode {
		case HardXT:
			t = x * t
		case HardXTDiv:
			t = float32(x*t) / d
		case HardXTMul:
			t = float32(x*t) * d
		}
		dst[i] = t
	}
}

// ScaleRows multiplies every whole row of dst (len(s) values each) by s:
// dst[r·len(s) + c] *= s[c]. Values after the last whole row are left as
// they are.
func ScaleRows(dst, s []float32) {
	if len(s) == 0 {
		return
	}
	for ; len(dst) >= len(s); dst = dst[len(s):] {
		row := dst[:len(s)]
		for c, v := range s {
			row[c] *= v
		}
	}
}

// PoolSum returns the sum of x in float64 as a vector unit computes it:
// sixteen partial sums, value i to sum i mod 16, combined pairwise as
// b_j = s_j + s_j+8, a_j = b_j + b_j+4 (j < 4), then PoolSumTail: (a_0 +
// a_1) + (a_2 + a_3), and the values after the last whole sixteen added
// in order.
func PoolSum(x []float32) float64 {
	var s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15 float64
	i := 0
	for ; i+16 <= len(x); i += 16 {
		v := x[i : i+16 : i+16]
		s0 += float64(v[0])
		s1 += float64(v[1])
		s2 += float64(v[2])
		s3 += float64(v[3])
		s4 += float64(v[4])
		s5 += float64(v[5])
		s6 += float64(v[6])
		s7 += float64(v[7])
		s8 += float64(v[8])
		s9 += float64(v[9])
		s10 += float64(v[10])
		s11 += float64(v[11])
		s12 += float64(v[12])
		s13 += float64(v[13])
		s14 += float64(v[14])
		s15 += float64(v[15])
	}
	a := PoolLanes(&[16]float64{s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15})
	return PoolSumTail(&a, x[i:])
}

// PoolLanes folds PoolSum's sixteen partial sums s to its four lanes:
// a_j = (s_j + s_j+8) + (s_j+4 + s_j+12).
func PoolLanes(s *[16]float64) [4]float64 {
	var a [4]float64
	for j := range a {
		a[j] = (s[j] + s[j+8]) + (s[j+4] + s[j+12])
	}
	return a
}

// PoolSumTail finishes PoolSum from its four lanes a and the values after
// the last whole sixteen.
func PoolSumTail(a *[4]float64, tail []float32) float64 {
	t := (a[0] + a[1]) + (a[2] + a[3])
	for _, v := range tail {
		t += float64(v)
	}
	return t
}

// ColumnPoolSums sets dst[j] to kernels.PoolSum of column j of rows
// rows of x (row stride ld): the column's values x[r*ld+j] widened to
// float64 and added as PoolSum adds a plane's, row r to partial sum r mod
// 16 until the last whole sixteen, the partial sums combined as PoolSum
// combines them, then the rows after them in order. A channels-last
// image's channel sums to the same bits as its plane in NCHW.
func ColumnPoolSums(dst []float64, x []float32, rows, ld int) {
	n16 := rows &^ 15
	for j := range dst {
		var s [16]float64
		for r := 0; r < n16; r++ {
			s[r%16] += float64(x[r*ld+j])
		}
		a := PoolLanes(&s)
		t := PoolSumTail(&a, nil)
		for r := n16; r < rows; r++ {
			t += float64(x[r*ld+j])
		}
		dst[j] = t
	}
}
