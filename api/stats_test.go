package api

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestStatistics checks Triton's statistics extension: counts per version,
// successes and failures apart, durations that add up.
func TestStatistics(t *testing.T) {
	url := embeddedServer(t)
	good := inferBody("input", "FP32", []int{3, 784}, make([]float32, 3*784))
	before := time.Now().UnixMilli()
	for range 2 {
		if r := do(t, "POST", url+"/v2/models/mnist/infer", good); r.status != 200 {
			t.Fatalf("infer: %d %s", r.status, r.body)
		}
	}
	if r := do(t, "POST", url+"/v2/models/mnist/versions/1/infer", inferBody("input", "FP32", []int{1, 3}, []float32{1, 2, 3})); r.status != 400 {
		t.Fatalf("bad infer: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/v2/models/stats", "/v2/models/mnist/stats", "/v2/models/mnist/versions/1/stats"} {
		r := do(t, "GET", url+path, "")
		var ans struct {
			ModelStats []struct {
				Name, Version  string
				LastInference  int64                                `json:"last_inference"`
				InferenceCount int64                                `json:"inference_count"`
				ExecutionCount int64                                `json:"execution_count"`
				InferenceStats map[string]struct{ Count, NS int64 } `json:"inference_stats"`
			} `json:"model_stats"`
		}
		if err := json.Unmarshal(r.body, &ans); err != nil || r.status != 200 || len(ans.ModelStats) != 1 {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
		s := ans.ModelStats[0]
		st := s.InferenceStats
		// 2 requests of batch 3 succeeded, 1 failed
		if s.Name != "mnist" || s.Version != "1" || s.InferenceCount != 6 || s.ExecutionCount != 2 || s.LastInference < before ||
			st["success"].Count != 2 || st["fail"].Count != 1 || st["compute_infer"].Count != 2 || st["compute_input"].Count != 2 ||
			st["compute_output"].Count != 2 || st["queue"].Count != 2 {
			t.Errorf("%s: %s", path, r.body)
		}
		parts := st["queue"].NS + st["compute_input"].NS + st["compute_infer"].NS + st["compute_output"].NS
		if st["compute_infer"].NS <= 0 || st["fail"].NS <= 0 || parts > st["success"].NS {
			t.Errorf("%s: the phases (%d ns) do not fit in the successes' time (%d ns): %s", path, parts, st["success"].NS, r.body)
		}
	}
	wantError(t, do(t, "GET", url+"/v2/models/nope/stats", ""), 404, "nope")
	wantError(t, do(t, "GET", url+"/v2/models/mnist/versions/2/stats", ""), 404, "version")
}

func TestHeadAndTrailingSlash(t *testing.T) {
	url := embeddedServer(t)
	for _, path := range []string{"/v2/health/live", "/v2/health/ready"} {
		if r := do(t, "HEAD", url+path, ""); r.status != 200 || len(r.body) != 0 {
			t.Errorf("HEAD %s: %d %q", path, r.status, r.body)
		}
	}
	r := do(t, "PUT", url+"/v2/health/live", "")
	if r.status != 405 || r.header.Get("Allow") != "GET, HEAD" {
		t.Errorf("PUT: %d, Allow %q", r.status, r.header.Get("Allow"))
	}
	a, b := do(t, "GET", url+"/v2", ""), do(t, "GET", url+"/v2/", "")
	if a.status != 200 || b.status != 200 || string(a.body) != string(b.body) {
		t.Errorf("/v2 %d %s, /v2/ %d %s", a.status, a.body, b.status, b.body)
	}
	if r := do(t, "GET", url+"/v2/models/mnist/ready/", ""); r.status != 200 {
		t.Errorf("a trailing slash on a model route: %d", r.status)
	}
	if r := do(t, "GET", url+"/openapi.yaml", ""); r.status != 200 || !strings.HasPrefix(string(r.body), "openapi: 3.0.3") {
		t.Errorf("/openapi.yaml: %d %.40s", r.status, r.body)
	}
}
