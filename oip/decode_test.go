package oip

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/tensor"
)

func body(dtype, shape, data string) string {
	return fmt.Sprintf(`{"inputs":[{"name":"x","shape":%s,"datatype":"%s","data":%s}]}`, shape, dtype, data)
}

// corpus holds bodies that must decode, and bodies that must fail, the
// same way in the scanner and in the encoding/json reference.
var corpus = []string{
	body("FP32", "[2,3]", "[1,2,3,4,5,6]"),
	body("FP32", "[2,3]", "[[1,2,3],[4,5,6]]"),
	body("FP32", "[2,1,3]", "[[[1,2,3]],[[4,5,6]]]"),
	body("FP32", "[4]", "[1e3, -2.5E-3, 0.000001, 1.5e+2]"),
	body("FP32", "[3]", "[-0, -0.0, 0e10]"),
	body("FP32", "[1]", "[1.00000017881393432617187499]"), // rounds down in float32, up via float64
	body("FP32", "[1]", "[1.000000178813934326171875]"),   // the exact midpoint: ties to even
	body("FP32", "[1]", "[3.4028235677973366e38]"),
	body("FP32", "[1]", "[3.4028236e38]"), // beyond float32: error
	body("FP32", "[1]", "[1e-50]"),
	body("FP32", "[1]", "[123456789012345678901234567890]"),
	body("FP32", "[1]", "[0.1e-400]"),
	body("FP16", "[4]", "[1e-1000001, -1.5e-1000001, 0e1000001, 0]"),
	body("BF16", "[1]", "[1e1000001]"),
	body("FP32", "[1]", "[1e400]"),
	body("FP32", "[2]", "[16777217, 16777219]"),
	body("FP64", "[3]", "[0.1, 2.2250738585072011e-308, 9007199254740993]"),
	body("FP64", "[1]", "[1.7976931348623157e308]"),
	body("FP64", "[1]", "[1.7976931348623159e308]"),
	body("INT64", "[3]", "[9223372036854775807, -9223372036854775808, 1.0]"),
	body("INT64", "[1]", "[9223372036854775808]"),
	body("INT64", "[1]", "[1.5]"),
	body("INT64", "[2]", "[1e3, 12.50e1]"),
	body("INT64", "[1]", "[1e19]"),
	body("INT64", "[1]", "[100000000000000000000000e-5]"),
	body("INT64", "[1]", "[12345678901234567890123e-4]"),
	body("UINT64", "[2]", "[18446744073709551615, 0]"),
	body("UINT64", "[1]", "[18446744073709551616]"),
	body("UINT64", "[1]", "[-1]"),
	body("UINT64", "[1]", "[-0]"),
	body("INT8", "[4]", "[-128, 127, 0, -0]"),
	body("INT8", "[1]", "[128]"),
	body("UINT8", "[2]", "[255, 0]"),
	body("UINT8", "[1]", "[256]"),
	body("INT16", "[2]", "[-32768, 32767]"),
	body("UINT16", "[1]", "[65535]"),
	body("INT32", "[2]", "[-2147483648, 2147483647]"),
	body("INT32", "[1]", "[2147483648]"),
	body("UINT32", "[1]", "[4294967295]"),
	body("BOOL", "[3]", "[true, false, true]"),
	body("BOOL", "[1]", "[1]"),
	body("BOOL", "[2,2]", "[[true,false],[false,true]]"),
	body("FP32", "[0]", "[]"),
	body("FP32", "[2,0]", "[]"),
	body("FP32", "[]", "[7]"),
	body("FP32", "[2]", "[1,2,3]"),
	body("FP32", "[3]", "[1,2]"),
	body("FP32", "[2,2]", "[[1,2],[3]]"),
	body("FP32", "[2,2]", "[[1,2],[3,4,5]]"),
	body("FP32", "[2,2]", "[[1,2],3,4]"),
	body("FP32", "[2,2]", "[1,2,[3,4]]"),
	body("FP32", "[4]", "[[1,2],[3,4]]"),
	body("FP32", "[2,2]", "[[[1],[2]],[[3],[4]]]"),
	body("FP32", "[1]", `["1"]`),
	body("FP32", "[1]", "[null]"),
	body("FP32", "[1]", "1"),
	body("FP32", "[1]", "null"),
	body("FP32", "[1]", "[01]"),
	body("FP32", "[1]", "[1.]"),
	body("FP32", "[1]", "[.5]"),
	body("FP32", "[1]", "[+1]"),
	body("FP32", "[1]", "[1e]"),
	body("FP32", "[1]", "[-]"),
	body("FP32", "[1]", "[NaN]"),
	body("FP32", "[1]", "[1,]"),
	body("FP16", "[1]", "[1]"),
	body("FP16", "[6]", "[1.00048828125, 1.000488281250000000001, 1.00048828124999999999999, -0, 6e-8, 2.98023223876953125e-8]"),
	body("FP16", "[3]", "[65504, 65519.99999999999999999, -65519]"),
	body("FP16", "[1]", "[65520]"),
	body("FP16", "[1]", "[1e300]"),
	body("FP16", "[2,2]", "[[0.1, 0.2], [3, 4.5]]"),
	body("BF16", "[4]", "[1.00390625, 1.003906250000000001, 3.3895313892515355e38, 1e-40]"),
	body("BF16", "[1]", "[3.40282357e38]"),
	body("BF16", "[1]", "[true]"),
	body("BYTES", "[1]", `["a"]`),
	body("BYTES", "[3]", `["", "caf\u00e9", "tab\there"]`),
	body("BYTES", "[2,1]", `[["x"],["y"]]`),
	body("BYTES", "[1]", `[1]`),
	body("FP16", "[1]", `["1"]`),
	body("fp32", "[1]", "[1]"),
	body("FP32", "[-1]", "[1]"),
	body("FP32", "[1.5]", "[1]"),
	body("FP32", "[1e0]", "[1]"),
	body("FP32", "[4294967296, 4294967296]", "[1]"),
	body("FP32", "[100000000]", "[1]"),
	`{"inputs":[{"shape":[1],"datatype":"FP32","data":[1]}]}`,
	`{"inputs":[{"name":"x","datatype":"FP32","data":[1]}]}`,
	`{"inputs":[{"name":"x","shape":[1],"data":[1]}]}`,
	`{"inputs":[{"name":"x","shape":[1],"datatype":"FP32"}]}`,
	`{"inputs":[{"data":[1.5,2],"datatype":"FP32","name":"x","shape":[2]}]}`,
	`{"inputs":[{"data":[1.5,2],"name":"x","shape":[2],"datatype":"INT32"}]}`,
	`{"id":"42","parameters":{"a":1,"b":[true,{"c":null}]},"inputs":[{"name":"x","shape":[1],"datatype":"FP32","parameters":{"p":"q"},"data":[1]}],"outputs":[{"name":"y","parameters":{}}],"extra":{"deep":[[[]]]}}`,
	`{"id":"caf\u00e9 \"quoted\"","inputs":[]}`,
	`{"id":42,"inputs":[]}`,
	`{"parameters":[],"inputs":[]}`,
	`{"inputs":[],"outputs":[{}]}`,
	`{"inputs":[]} x`,
	`{"inputs":[],}`,
	`{"inputs":[]`,
	`{"outputs":[]}`,
	`[]`,
	``,
	`{"inputs":[{"name":"a\tb","shape":[1],"datatype":"FP32","data":[1]}]}`,
	`{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}], "inputs":[]}`,
	" \n\t{ \"inputs\" : [ { \"name\" : \"x\" , \"shape\" : [ 2 ] , \"datatype\" : \"FP32\" , \"data\" : [ 1 , 2 ] } ] } \r\n",
	`{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]},{"name":"x","shape":[1],"datatype":"INT64","data":[2]}]}`,
	`{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}],"extra":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`,
}

