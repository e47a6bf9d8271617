package api

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/tensor"
)

// TestLoadConfigOverride: Triton's repository extension loads a model with
// the config a load request gives, in place of its config file, for that
// load.
func TestLoadConfigOverride(t *testing.T) {
	dir := writeRepo(t, map[string]map[int][]byte{"m": {1: onnxbuild.Identity(tensor.Float32, []int{-1, 3})}}, nil)
	if err := os.WriteFile(filepath.Join(dir, "m", "config.pbtxt"), []byte("name: \"m\"\nmax_batch_size: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	url := adminServer(t, openRepo(t, dir), adminToken)
	load := func(body string) response {
		t.Helper()
		req, _ := http.NewRequest("POST", url+"/v2/repository/models/m/load", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return response{resp.StatusCode, resp.Header, b, resp.Close}
	}
	maxBatch := func() int64 {
		t.Helper()
		r := do(t, "GET", url+"/v2/models/m/config", "")
		var c struct {
			MaxBatchSize int64  `json:"max_batch_size"`
			ConfigFile   string `json:"config_file"`
		}
		if err := json.Unmarshal(r.body, &c); err != nil || r.status != 200 {
			t.Fatalf("config: %d %s", r.status, r.body)
		}
		return c.MaxBatchSize
	}
	if n := maxBatch(); n != 2 {
		t.Fatalf("from the file: max_batch_size %d", n)
	}
	override, _ := json.Marshal(map[string]any{"parameters": map[string]any{"config": `{"name": "m", "max_batch_size": 4, "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [3]}]}`}})
	if r := load(string(override)); r.status != 200 {
		t.Fatalf("load with a config: %d %s", r.status, r.body)
	}
	if n := maxBatch(); n != 4 {
		t.Errorf("after the override: max_batch_size %d, want 4", n)
	}
	// a batch of 3 is within the override's bound
	if r := do(t, "POST", url+"/v2/models/m/infer", `{"inputs":[{"name":"x","shape":[3,3],"datatype":"FP32","data":[1,2,3,4,5,6,7,8,9]}]}`); r.status != 200 {
		t.Errorf("batch of 3 under the override: %d %s", r.status, r.body)
	}
	// an empty body, or no config, reads the file again
	for _, body := range []string{"", `{}`, `{"parameters": {}}`} {
		if r := load(body); r.status != 200 {
			t.Fatalf("load %q: %d %s", body, r.status, r.body)
		}
		if n := maxBatch(); n != 2 {
			t.Errorf("load %q: max_batch_size %d, want the file's 2", body, n)
		}
	}
	wantError(t, load(`{"parameters": {"config": "{\"sequence_batching\": {}}"}}`), 400, "sequence_batching")
	wantError(t, load(`{"parameters": {"config": "{\"name\": \"other\"}"}}`), 400, "differs from the model's directory")
	wantError(t, load(`{"parameters": {"config": 7}}`), 400, "must be a string")
	wantError(t, load(`{"parameters": {"file:1/model.onnx": "AAAA"}}`), 400, "file:1/model.onnx", "not supported")
	wantError(t, load(`{"parameters": `), 400, "load request")
	if n := maxBatch(); n != 2 {
		t.Errorf("after refused overrides: max_batch_size %d, want 2", n)
	}
}
