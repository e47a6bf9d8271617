package signal

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// directDFT is the reference: the definition X[k] = Σ_t x[t]·e^{∓2πikt/n}
// summed in float64 (divided by n for the inverse), the exponent k·t
// reduced mod n in integers.
func directDFT(x []complex128, inverse bool) []complex128 {
	n := len(x)
	sign := -1.0
	if inverse {
		sign = 1
	}
	root := make([]complex128, n)
	for k := range root {
		s, c := math.Sincos(2 * math.Pi * float64(k) / float64(n))
		root[k] = complex(c, sign*s)
	}
	out := make([]complex128, n)
	for k := range out {
		var sum complex128
		for t, v := range x {
			sum += v * root[k*t%n]
		}
		if inverse {
			sum /= complex(float64(n), 0)
		}
		out[k] = sum
	}
	return out
}

// maxDiff returns max |got[k] - want[k]| and max |want[k]|.
func maxDiff(got, want []complex128) (diff, scale float64) {
	for k := range want {
		diff = max(diff, cmplx.Abs(got[k]-want[k]))
		scale = max(scale, cmplx.Abs(want[k]))
	}
	return diff, scale
}

func randomComplex(r *rand.Rand, n int) []complex128 {
	x := make([]complex128, n)
	for i := range x {
		x[i] = complex(r.NormFloat64(), r.NormFloat64())
	}
	return x
}

// TestFourierMatchesDirect: every path (radix-2, direct, Bluestein) gives
// the definition's forward and inverse transforms, on lengths of every
// kind: 1 and 2, powers of two, primes, odd and even composites, on both
// sides of maxDirect; and the inverse undoes the forward transform.
func TestFourierMatchesDirect(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	lengths := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16, 17, 31, 32, 33,
		maxDirect - 1, maxDirect, maxDirect + 1, 63, 64, 65, 97, 100, 127, 128, 129, 243,
		255, 256, 257, 400, 511, 625, 1000, 1021, 1024, 1025, 2047, 3001, 4096}
	for _, n := range lengths {
		x := randomComplex(r, n)
		f, err := newFourier(opstest.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		for _, inverse := range []bool{false, true} {
			re, im := make([]float64, n), make([]float64, n)
			for i, v := range x {
				re[i], im[i] = real(v), imag(v)
			}
			if err := f.transform(opstest.Background(), re, im, inverse); err != nil {
				t.Fatal(err)
			}
			got := make([]complex128, n)
			for k := range got {
				got[k] = complex(re[k], im[k])
			}
			want := directDFT(x, inverse)
			// The direct sums of n terms err by about n ulps of the
			// largest bin; the FFTs by far less.
			if d, s := maxDiff(got, want); d > 1e-14*float64(n)*s+1e-300 {
				t.Errorf("n=%d inverse=%v: off by %.3g (largest bin %.3g)", n, inverse, d, s)
			}
			// and the inverse gives the signal back
			if err := f.transform(opstest.Background(), re, im, !inverse); err != nil {
				t.Fatal(err)
			}
			for i, v := range x {
				if cmplx.Abs(complex(re[i], im[i])-v) > 1e-13*math.Log2(float64(2*n)) {
					t.Fatalf("n=%d inverse=%v: round trip gave %v at %d, want %v", n, inverse, complex(re[i], im[i]), i, v)
				}
			}
		}
	}
}

// dftNode is DFT at opset 20 with the given flags.
func dftNode(inverse, onesided bool) opstest.Node {
	var attrs []*onnxpb.Attribute
	if inverse {
		attrs = append(attrs, opstest.AttrInt("inverse", 1))
	}
	if onesided {
		attrs = append(attrs, opstest.AttrInt("onesided", 1))
	}
	return opstest.Node{Op: "DFT", Opset: 20, Attrs: attrs}
}

