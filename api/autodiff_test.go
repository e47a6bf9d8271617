//go:build autodiff

package api

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// classifier is x [N,8] -> Gemm(8x16) -> Tanh -> Gemm(16x3) -> Softmax.
func classifier(seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	rnd := func(shape ...int) *tensor.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 0.5)
		}
		return tensor.From(shape, x)
	}
	return onnxbuild.Graph{
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1, 8)},
		Outputs: []onnxbuild.IO{onnxbuild.V("p", tensor.Float32, -1, 3)},
		Nodes: []onnxbuild.Node{
			{Op: "Gemm", Inputs: []string{"x", "w1", "b1"}, Outputs: []string{"h"}},
			{Op: "Tanh", Inputs: []string{"h"}, Outputs: []string{"t"}},
			{Op: "Gemm", Inputs: []string{"t", "w2", "b2"}, Outputs: []string{"z"}},
			{Op: "Softmax", Inputs: []string{"z"}, Outputs: []string{"p"}, Attrs: []*onnxpb.Attribute{onnxbuild.IntAttr("axis", 1)}},
		},
		Inits: map[string]*tensor.Tensor{"w1": rnd(8, 16), "b1": rnd(16), "w2": rnd(16, 3), "b2": rnd(3)},
	}.Bytes()
}

type gradResponse struct {
	ModelVersion string `json:"model_version"`
	Outputs      []struct {
		Name string
		Data []float64
	}
	Gradients []struct {
		Name     string
		Shape    []int
		Datatype string
		Data     []float64
	}
}

// TestGradMatchesFiniteDifferencesOfInfer compares /grad on a float model
// with central differences of /infer, both over HTTP.
func TestGradMatchesFiniteDifferencesOfInfer(t *testing.T) {
	dir := writeRepo(t, map[string]map[int][]byte{"clf": {1: classifier(1)}}, map[string]string{"clf": "quantize: none\n"})
	url := testServer(t, openRepo(t, dir), 0)
	r := rand.New(rand.NewPCG(2, 2))
	x := make([]float64, 2*8)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	seed := []float64{1, -0.5, 2, 0.3, 0, -1}
	body := func(x []float64, extra string) string {
		b, _ := json.Marshal(x)
		return fmt.Sprintf(`{"inputs":[{"name":"x","shape":[2,8],"datatype":"FP32","data":%s}]%s}`, b, extra)
	}
	resp := do(t, "POST", url+"/v2/models/clf/grad", body(x, `,"output_grad":{"shape":[2,3],"datatype":"FP32","data":[1,-0.5,2,0.3,0,-1]},"wrt":["x","w2"]`))
	var g gradResponse
	if err := json.Unmarshal(resp.body, &g); err != nil || resp.status != 200 {
		t.Fatalf("grad: %d %s", resp.status, resp.body)
	}
	if len(g.Gradients) != 2 || g.Gradients[0].Name != "x" || fmt.Sprint(g.Gradients[0].Shape) != "[2 8]" || g.Gradients[1].Name != "w2" || fmt.Sprint(g.Gradients[1].Shape) != "[16 3]" {
		t.Fatalf("gradients %+v", g.Gradients)
	}
	objective := func(x []float64) float64 {
		r := do(t, "POST", url+"/v2/models/clf/infer", body(x, ""))
		var out struct{ Outputs []struct{ Data []float64 } }
		json.Unmarshal(r.body, &out)
		var s float64
		for i, p := range out.Outputs[0].Data {
			s += p * seed[i]
		}
		return s
	}
	for i := range x {
		orig := x[i]
		h := 1e-2
		x[i] = orig + h
		plus := objective(x)
		x[i] = orig - h
		minus := objective(x)
		x[i] = orig
		fd := (plus - minus) / (2 * h)
		if got := g.Gradients[0].Data[i]; math.Abs(got-fd) > 1e-2*(1+math.Abs(fd)) {
			t.Errorf("d/dx[%d]: /grad %v, finite differences of /infer %v", i, got, fd)
		}
	}
	// the default seed (d sum/dx) and default wrt (all inputs); int8 model too
	dir8 := writeRepo(t, map[string]map[int][]byte{"clf": {1: classifier(1)}}, nil)
	url8 := testServer(t, openRepo(t, dir8), 0)
	r8 := do(t, "POST", url8+"/v2/models/clf/grad", body(x, ""))
	if err := json.Unmarshal(r8.body, &g); err != nil || r8.status != 200 || len(g.Gradients) != 1 || g.Gradients[0].Name != "x" {
		t.Fatalf("default grad: %d %s", r8.status, r8.body)
	}
	// Σ softmax = 1 for every row, so d(sum)/dx is 0
	for i, v := range g.Gradients[0].Data {
		if math.Abs(v) > 1e-5 {
			t.Errorf("d(Σp)/dx[%d] = %v, want 0", i, v)
		}
	}
	for _, bad := range []struct{ extra, want string }{
		{`,"wrt":["nope"]`, `"nope"`},
		{`,"output":"q"`, `no output "q"`},
		{`,"output_grad":{"shape":[1],"datatype":"FP32","data":[1]}`, "output_grad must be FP32 of the output's shape"},
		{`,"wrt":"x"`, "wrt"},
	} {
		wantError(t, do(t, "POST", url+"/v2/models/clf/grad", body(x, bad.extra)), 400, bad.want)
	}
	var ext []string
	for _, e := range do(t, "GET", url+"/v2", "").json(t)["extensions"].([]any) {
		ext = append(ext, e.(string))
	}
	if !slices.Contains(ext, "autodiff") {
		t.Errorf("extensions %v lack autodiff", ext)
	}
}