func TestDecodeMatchesReference(t *testing.T) {
	for _, b := range corpus {
		checkAgainstReference(t, []byte(b))
	}
}

func checkAgainstReference(t *testing.T, b []byte) {
	t.Helper()
	got, gotErr := DecodeInferRequest(b)
	want, wantErr := referenceDecode(b)
	if gotErr != nil {
		var e *Error
		if !errors.As(gotErr, &e) {
			t.Errorf("%.200s: error %v is not an *oip.Error", b, gotErr)
		}
	}
	if (gotErr == nil) != (wantErr == nil) {
		// The reference has no nesting limit; the scanner refuses beyond maxNesting.
		if gotErr != nil && strings.Contains(gotErr.Error(), "nested too deeply") {
			return
		}
		t.Errorf("%.200s:\n scanner error: %v\n reference error: %v", b, gotErr, wantErr)
		return
	}
	if gotErr != nil {
		return
	}
	if got.ID != want.ID || len(got.Inputs) != len(want.Inputs) || len(got.Outputs) != len(want.Outputs) {
		t.Errorf("%.200s: got %+v, want %+v", b, got, want)
		return
	}
	if string(got.Parameters) != string(want.Parameters) {
		t.Errorf("%.200s: parameters %s, want %s", b, got.Parameters, want.Parameters)
	}
	for i := range got.Inputs {
		g, w := got.Inputs[i], want.Inputs[i]
		if g.Name != w.Name || string(g.Parameters) != string(w.Parameters) {
			t.Errorf("%.200s: input %d: %q %s vs %q %s", b, i, g.Name, g.Parameters, w.Name, w.Parameters)
		}
		if err := sameTensorBits(g.Tensor, w.Tensor); err != nil {
			t.Errorf("%.200s: input %d: %v", b, i, err)
		}
	}
	for i := range got.Outputs {
		if got.Outputs[i].Name != want.Outputs[i].Name {
			t.Errorf("%.200s: output %d name %q vs %q", b, i, got.Outputs[i].Name, want.Outputs[i].Name)
		}
	}
}

