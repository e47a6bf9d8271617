package oip

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// tightNumber returns a literal of the form tightRun takes, or one just
// outside it: integer parts of 0 to 9 digits, fractions of 0 to 18 digits
// (leading and trailing zeros), signs, zeros, and 15-digit decimals within
// a few float64 ulps of float32 midpoints (where FP32's product gives way
// to the division).
func tightNumber(r *rand.Rand) string {
	digits := func(n int, lead bool) string {
		var b strings.Builder
		for i := range n {
			c := byte('0' + r.IntN(10))
			if i == 0 && lead {
				c = byte('1' + r.IntN(9))
			}
			b.WriteByte(c)
		}
		return b.String()
	}
	var s string
	switch r.IntN(5) {
	case 0, 1:
		s = "0"
		if k := r.IntN(10); k > 0 {
			s = digits(k, true)
		}
		if f := r.IntN(19); f > 0 {
			s += "." + digits(f, false)
		}
	case 2: // as encoders write float32 data
		s = strconv.FormatFloat(float64(r.Float32()), 'g', []int{-1, 7, 9}[r.IntN(3)], 32)
	case 3: // a 15-digit decimal next to a float32 midpoint in [0.5, 1)
		f := float32(0.5 + r.Float64()/2)
		mid := (float64(f) + float64(math.Nextafter32(f, 2))) / 2
		s = strconv.FormatFloat(mid, 'f', 15, 64)
	default:
		s = []string{"0", "0.0", "0.000", "1", "9999999", "4503599627370495", "9007199254740993", "0.9007199254740993"}[r.IntN(8)]
	}
	if r.IntN(4) == 0 {
		s = "-" + s
	}
	return s
}

// TestTightRunMatchesStrconv decodes long flat arrays of tightNumber
// literals, separated by bare commas as encoders write them, as FP32 and
// FP64: every element must be strconv.ParseFloat's, bit for bit, whichever
// path took it.
func TestTightRunMatchesStrconv(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 17))
	for range 200 {
		nums := make([]string, 300)
		for i := range nums {
			nums[i] = tightNumber(r)
		}
		for _, bits := range []int{32, 64} {
			dtype := map[int]string{32: "FP32", 64: "FP64"}[bits]
			req, err := DecodeInferRequest([]byte(body(dtype, "["+strconv.Itoa(len(nums))+"]", "["+strings.Join(nums, ",")+"]")))
			if err != nil {
				t.Fatalf("%s: %v", dtype, err)
			}
			for i, s := range nums {
				want, err := strconv.ParseFloat(s, bits)
				if err != nil {
					t.Fatalf("%s: %v", s, err)
				}
				var got float64
				if bits == 32 {
					got = float64(req.Inputs[0].Tensor.Data.([]float32)[i])
				} else {
					got = req.Inputs[0].Tensor.Data.([]float64)[i]
				}
				if math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("%s %s (element %d): decoded %v, strconv %v", dtype, s, i, got, want)
				}
			}
		}
	}
}

// TestTightRunRefuses: literals that are not JSON numbers, or an array cut
// short, are refused with the tight loop in front of them as without it.
func TestTightRunRefuses(t *testing.T) {
	pad := strings.Repeat("0.1234567,", 8)
	for _, bad := range []string{"01", "-", "-.5", ".5", "0.", "1.e5", "00.5", "0.5.5", "1,,2", "+1", "0x10", "1e", "-01.5", "0.5 0.5"} {
		data := "[" + pad + bad + "," + pad + "0.5]"
		n := 2*8 + 2
		if _, err := DecodeInferRequest([]byte(body("FP32", "["+strconv.Itoa(n)+"]", data))); err == nil {
			t.Errorf("%s: accepted", data)
		}
	}
	for _, data := range []string{"[" + pad + "0.5", "[" + pad + "0.5,", "[" + pad + "0.5,0.25,0.125]"} {
		if _, err := DecodeInferRequest([]byte(body("FP32", "[9]", data))); err == nil {
			t.Errorf("%s: accepted for shape [9]", data)
		}
	}
	req, err := DecodeInferRequest([]byte(body("FP32", "[10]", "["+pad+"-0,1e1]")))
	if err != nil {
		t.Fatal(err)
	}
	got := req.Inputs[0].Tensor.Data.([]float32)
	if !math.Signbit(float64(got[8])) || got[8] != 0 || got[9] != 10 {
		t.Errorf("-0 and 1e1 after a tight run: %v %v", got[8], got[9])
	}
}