// TestTrainLowersLossAndServesANewVersion fine-tunes over HTTP and checks
// the loss falls, the new version is written to the repository, served by
// default, and better on the batch than the old one.
func TestTrainLowersLossAndServesANewVersion(t *testing.T) {
	dir := writeRepo(t, map[string]map[int][]byte{"clf": {1: classifier(3)}}, nil)
	url := adminServer(t, openRepo(t, dir), adminToken)
	r := rand.New(rand.NewPCG(4, 4))
	const n = 32
	x := make([]float64, n*8)
	labels := make([]int64, n)
	for i := 0; i < n; i++ {
		for j := 0; j < 8; j++ {
			x[i*8+j] = r.NormFloat64()
		}
		switch { // a learnable rule
		case x[i*8] > 0.5:
			labels[i] = 0
		case x[i*8+1] > 0:
			labels[i] = 1
		default:
			labels[i] = 2
		}
	}
	xb, _ := json.Marshal(x)
	lb, _ := json.Marshal(labels)
	inputs := fmt.Sprintf(`"inputs":[{"name":"x","shape":[%d,8],"datatype":"FP32","data":%s}]`, n, xb)
	body := fmt.Sprintf(`{%s,"targets":{"shape":[%d],"datatype":"INT64","data":%s},"loss":"cross_entropy","optimizer":{"name":"adam","learning_rate":0.05},"steps":60}`, inputs, n, lb)
	wantError(t, do(t, "POST", url+"/v2/models/clf/train", body), 401)
	req := doAuthBody(t, url+"/v2/models/clf/train", body)
	var tr struct {
		ModelVersion string `json:"model_version"`
		Loss         []float64
	}
	if err := json.Unmarshal(req.body, &tr); err != nil || req.status != 200 {
		t.Fatalf("train: %d %s", req.status, req.body)
	}
	if tr.ModelVersion != "2" || len(tr.Loss) != 60 || !(tr.Loss[59] < tr.Loss[0]*0.5) {
		t.Fatalf("train: version %s, loss %v", tr.ModelVersion, tr.Loss)
	}
	if _, err := os.Stat(filepath.Join(dir, "clf", "2", "model.onnx")); err != nil {
		t.Errorf("new version not written to the repository: %v", err)
	}
	accuracy := func(version string) int {
		r := do(t, "POST", url+"/v2/models/clf/versions/"+version+"/infer", "{"+inputs+"}")
		var out struct{ Outputs []struct{ Data []float64 } }
		json.Unmarshal(r.body, &out)
		correct := 0
		for i := 0; i < n; i++ {
			row := out.Outputs[0].Data[i*3 : i*3+3]
			best := 0
			for c := range row {
				if row[c] > row[best] {
					best = c
				}
			}
			if int64(best) == labels[i] {
				correct++
			}
		}
		return correct
	}
	before, after := accuracy("1"), accuracy("2")
	if after <= before || after < n*3/4 {
		t.Errorf("accuracy on the batch: version 1 %d/%d, version 2 %d/%d", before, n, after, n)
	}
	if r := do(t, "POST", url+"/v2/models/clf/infer", "{"+inputs+"}"); !strings.Contains(string(r.body), `"model_version":"2"`) {
		t.Errorf("default version after training: %s", r.body[:80])
	}
	for _, bad := range []struct{ body, want string }{
		{strings.Replace(body, `"steps":60`, `"steps":0`, 1), "steps"},
		{strings.Replace(body, `"adam"`, `"rmsprop"`, 1), "rmsprop"},
		{strings.Replace(body, `"cross_entropy"`, `"hinge"`, 1), "hinge"},
		{strings.Replace(body, fmt.Sprintf(`"shape":[%d],"datatype":"INT64"`, n), `"shape":[1],"datatype":"INT64"`, 1), "targets"},
	} {
		wantError(t, doAuthBody(t, url+"/v2/models/clf/train", bad.body), 400, bad.want)
	}
}

func doAuthBody(t *testing.T, url, body string) response {
	t.Helper()
	return doWith(t, "POST", url, body, map[string]string{"Authorization": "Bearer " + adminToken})
}

// TestReadmeSaliencyExample sends examples/mnist-saliency.json, the body of
// the /grad example of docs/gradients.md, to the embedded model.
func TestReadmeSaliencyExample(t *testing.T) {
	body, err := os.ReadFile("../examples/mnist-saliency.json")
	if err != nil {
		t.Fatal(err)
	}
	r := do(t, "POST", embeddedServer(t)+"/v2/models/mnist/grad", string(body))
	var g gradResponse
	if err := json.Unmarshal(r.body, &g); err != nil || r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if len(g.Gradients) != 1 || g.Gradients[0].Name != "input" || fmt.Sprint(g.Gradients[0].Shape) != "[1 784]" {
		t.Fatalf("gradients %+v", g.Gradients)
	}
	var mag float64
	for _, v := range g.Gradients[0].Data {
		mag += math.Abs(v)
	}
	if mag == 0 {
		t.Error("the saliency map is all zeros")
	}
}
