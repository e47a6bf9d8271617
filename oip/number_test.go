package oip

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/tensor"
)

// randomNumber returns a JSON number literal drawn to cover the decoder's
// paths: short and long mantissas, leading and trailing zeros, exponents
// of both signs and any case, and decimal forms of values at or next to
// float32 and float64 rounding boundaries.
func randomNumber(r *rand.Rand) string {
	var s string
	switch r.IntN(6) {
	case 0, 1: // digits, a point somewhere, maybe an exponent
		var b strings.Builder
		nd := 1 + r.IntN(24)
		for i := range nd {
			c := byte('0' + r.IntN(10))
			if i == 0 && nd > 1 && r.IntN(4) > 0 {
				c = byte('1' + r.IntN(9))
			}
			b.WriteByte(c)
		}
		d := b.String()
		if d[0] == '0' && len(d) > 1 {
			d = "0." + d[1:]
		} else if p := r.IntN(len(d) + 1); p > 0 && p < len(d) {
			d = d[:p] + "." + d[p:]
		}
		s = d
		if r.IntN(3) == 0 {
			e := []string{"e", "E"}[r.IntN(2)] + []string{"", "+", "-"}[r.IntN(3)]
			s += e + strconv.Itoa(r.IntN(60))
		}
	case 2: // a float32 printed shortest, with 'g', or with its 9 digits
		f := math.Float32frombits(r.Uint32()&^(0xff<<23) | uint32(r.IntN(254)+1)<<23)
		s = strconv.FormatFloat(float64(f), []byte("eg")[r.IntN(2)], []int{-1, 7, 9}[r.IntN(3)], 32)
	case 3: // next to a midpoint between two float32 neighbours
		f := math.Float32frombits(r.Uint32()&0x7fffffff | 1<<23)
		if math.IsInf(float64(f), 0) || math.IsNaN(float64(f)) {
			f = 1.5
		}
		mid := (float64(f) + float64(math.Nextafter32(f, float32(math.Inf(1))))) / 2
		s = strconv.FormatFloat(mid, []byte("ef")[r.IntN(2)], []int{-1, 8, 12, 17}[r.IntN(4)], 64)
	case 4: // exact midpoints with few digits: k + 1/4 or 3/4 in [2^22, 2^23)
		s = strconv.Itoa(1<<22+r.IntN(1<<22)) + []string{".25", ".75", ".250000001", ".7499999999"}[r.IntN(4)]
	default: // a float64 printed shortest
		s = strconv.FormatFloat(math.Float64frombits(r.Uint64()&^(1<<63)), 'g', -1, 64)
	}
	if r.IntN(3) == 0 {
		s = "-" + s
	}
	return s
}

// TestFloatsMatchStrconv decodes arrays of random numbers as FP32 and
// FP64 and compares every element, bit for bit, with strconv.ParseFloat
// at the same width; a number strconv finds out of range fails the
// request.
func TestFloatsMatchStrconv(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for round := range 200 {
		var nums []string
		for range 200 {
			if s := randomNumber(r); !strings.ContainsAny(s, "IN") {
				nums = append(nums, s)
			}
		}
		for _, bitSize := range []int{32, 64} {
			dtype := map[int]string{32: "FP32", 64: "FP64"}[bitSize]
			var in []string
			var want []float64
			for _, s := range nums {
				v, err := strconv.ParseFloat(s, bitSize)
				if err != nil {
					if _, derr := DecodeInferRequest([]byte(body(dtype, "[1]", "["+s+"]"))); derr == nil {
						t.Errorf("%s %s: strconv: %v, the decoder accepted it", dtype, s, err)
					}
					continue
				}
				in, want = append(in, s), append(want, v)
			}
			sep := []string{",", ", ", " ,\n"}[round%3]
			req, err := DecodeInferRequest([]byte(body(dtype, "["+strconv.Itoa(len(in))+"]", "["+strings.Join(in, sep)+"]")))
			if err != nil {
				t.Fatalf("%s: %v", dtype, err)
			}
			// The same numbers as rows of ten, nested.
			rows := len(in) / 10
			var nested []string
			for k := range rows {
				nested = append(nested, "["+strings.Join(in[10*k:10*k+10], sep)+"]")
			}
			nreq, err := DecodeInferRequest([]byte(body(dtype, "["+strconv.Itoa(rows)+",10]", "["+strings.Join(nested, sep)+"]")))
			if err != nil {
				t.Fatalf("%s nested: %v", dtype, err)
			}
			if err := sameTensorBits(nreq.Inputs[0].Tensor, &tensor.Tensor{DType: req.Inputs[0].Tensor.DType, Shape: []int{rows, 10}, Data: headOf(req.Inputs[0].Tensor.Data, 10*rows)}); err != nil {
				t.Errorf("%s nested: %v", dtype, err)
			}
			for i, w := range want {
				var got float64
				if bitSize == 32 {
					got = float64(req.Inputs[0].Tensor.Data.([]float32)[i])
				} else {
					got = req.Inputs[0].Tensor.Data.([]float64)[i]
				}
				if math.Float64bits(got) != math.Float64bits(w) {
					t.Errorf("%s %s: decoded %v, strconv %v", dtype, in[i], got, w)
				}
			}
		}
	}
}