func TestDecodeValues(t *testing.T) {
	req, err := DecodeInferRequest([]byte(body("FP32", "[4]", "[-0, 1.00000017881393432617187499, 16777217, 1e-50]")))
	if err != nil {
		t.Fatal(err)
	}
	d := req.Inputs[0].Tensor.Data.([]float32)
	if !math.Signbit(float64(d[0])) || d[0] != 0 {
		t.Errorf("-0 decoded as %v", d[0])
	}
	if d[1] != math.Nextafter32(1, 2) {
		t.Errorf("1.00000017881393432617187499 decoded as %.10g, want 1+2^-23", d[1])
	}
	if d[2] != 16777216 {
		t.Errorf("16777217 decoded as %v, want 16777216 (ties to even)", d[2])
	}
	if d[3] != 0 {
		t.Errorf("1e-50 decoded as %v, want 0", d[3])
	}
	req, err = DecodeInferRequest([]byte(body("INT64", "[2]", "[9223372036854775807, 2e3]")))
	if err != nil {
		t.Fatal(err)
	}
	if v := req.Inputs[0].Tensor.Data.([]int64); v[0] != math.MaxInt64 || v[1] != 2000 {
		t.Errorf("INT64 decoded as %v", v)
	}
}

// TestDecodeHalfRoundsOnce: FP16 and BF16 values round once from the
// literal, even where the nearest float64 sits exactly halfway.
func TestDecodeHalfRoundsOnce(t *testing.T) {
	req, err := DecodeInferRequest([]byte(body("FP16", "[5]", "[1.00048828125, 1.000488281250000000001, 1.00048828124999999999999, 65519.99999999999999999, 2.98023223876953125e-8]")))
	if err != nil {
		t.Fatal(err)
	}
	want := []tensor.F16{0x3c00, 0x3c01, 0x3c00, 0x7bff, 0x0000}
	if got := req.Inputs[0].Tensor.Data.([]tensor.F16); !slices.Equal(got, want) {
		t.Errorf("FP16 decoded as %#04x, want %#04x", got, want)
	}
	req, err = DecodeInferRequest([]byte(body("BF16", "[2]", "[1.00390625, 1.003906250000000001]")))
	if err != nil {
		t.Fatal(err)
	}
	if got := req.Inputs[0].Tensor.Data.([]tensor.BF16); !slices.Equal(got, []tensor.BF16{0x3f80, 0x3f81}) {
		t.Errorf("BF16 decoded as %#04x", got)
	}
}