// TestDFTForms runs the operator's forms (complex and real forward,
// one-sided forward, inverse, one-sided inverse; dft_length equal to,
// shorter and longer than the axis) over axis 1 of [2, dim, 3, c] and
// checks every vector against the definition.
func TestDFTForms(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const outer, inner = 2, 3
	for _, dim := range []int{1, 2, 5, 12, 49, 64, 97, 200} {
		for _, tc := range []struct {
			name              string
			inverse, onesided bool
			comps             int
			length            int // 0: none given
		}{
			{"complex", false, false, 2, 0},
			{"real", false, false, 1, 0},
			{"rfft", false, true, 1, 0},
			{"rfft padded", false, true, 1, dim + 7},
			{"truncated", false, false, 2, (dim + 1) / 2},
			{"inverse", true, false, 2, 0},
			{"irfft even", true, true, 2, 0},
			{"irfft odd", true, true, 2, 2*dim - 1},
		} {
			x := make([]float64, outer*dim*inner*tc.comps)
			for i := range x {
				x[i] = r.NormFloat64()
			}
			var length *tensor.Tensor // absent
			if tc.length > 0 {
				length = tensor.Scalar(int64(tc.length))
			}
			in := []*tensor.Tensor{tensor.From([]int{outer, dim, inner, tc.comps}, x), length, tensor.Scalar(int64(1))}
			n := dim
			switch {
			case tc.length > 0:
				n = tc.length
			case tc.inverse && tc.onesided:
				n = 2 * (dim - 1)
			}
			if n < 1 {
				continue // a one-sided inverse of one bin has no length
			}
			out, err := opstest.Run(t, dftNode(tc.inverse, tc.onesided), in...)
			if err != nil {
				t.Fatalf("dim %d %s: %v", dim, tc.name, err)
			}
			y := out[0]
			bins, outComps := n, 2
			if tc.onesided && !tc.inverse {
				bins = n/2 + 1
			}
			if tc.onesided && tc.inverse {
				outComps = 1
			}
			if want := []int{outer, bins, inner, outComps}; !equalInts(y.Shape, want) {
				t.Fatalf("dim %d %s: shape %v, want %v", dim, tc.name, y.Shape, want)
			}
			yv := y.Data.([]float64)
			for o := range outer {
				for j := range inner {
					// the vector, zero-padded or cut to n
					v := make([]complex128, n)
					for k := 0; k < min(dim, n); k++ {
						p := ((o*dim+k)*inner + j) * tc.comps
						v[k] = complex(x[p], 0)
						if tc.comps == 2 {
							v[k] = complex(x[p], x[p+1])
						}
					}
					if tc.onesided && tc.inverse {
						// Hermitian: the upper bins mirror the lower.
						for k := n/2 + 1; k < n; k++ {
							v[k] = cmplx.Conj(v[n-k])
						}
					}
					want := directDFT(v, tc.inverse)
					for k := range bins {
						p := ((o*bins+k)*inner + j) * outComps
						got := complex(yv[p], 0)
						w := want[k]
						if outComps == 2 {
							got = complex(yv[p], yv[p+1])
						} else {
							w = complex(real(w), 0)
						}
						if cmplx.Abs(got-w) > 1e-12*float64(n+1) {
							t.Fatalf("dim %d %s: y[%d,%d,%d] = %v, want %v", dim, tc.name, o, k, j, got, w)
						}
					}
				}
			}
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSTFTBluestein: an STFT with frames of 400 samples (Bluestein's
// length) and a window matches the definition frame by frame.
func TestSTFTBluestein(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const sigLen, frame, step = 2000, 400, 160
	x := make([]float64, sigLen)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	w := make([]float64, frame)
	for i := range w {
		w[i] = 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/frame)
	}
	out := opstest.Run1(t, opstest.Node{Op: "STFT", Opset: 17},
		tensor.From([]int{1, sigLen, 1}, x), tensor.Scalar(int64(step)), tensor.From([]int{frame}, w), tensor.Scalar(int64(frame)))
	frames, bins := 1+(sigLen-frame)/step, frame/2+1
	if want := []int{1, frames, bins, 2}; !equalInts(out.Shape, want) {
		t.Fatalf("shape %v, want %v", out.Shape, want)
	}
	y := out.Data.([]float64)
	for fr := range frames {
		v := make([]complex128, frame)
		for k := range v {
			v[k] = complex(x[fr*step+k]*w[k], 0)
		}
		want := directDFT(v, false)
		for k := range bins {
			got := complex(y[(fr*bins+k)*2], y[(fr*bins+k)*2+1])
			if cmplx.Abs(got-want[k]) > 1e-10 {
				t.Fatalf("frame %d bin %d: %v, want %v", fr, k, got, want[k])
			}
		}
	}
}

// TestDFTLong: a DFT of 1,048,575 = 2²⁰-1 points (3·5²·11·31·41; once
// 10¹² multiply-adds for the direct transform) completes, and its bins
// match the definition summed directly at a few spots.
func TestDFTLong(t *testing.T) {
	const n = 1<<20 - 1
	r := rand.New(rand.NewPCG(7, 8))
	x := make([]float64, 2*n)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	out := opstest.Run1(t, dftNode(false, false), tensor.From([]int{1, n, 2}, x))
	y := out.Data.([]float64)
	for _, k := range []int{0, 1, 2, 3, 1000, 12345, n / 2, n/2 + 1, n - 2, n - 1} {
		var want complex128
		for j := range n {
			s, c := math.Sincos(-2 * math.Pi * float64(k*j%n) / n)
			want += complex(x[2*j], x[2*j+1]) * complex(c, s)
		}
		// Bins are sums of n unit normals, about √n ≈ 1000 in size.
		if got := complex(y[2*k], y[2*k+1]); cmplx.Abs(got-want) > 1e-8 {
			t.Errorf("X[%d] = %v, want %v", k, got, want)
		}
	}
}
