//go:build amd64

package decodebench

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/bytedance/sonic"
	gojson "github.com/goccy/go-json"
	"github.com/minio/simdjson-go"

	"github.com/quantserve/quantserve/oip"
)

// The decoder benchmark: MB/s of each candidate on OIP FP32 infer bodies.
//
//	go test -C tools ./decodebench -run '^$' -bench DecodeCandidates -benchtime 2s
//
// Every candidate decodes into typed float32 slices ([]float32 flat,
// [][]float32 nested), the best case for the generic libraries.

type candidate struct {
	name   string
	decode func([]byte) ([]float32, error)
}

type benchInput struct {
	Name     string          `json:"name"`
	Shape    []int           `json:"shape"`
	Datatype string          `json:"datatype"`
	Data     json.RawMessage `json:"data"`
}

type benchRequest struct {
	Inputs []benchInput `json:"inputs"`
}

// viaUnmarshal decodes with a library's Unmarshal: the envelope first, then
// the data into []float32 or [][]float32.
func viaUnmarshal(unmarshal func([]byte, any) error) func([]byte) ([]float32, error) {
	return func(b []byte) ([]float32, error) {
		var r benchRequest
		if err := unmarshal(b, &r); err != nil {
			return nil, err
		}
		d := r.Inputs[0].Data
		if len(d) > 1 && strings.HasPrefix(strings.TrimLeft(string(d[1:min(len(d), 16)]), " "), "[") {
			var nested [][]float32
			if err := unmarshal(d, &nested); err != nil {
				return nil, err
			}
			var flat []float32
			for _, row := range nested {
				flat = append(flat, row...)
			}
			return flat, nil
		}
		var flat []float32
		err := unmarshal(d, &flat)
		return flat, err
	}
}

func viaSimdjson(b []byte) ([]float32, error) {
	if !simdjson.SupportedCPU() {
		return nil, errors.New("simdjson-go: CPU not supported")
	}
	pj, err := simdjson.Parse(b, nil)
	if err != nil {
		return nil, err
	}
	var out []float32
	iter := pj.Iter()
	iter.Advance()
	_, rootIter, err := iter.Root(nil)
	if err != nil {
		return nil, err
	}
	var el simdjson.Element
	root, err := rootIter.Object(nil)
	if err != nil {
		return nil, err
	}
	if root.FindKey("inputs", &el) == nil {
		return nil, errors.New("no inputs")
	}
	inputs, err := el.Iter.Array(nil)
	if err != nil {
		return nil, err
	}
	in := inputs.Iter()
	in.Advance()
	inObj, err := in.Object(nil)
	if err != nil {
		return nil, err
	}
	if inObj.FindKey("data", &el) == nil {
		return nil, errors.New("no data")
	}
	var walk func(it simdjson.Iter) error
	walk = func(it simdjson.Iter) error {
		arr, err := it.Array(nil)
		if err != nil {
			return err
		}
		ai := arr.Iter()
		for {
			t := ai.Advance()
			switch t {
			case simdjson.TypeNone:
				return nil
			case simdjson.TypeArray:
				if err := walk(ai); err != nil {
					return err
				}
			default:
				f, err := ai.Float()
				if err != nil {
					return err
				}
				out = append(out, float32(f))
			}
		}
	}
	return out, walk(el.Iter)
}

func scannerCandidate(b []byte) ([]float32, error) {
	req, err := oip.DecodeInferRequest(b)
	if err != nil {
		return nil, err
	}
	return req.Inputs[0].Tensor.Data.([]float32), nil
}

var candidates = []candidate{
	{"scanner", scannerCandidate},
	{"encoding-json", viaUnmarshal(json.Unmarshal)},
	{"goccy-go-json", viaUnmarshal(gojson.Unmarshal)},
	{"sonic", viaUnmarshal(sonic.Unmarshal)},
	{"simdjson-go", viaSimdjson},
}

// body returns an infer body with one input of the given datatype, shape
// and data (JSON text).
func body(dtype, shape, data string) string {
	return fmt.Sprintf(`{"inputs":[{"name":"x","shape":%s,"datatype":"%s","data":%s}]}`, shape, dtype, data)
}

// fp32Body returns an OIP body of rows×cols FP32 values as a model client
// sends them: pixel-like values in [0,1) with float32's shortest digits.
func fp32Body(rows, cols int, nested bool) []byte {
	r := rand.New(rand.NewPCG(7, 7))
	var sb strings.Builder
	fmt.Fprintf(&sb, `{"id":"bench","inputs":[{"name":"input","shape":[%d,%d],"datatype":"FP32","data":[`, rows, cols)
	for i := 0; i < rows; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		if nested {
			sb.WriteByte('[')
		}
		for j := 0; j < cols; j++ {
			if j > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(strconv.FormatFloat(float64(r.Float32()), 'g', -1, 32))
		}
		if nested {
			sb.WriteByte(']')
		}
	}
	sb.WriteString("]}]}")
	return []byte(sb.String())
}

var benchBodies = []struct {
	name string
	body []byte
}{
	{"flat-784", fp32Body(1, 784, false)},
	{"flat-1M", fp32Body(1000, 1000, false)},
	{"nested-1000x1000", fp32Body(1000, 1000, true)},
}

func BenchmarkDecodeCandidates(b *testing.B) {
	for _, body := range benchBodies {
		for _, c := range candidates {
			b.Run(body.name+"/"+c.name, func(b *testing.B) {
				if _, err := c.decode(body.body); err != nil {
					b.Skipf("%s: %v", c.name, err)
				}
				b.SetBytes(int64(len(body.body)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.decode(body.body); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestDecodeCandidatesAgree checks every benchmark candidate returns the
// scanner's values on the benchmark bodies, and records which ones get
// float32 rounding wrong on a value that needs more than float64 to round
// correctly (they parse to float64 and round again).
func TestDecodeCandidatesAgree(t *testing.T) {
	for _, body := range benchBodies[:1] {
		want, err := scannerCandidate(body.body)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range candidates[1:] {
			got, err := c.decode(body.body)
			if err != nil {
				t.Logf("%s: %v", c.name, err)
				continue
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d values, want %d", c.name, len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s: [%d] = %v, want %v", c.name, i, got[i], want[i])
				}
			}
		}
	}
	hard := []byte(body("FP32", "[1,1]", "[1.00000017881393432617187499]"))
	exact := math.Nextafter32(1, 2)
	for _, c := range candidates {
		got, err := c.decode(hard)
		if err != nil {
			t.Logf("%s: %v", c.name, err)
			continue
		}
		t.Logf("%-14s 1.00000017881393432617187499 -> %.9g (correct: %v)", c.name, got[0], got[0] == exact)
		if c.name == "scanner" && got[0] != exact {
			t.Errorf("scanner rounds 1.00000017881393432617187499 to %.9g", got[0])
		}
	}
}