func TestDecodeErrorsAreClear(t *testing.T) {
	cases := map[string]string{
		body("INT64", "[1]", "[1.5]"):           "1.5 is not an integer",
		body("INT8", "[1]", "[300]"):            "out of range for INT8",
		body("FP32", "[3]", "[1,2]"):            "needs 3 elements, data has 2",
		body("FP8", "[1]", "[1]"):               `unsupported datatype "FP8"`,
		body("FP16", "[1]", "[70000]"):          "out of range for FP16",
		body("FP32", "[100000000]", "[1]"):      "more than the body holds",
		body("FP32", "[2]", "[1 2]"):            "malformed JSON at byte",
		body("FP32", "[2,2]", "[[1,2],[3]]"):    "does not match the shape",
		`{"inputs":[{"name":"x","shape":[1]}]}`: `missing "datatype"`,
	}
	for b, want := range cases {
		_, err := DecodeInferRequest([]byte(b))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to mention %q", b, err, want)
		}
	}
}

// FuzzDecodeInferRequest compares the scanner with the encoding/json
// reference on arbitrary bodies. Its seeds (the corpus above and
// testdata/fuzz) run as part of go test.
func FuzzDecodeInferRequest(f *testing.F) {
	for _, b := range corpus {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkAgainstReference(t, b)
	})
}

func TestDecodeAllocationBoundedByBody(t *testing.T) {
	// A short body claiming 2^31 FP64 elements (16 GiB) must be refused
	// before anything of that size is allocated.
	b := []byte(body("FP64", "[65536,32768]", "[1]"))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := DecodeInferRequest(b)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "more than the body holds") {
		t.Fatalf("error %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("refusing a %d-byte body allocated %d bytes", len(b), grew)
	}
}

// FuzzParseFloatFast checks the fast path against strconv whenever it
// claims a result: exactly for float64, and for float32 wherever the
// decoder rounds it on (not at a float32 midpoint).
func FuzzParseFloatFast(f *testing.F) {
	for _, s := range []string{"0", "-0", "0.1", "1.00000017881393432617187499", "123456789.12345678", "1e22", "9007199254740993", "0.00000000000000000001", "-12.5e-3", "4.9e-324", "1E+5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, end, ok := parseFloatFast([]byte(s), 0)
		if !ok {
			return
		}
		lit := s[:end]
		want64, err := strconv.ParseFloat(lit, 64)
		if err != nil {
			t.Fatalf("fast path accepted %q, strconv: %v", lit, err)
		}
		if math.Float64bits(v) != math.Float64bits(want64) {
			t.Fatalf("%q: fast %v, strconv %v", lit, v, want64)
		}
		want32, _ := strconv.ParseFloat(lit, 32)
		if !float32Midpoint(v) && float32(v) != float32(want32) {
			t.Fatalf("%q: fast as float32 %v, strconv %v", lit, float32(v), float32(want32))
		}
	})
}

