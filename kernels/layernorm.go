package kernels

// LayerNormBlock is how many values of a row LayerNormSums adds in
// float32 before it carries their sums into float64.
const LayerNormBlock = 512

// LayerNormSums returns the sums of d = x[i] - shift and of d² over x,
// the statistics a layer normalization takes its mean and variance from
// (shifting by a sample of the row keeps Σd² - (Σd)²/n from cancelling
// when the mean is large against the spread). Per block of
// LayerNormBlock values, each whole sixteen's d and d² go to sixteen
// float32 lanes, value i to lane i mod 16, combined as LayerNormLanes
// does; the values after the last whole sixteen are added in order
// (LayerNormTail); the blocks' float32 sums add in float64. d² is rounded
// before it is added (no fused multiply-add), so the SIMD twins, lane by
// lane, give the same bits.
func LayerNormSums(x []float32, shift float32) (s1, s2 float64) {
	for len(x) > 0 {
		b := x[:min(len(x), LayerNormBlock)]
		x = x[len(b):]
		n := len(b) &^ 15
		var d, q [16]float32
		for i := 0; i < n; i += 16 {
			v := b[i : i+16 : i+16]
			for j := range d {
				t := v[j] - shift
				d[j] += t
				q[j] += float32(t * t)
			}
		}
		ds, qs := LayerNormTail(LayerNormLanes(&d), LayerNormLanes(&q), b[n:], shift)
		s1 += float64(ds)
		s2 += float64(qs)
	}
	return s1, s2
}

// LayerNormLanes combines sixteen lanes into four as the SIMD twins do:
// a_j = (s_j + s_j+8) + (s_j+4 + s_j+12).
func LayerNormLanes(s *[16]float32) [4]float32 {
	var a [4]float32
	for j := range a {
		a[j] = (s[j] + s[j+8]) + (s[j+4] + s[j+12])
	}
	return a
}

// LayerNormTail finishes a block of LayerNormSums from the four lanes of
// d and of d² and the block's values after its last whole sixteen.
func LayerNormTail(d, q [4]float32, tail []float32, shift float32) (ds, qs float32) {
	ds, qs = (d[0]+d[1])+(d[2]+d[3]), (q[0]+q[1])+(q[2]+q[3])
	for _, v := range tail {
		t := v - shift
		ds += t
		qs += float32(t * t)
	}
	return ds, qs
}

// LayerNormApply normalizes a row: y[i] = ((x[i] - mean)·inv)·scale[i] +
// bias[i] (without the bias when it is nil), each operation rounded to
// float32 (no fused multiply-add). len(x), len(scale) and len(bias), if
// any, >= len(y); y may be x.
func LayerNormApply(y, x, scale, bias []float32, mean, inv float32) {
	x, scale = x[:len(y)], scale[:len(y)]
	if bias == nil {
		for i, v := range x {
			y[i] = float32(float32(v-mean)*inv) * scale[i]
		}
		return
	}
	bias = bias[:len(y)]
	for i, v := range x {
		y[i] = float32(float32(float32(v-mean)*inv)*scale[i]) + bias[i]
	}
}