// FuzzFloat32MatchesStrconv decodes an arbitrary string as the one
// element of an FP32 array: a JSON number decodes to strconv's float32,
// or fails where strconv is out of range; anything else fails.
func FuzzFloat32MatchesStrconv(f *testing.F) {
	for _, s := range []string{"0", "-0", "0.5", "1e38", "3.4028235e38", "3.4028236e38", "1e-46", "-1.401298464324817e-45",
		"4194304.25", "4194304.75", "4194304.250000001", "4.46246936917305e-01", "-2.052678819745779e-02", "16777217", "0.1", "1.00000017881393432617187499", "01", "1.", ".5",
		"1e", "+1", "NaN", "Infinity", "-", "1 ", " 1", "1,2", "0.0000000000000000000000000000000000000000000001"} {
		f.Add(s)
	}
	r := rand.New(rand.NewPCG(3, 5))
	for range 64 {
		f.Add(randomNumber(r))
	}
	f.Fuzz(func(t *testing.T, s string) {
		req, err := DecodeInferRequest([]byte(body("FP32", "[1]", "["+s+"]")))
		data := []byte("[" + s + "]")
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var ref []any
		refErr := dec.Decode(&ref)
		if !json.Valid(data) {
			refErr = errTrailing
		}
		num, isNum := any(nil), false
		if refErr == nil && len(ref) == 1 {
			num = ref[0]
			_, isNum = num.(json.Number)
		}
		if !isNum {
			if err == nil {
				t.Fatalf("%q is not one JSON number, the decoder accepted it", s)
			}
			return
		}
		want, serr := strconv.ParseFloat(string(num.(json.Number)), 32)
		if serr != nil {
			if err == nil {
				t.Fatalf("%q: strconv: %v, the decoder accepted it", s, serr)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if got := req.Inputs[0].Tensor.Data.([]float32)[0]; math.Float32bits(got) != math.Float32bits(float32(want)) {
			t.Fatalf("%q: decoded %v, strconv %v", s, got, want)
		}
	})
}

var errTrailing = &Error{Offset: -1, Msg: "trailing data"}

func headOf(data any, n int) any {
	switch d := data.(type) {
	case []float32:
		return d[:n]
	case []float64:
		return d[:n]
	}
	panic("not a float slice")
}

// TestNestedFloatRowsMatchReference: rows the fast loop takes in part,
// stops in, or overruns are decoded or refused as the encoding/json
// reference does.
func TestNestedFloatRowsMatchReference(t *testing.T) {
	for _, b := range []string{
		body("FP32", "[2,3]", "[[0.5, 1e-3 ,2],[ 3 ,4.25,5]]"),
		body("FP32", "[2,3]", "[[0.5,1,2,3],[3,4,5]]"),
		body("FP32", "[2,3]", "[[0.5,1],[3,4,5]]"),
		body("FP32", "[2,3]", "[[0.5,1,[2]],[3,4,5]]"),
		body("FP32", "[2,3]", "[[0.5,1,2],[3,4,5],[6,7,8]]"),
		body("FP32", "[2,3]", "[[0.5,1,2] [3,4,5]]"),
		body("FP32", "[2,3]", "[[0.5,1,2],[3,4,5"),
		body("FP32", "[2,3]", "[[0.5,1,2],[3,4,5]"),
		body("FP32", "[2,3]", "[[0.5,1,2],[3,4,4.46246936917305e-01]]"),
		body("FP64", "[2,2]", "[[1.5,123456789012345678901234567890],[16777217,-0]]"),
		body("FP64", "[2,2]", "[[1.5,1e400],[1,2]]"),
		body("FP32", "[1,2,2]", "[[[1,2],[3,4]]]"),
		body("FP32", "[3]", "[1,2,3,]"),
		body("FP32", "[3]", "[1,2 3]"),
		body("FP32", "[3]", "[1,2,3"),
		body("FP32", "[3]", "[1,2,-]"),
	} {
		checkAgainstReference(t, []byte(b))
	}
}