// FuzzDecodeBinaryInferRequest splits arbitrary bytes into a JSON header
// and a binary section: decoding must not panic, and every tensor it
// returns holds exactly the elements its shape names.
func FuzzDecodeBinaryInferRequest(f *testing.F) {
	f.Add([]byte(`{"inputs":[{"name":"x","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":8}}]}`+"\x00\x00\x80\x3f\x00\x00\x00\x40"), 91)
	f.Add([]byte(`{"inputs":[{"name":"b","shape":[3],"datatype":"BOOL","parameters":{"binary_data_size":3}}]}`+"\x01\x00\x01"), 88)
	f.Fuzz(func(t *testing.T, b []byte, split int) {
		if split < 0 || split > len(b) {
			return
		}
		req, err := DecodeBinaryInferRequest(b[:split], b[split:])
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *oip.Error", err)
			}
			return
		}
		for _, in := range req.Inputs {
			n, err := tensor.NumElements(in.Tensor.Shape)
			if err != nil || in.Tensor.Len() != n {
				t.Fatalf("%s: %d elements for shape %v", in.Name, in.Tensor.Len(), in.Tensor.Shape)
			}
		}
	})
}

func TestBinaryBytesAndHalf(t *testing.T) {
	s := tensor.From([]int{3}, []string{"", "héllo", "x\x00y"})
	h := tensor.From([]int{2}, []tensor.F16{0x3c00, 0xc000})
	header := fmt.Sprintf(`{"inputs":[{"name":"s","shape":[3],"datatype":"BYTES","parameters":{"binary_data_size":%d}},{"name":"h","shape":[2],"datatype":"FP16","parameters":{"binary_data_size":%d}}]}`, BinarySize(s), BinarySize(h))
	raw := AppendBinaryTensor(AppendBinaryTensor(nil, s), h)
	req, err := DecodeBinaryInferRequest([]byte(header), raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := req.Inputs[0].Tensor.Data.([]string); !slices.Equal(got, s.Data.([]string)) {
		t.Errorf("BYTES: %q", got)
	}
	if got := req.Inputs[1].Tensor.Data.([]tensor.F16); !slices.Equal(got, h.Data.([]tensor.F16)) {
		t.Errorf("FP16: %#04x", got)
	}
	// A length that runs past the data, and bytes left over, are errors.
	bad := append(AppendBinaryTensor(nil, s)[:len(raw)-9], 0xff, 0, 0, 0)
	hdr := fmt.Sprintf(`{"inputs":[{"name":"s","shape":[3],"datatype":"BYTES","parameters":{"binary_data_size":%d}}]}`, len(bad))
	if _, err := DecodeBinaryInferRequest([]byte(hdr), bad); err == nil || !strings.Contains(err.Error(), "BYTES element") {
		t.Errorf("corrupt BYTES: error %v", err)
	}
	extra := append(AppendBinaryTensor(nil, s), 'z')
	hdr = fmt.Sprintf(`{"inputs":[{"name":"s","shape":[3],"datatype":"BYTES","parameters":{"binary_data_size":%d}}]}`, len(extra))
	if _, err := DecodeBinaryInferRequest([]byte(hdr), extra); err == nil || !strings.Contains(err.Error(), "after the last BYTES element") {
		t.Errorf("trailing bytes: error %v", err)
	}
}

func TestEncodeHalfAndBytes(t *testing.T) {
	b := AppendTensor(nil, "y", tensor.From([]int{3}, []tensor.F16{0x3c01, 0x7c00, 0x8000}))
	if want := `{"name":"y","datatype":"FP16","shape":[3],"data":[1.0009766,null,-0]}`; string(b) != want {
		t.Errorf("FP16: %s, want %s", b, want)
	}
	b = AppendTensor(nil, "s", tensor.From([]int{2}, []string{"a\"b", "ü"}))
	if want := `{"name":"s","datatype":"BYTES","shape":[2],"data":["a\"b","ü"]}`; string(b) != want {
		t.Errorf("BYTES: %s, want %s", b, want)
	}
}
