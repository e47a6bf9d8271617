package api

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/tensor"
)

// postBinary sends a Triton binary-data request: JSON header, then bytes.
func postBinary(t *testing.T, url, header string, tail []byte, headerLen string) (int, http.Header, []byte) {
	t.Helper()
	body := append([]byte(header), tail...)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/octet-stream")
	if headerLen == "" {
		headerLen = strconv.Itoa(len(header))
	}
	req.Header.Set("Inference-Header-Content-Length", headerLen)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func f32bytes(v ...float32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// TestBinaryTensorData speaks Triton's binary tensor data extension, as
// tritonclient's HTTP client does by default: inputs as raw bytes after the
// JSON header, outputs likewise when asked.
func TestBinaryTensorData(t *testing.T) {
	double := onnxbuild.Graph{
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1), onnxbuild.V("n", tensor.Int64, -1)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, -1), onnxbuild.V("m", tensor.Int64, -1)},
		Nodes: []onnxbuild.Node{
			{Op: "Add", Inputs: []string{"x", "x"}, Outputs: []string{"y"}},
			{Op: "Identity", Inputs: []string{"n"}, Outputs: []string{"m"}},
		},
	}.Bytes()
	url := testServer(t, openRepo(t, writeRepo(t, map[string]map[int][]byte{"d": {1: double}}, nil)), 0) + "/v2/models/d/infer"
	n := binary.LittleEndian.AppendUint64(nil, uint64(1<<40))
	tail := append(f32bytes(1.5, -2, 3), n...)

	// binary in, JSON out
	header := `{"inputs":[{"name":"x","shape":[3],"datatype":"FP32","parameters":{"binary_data_size":12}},{"name":"n","shape":[1],"datatype":"INT64","parameters":{"binary_data_size":8}}]}`
	status, h, body := postBinary(t, url, header, tail, "")
	if status != 200 || h.Get("Content-Type") != "application/json" || !bytes.Contains(body, []byte(`"name":"y","datatype":"FP32","shape":[3],"data":[3,-4,6]`)) || !bytes.Contains(body, []byte(`"data":[1099511627776]`)) {
		t.Fatalf("binary in, JSON out: %d %s", status, body)
	}

	// binary in, binary out for y only
	header2 := `{"inputs":[{"name":"x","shape":[3],"datatype":"FP32","parameters":{"binary_data_size":12}},{"name":"n","shape":[1],"datatype":"INT64","parameters":{"binary_data_size":8}}],"outputs":[{"name":"y","parameters":{"binary_data":true}},{"name":"m"}]}`
	status, h, body = postBinary(t, url, header2, tail, "")
	hl, err := strconv.Atoi(h.Get("Inference-Header-Content-Length"))
	if status != 200 || err != nil || hl > len(body) {
		t.Fatalf("binary out: %d %v %s", status, h, body)
	}
	var resp struct {
		Outputs []struct {
			Name       string
			Parameters map[string]int
			Data       []float64
		}
	}
	if err := json.Unmarshal(body[:hl], &resp); err != nil {
		t.Fatalf("JSON header: %v: %s", err, body[:hl])
	}
	if resp.Outputs[0].Name != "y" || resp.Outputs[0].Parameters["binary_data_size"] != 12 || resp.Outputs[0].Data != nil || resp.Outputs[1].Data[0] != 1<<40 {
		t.Fatalf("header %s", body[:hl])
	}
	if !bytes.Equal(body[hl:], f32bytes(3, -4, 6)) {
		t.Errorf("binary output % x", body[hl:])
	}

	// all outputs binary through the request parameter, JSON inputs
	status, h, body = postBinary(t, url, `{"parameters":{"binary_data_output":true},"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[2]},{"name":"n","shape":[1],"datatype":"INT64","data":[7]}]}`, nil, "")
	hl, _ = strconv.Atoi(h.Get("Inference-Header-Content-Length"))
	if status != 200 || !bytes.Equal(body[hl:], append(f32bytes(4), binary.LittleEndian.AppendUint64(nil, 7)...)) {
		t.Fatalf("binary_data_output: %d %q", status, body)
	}

	// errors
	for _, c := range []struct {
		header, length string
		tail           []byte
		want           string
	}{
		{header, "", tail[:19], "binary section has"},
		{header, "", append(tail, 0), "1 bytes after the JSON header belong to no input"},
		{`{"inputs":[{"name":"x","shape":[3],"datatype":"FP32","parameters":{"binary_data_size":8}},{"name":"n","shape":[1],"datatype":"INT64","data":[1]}]}`, "", f32bytes(1, 2), "binary_data_size is 8"},
		{`{"inputs":[{"name":"x","shape":[3],"datatype":"FP32"}]}`, "", nil, "binary_data_size"},
		{header, "9999", tail, "is not a length"},
		{header, "-1", tail, "is not a length"},
	} {
		status, _, body := postBinary(t, url, c.header, c.tail, c.length)
		if status != 400 || !bytes.Contains(body, []byte(c.want)) {
			t.Errorf("%.60s (len %q): %d %s, want 400 mentioning %q", c.header, c.length, status, body, c.want)
		}
	}
}
