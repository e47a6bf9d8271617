package api

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/repository"
)

// fuzzDims are the dimension sizes FuzzShapes draws from: empty, small,
// and the embedded model's 784.
var fuzzDims = []int{0, 1, 2, 3, 784}

// FuzzShapes sends infer and tensor-operation requests with arbitrary
// shapes (zero-length dimensions, scalars, ranks the operation does not
// take, data that does not fill the shape) through the router. Every
// answer is a 200 whose output has the shape the operation defines, or a
// 4xx JSON error: never a 5xx.
func FuzzShapes(f *testing.F) {
	router := NewRouter(Options{Repository: repository.New(serverOptions(), repository.Source{Name: defaultmodel.Name, Version: 1, ONNX: defaultmodel.ONNX}), Logger: quietLog()})
	f.Add(uint8(0), []byte{2, 0, 4})          // infer [0,784]
	f.Add(uint8(1), []byte{2, 0, 3, 2, 3, 2}) // matmul [0,3]×[3,2]
	f.Add(uint8(2), []byte{2, 2, 0, 2, 0, 3}) // qmatmul [2,0]×[0,3]
	f.Add(uint8(3), []byte{2, 3, 0})          // quantize [3,0]
	f.Add(uint8(4), []byte{0})                // dequantize of a scalar
	f.Add(uint8(0x81), []byte{2, 1, 4})       // infer with one element short
	f.Fuzz(func(t *testing.T, op uint8, dims []byte) {
		// shape reads a rank then that many dimensions from dims
		shape := func() []int {
			if len(dims) == 0 {
				return nil
			}
			rank := int(dims[0]) % 4
			dims = dims[1:]
			s := []int{}
			for i := 0; i < rank && len(dims) > 0; i++ {
				s = append(s, fuzzDims[int(dims[0])%len(fuzzDims)])
				dims = dims[1:]
			}
			return s
		}
		short := op&0x80 != 0 // data one element short of the shape
		cut := false          // some tensor's data is short
		tensorJSON := func(s []int, dtype string) (string, bool) {
			n := 1
			for _, d := range s {
				n *= d
			}
			if n > 1<<14 {
				return "", false
			}
			if short && n > 0 {
				n--
				cut = true
			}
			data := make([]int, n)
			for i := range data {
				data[i] = i % 5
			}
			b, _ := json.Marshal(map[string]any{"shape": s, "datatype": dtype, "data": data})
			return string(b), true
		}
		var path, body string
		var want func(out []int) bool // the shape of a 200's output
		a := shape()
		ta, ok := tensorJSON(a, "FP32")
		if !ok {
			return
		}
		switch op % 5 {
		case 0:
			path = "/v2/models/mnist/infer"
			body = `{"inputs":[` + strings.Replace(ta, `{`, `{"name":"input",`, 1) + `]}`
			want = func(out []int) bool { return len(a) == 2 && fmt.Sprint(out) == fmt.Sprint([]int{a[0], 10}) }
		case 1, 2:
			path = "/v1/ops/matmul"
			if op%5 == 2 {
				path = "/v1/ops/qmatmul"
			}
			b := shape()
			tb, ok := tensorJSON(b, "FP32")
			if !ok {
				return
			}
			body = `{"a":` + ta + `,"b":` + tb + `}`
			want = func(out []int) bool {
				return len(a) == 2 && len(b) == 2 && a[1] == b[0] && fmt.Sprint(out) == fmt.Sprint([]int{a[0], b[1]})
			}
		case 3:
			path = "/v1/ops/quantize"
			scheme := []string{"per_channel", "per_block", "per_tensor"}[int(op>>3)%3]
			body = `{"tensor":` + ta + `,"scheme":"` + scheme + `"}`
			want = func(out []int) bool { return fmt.Sprint(out) == fmt.Sprint(a) }
		case 4:
			path = "/v1/ops/dequantize"
			tv, _ := tensorJSON(a, "INT8")
			s := shape()
			ts, ok := tensorJSON(s, "FP32")
			if !ok {
				return
			}
			body = `{"values":` + tv + `,"scales":` + ts + `,"scheme":"per_tensor"}`
			want = func(out []int) bool { return fmt.Sprint(out) == fmt.Sprint(a) }
		}
		rec := httptest.NewRecorder()
		router.ServeHTTP(rec, httptest.NewRequest("POST", path, strings.NewReader(body)))
		switch {
		case rec.Code >= 500:
			t.Fatalf("%s %s: %d %s", path, body, rec.Code, rec.Body)
		case rec.Code >= 400:
			var e map[string]string
			if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e["error"] == "" {
				t.Fatalf("%s %s: %d without a JSON error: %s", path, body, rec.Code, rec.Body)
			}
		case rec.Code == 200:
			var resp struct {
				Outputs []struct {
					Shape []int `json:"shape"`
				} `json:"outputs"`
				Output, Values, Tensor *struct {
					Shape []int `json:"shape"`
				}
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
				t.Fatalf("%s %s: 200 with %v: %s", path, body, err, rec.Body)
			}
			var out []int
			switch {
			case len(resp.Outputs) > 0:
				out = resp.Outputs[0].Shape
			case resp.Output != nil:
				out = resp.Output.Shape
			case resp.Values != nil:
				out = resp.Values.Shape
			case resp.Tensor != nil:
				out = resp.Tensor.Shape
			}
			if cut || !want(out) {
				t.Fatalf("%s %s: 200 with output shape %v: %s", path, body, out, rec.Body)
			}
		}
	})
}
