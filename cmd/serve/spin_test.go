package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quantserve/quantserve/gemm"
)

// TestSpinFlag: --spin (and QUANTSERVE_SPIN) sets how long the workers
// of --threads spin after a task, gemm.DefaultSpin by default; a negative
// spin is refused; a server whose workers park at once still answers
// inferences, and logs its spin at start-up.
func TestSpinFlag(t *testing.T) {
	none := func(string) string { return "" }
	if c, err := parseConfig(nil, none, io.Discard); err != nil || c.spin != gemm.DefaultSpin {
		t.Errorf("default spin: %v %v, want %v", c.spin, err, gemm.DefaultSpin)
	}
	env := map[string]string{"QUANTSERVE_SPIN": "50us"}
	if c, err := parseConfig(nil, func(k string) string { return env[k] }, io.Discard); err != nil || c.spin != 50*time.Microsecond {
		t.Errorf("QUANTSERVE_SPIN=50us: %v %v", c.spin, err)
	}
	if _, err := parseConfig([]string{"--spin", "-1ms"}, none, io.Discard); err == nil || !strings.Contains(err.Error(), "--spin") {
		t.Errorf("--spin -1ms: %v", err)
	}
	url, logs := start(t, []string{"--addr", "127.0.0.1:0", "--threads", "2", "--spin", "0"}, nil)
	body := `{"inputs":[{"name":"input","shape":[2,784],"datatype":"FP32","data":[` + strings.Repeat("0.5,", 2*784-1) + `0]}]}`
	for i := 0; i < 20; i++ {
		resp, err := http.Post(url+"/v2/models/mnist/infer", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"shape":[2,10]`) {
			t.Fatalf("infer %d: %d %s", i, resp.StatusCode, b)
		}
	}
	if !strings.Contains(logs.String(), "spin=0s") {
		t.Errorf("start-up log lacks spin=0s:\n%s", logs.String())
	}
}
