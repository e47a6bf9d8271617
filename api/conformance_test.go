package api

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/internal/shareddata"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/oip"
	"github.com/quantserve/quantserve/repository"
)

// TestONNXNodeCasesOverHTTP serves every official ONNX node test case from
// one repository and one server (float32, as ONNX's runner computes), checks
// the index says READY or UNAVAILABLE with the reason for each, and sends a
// sample of the cases' inputs through infer, comparing outputs as ONNX's
// runner does.
func TestONNXNodeCasesOverHTTP(t *testing.T) {
	src := shareddata.Dir(t, "onnx-node")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var cases []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "test_") {
			continue
		}
		cases = append(cases, e.Name())
		os.MkdirAll(filepath.Join(dir, e.Name(), "1"), 0o755)
		if err := os.Symlink(filepath.Join(src, e.Name(), "model.onnx"), filepath.Join(dir, e.Name(), "1", "model.onnx")); err != nil {
			t.Fatal(err)
		}
	}
	repo, err := repository.Open(dir, repository.Options{Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	url := testServer(t, repo, 0)
	ready, unavailable := 0, 0
	for _, e := range index(t, url) {
		switch e.State {
		case "READY":
			ready++
		case "UNAVAILABLE":
			unavailable++
			if !strings.Contains(e.Reason, "unsupported") {
				t.Errorf("%s: unavailable without naming what is missing: %q", e.Name, e.Reason)
			}
		default:
			t.Errorf("%s: state %s", e.Name, e.State)
		}
	}
	if ready+unavailable != len(cases) || ready < 100 {
		t.Fatalf("index: %d ready, %d unavailable of %d cases", ready, unavailable, len(cases))
	}
	// model's conformance list names the cases whose outputs differ from
	// the reference beyond tolerance, with the reason.
	list, err := os.ReadFile("../model/testdata/onnx-node-refused.tsv")
	if err != nil {
		t.Fatal(err)
	}
	differing := map[string]bool{}
	for _, line := range strings.Split(string(list), "\n") {
		if name, reason, ok := strings.Cut(line, "\t"); ok && strings.HasPrefix(reason, "differs: ") {
			differing[name] = true
		}
	}
	checked := 0
	for i, name := range cases {
		e, v, release, err := repo.Get(name, "")
		if err != nil {
			continue // refused at load, counted above
		}
		release()
		if i%5 != 0 && !strings.Contains(name, "quantize") && !strings.Contains(name, "qlinear") {
			continue // a sample: every fifth case, and all quantization ones
		}
		if differing[name] {
			continue // known to differ from the reference, with the reason, in model's list
		}
		if sendCase(t, url, filepath.Join(src, name), e.Name, v.Model) {
			checked++
		}
	}
	t.Logf("%d cases READY, %d UNAVAILABLE; %d checked end to end over HTTP", ready, unavailable, checked)
	if checked < 20 {
		t.Errorf("only %d cases checked over HTTP", checked)
	}
}

func sendCase(t *testing.T, url, dir, name string, m *model.Model) bool {
	t.Helper()
	body := []byte(`{"inputs":[`)
	for i, spec := range m.Inputs {
		in := readPB(t, filepath.Join(dir, "test_data_set_0", fmt.Sprintf("input_%d.pb", i)))
		for _, f := range in.Float64s() {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return false // JSON cannot carry it
			}
		}
		if i > 0 {
			body = append(body, ',')
		}
		body = oip.AppendTensor(body, spec.Name, in)
	}
	body = append(body, "]}"...)
	for i := range m.Outputs {
		want := readPB(t, filepath.Join(dir, "test_data_set_0", fmt.Sprintf("output_%d.pb", i)))
		for _, f := range want.Float64s() {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return false // JSON cannot carry it: the server answers null
			}
		}
	}
	r := do(t, "POST", url+"/v2/models/"+name+"/infer", string(body))
	if r.status == 501 && strings.Contains(string(r.body), "unsupported") {
		return false // refused once the input types are seen, as model's conformance list records
	}
	if r.status != 200 {
		t.Errorf("%s: %d %s", name, r.status, r.body)
		return false
	}
	var resp struct{ Outputs []json.RawMessage }
	if err := json.Unmarshal(r.body, &resp); err != nil || len(resp.Outputs) != len(m.Outputs) {
		t.Errorf("%s: %v %s", name, err, r.body)
		return false
	}
	for i := range m.Outputs {
		want := readPB(t, filepath.Join(dir, "test_data_set_0", fmt.Sprintf("output_%d.pb", i)))
		got, err := oip.DecodeTensor(resp.Outputs[i])
		if err != nil {
			t.Errorf("%s: output %d: %v", name, i, err)
			return false
		}
		if got.DType != want.DType || fmt.Sprint(got.Shape) != fmt.Sprint(want.Shape) {
			t.Errorf("%s: output %d is %v%v, want %v%v", name, i, got.DType, got.Shape, want.DType, want.Shape)
			return false
		}
		g, w := got.Float64s(), want.Float64s()
		for j := range w {
			if !(math.Abs(g[j]-w[j]) <= 1e-7+1e-3*math.Abs(w[j])) && !(math.IsNaN(w[j]) && math.IsNaN(g[j])) {
				t.Errorf("%s: output %d[%d] = %v, want %v", name, i, j, g[j], w[j])
				return false
			}
		}
	}
	return true
}
