package main

import (
	"context"
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

// hostileRepository lays out ok (an identity model), broken (not ONNX),
// huge (a file of a few hundred bytes asking to fold a 16 GiB constant)
// and slow (a model whose batching probe at load never ends on its own:
// only the load's deadline or the server's stop ends it).
func hostileRepository(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for name, data := range map[string][]byte{
		"ok/1/model.onnx":     onnxbuild.Identity(tensor.Float32, []int{-1}),
		"broken/1/model.onnx": []byte("not a model"),
		"huge/1/model.onnx":   onnxbuild.FilledConstant([]int64{1 << 31}, tensor.From([]int{1}, []float64{1})).Bytes(),
		"slow/1/model.onnx":   onnxbuild.EndlessLoop().Bytes(),
		"slow/config.yaml":    []byte("max_batch_size: 4\ndynamic_batching: {}\n"),
	} {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const okInfer = `{"inputs":[{"name":"x","shape":[2],"datatype":"FP32","data":[1,2]}]}`

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// indexStates reads the repository index as model -> state and reason.
func indexStates(t *testing.T, url string) map[string][2]string {
	t.Helper()
	code, body := post(t, url+"/v2/repository/index", "{}")
	if code != http.StatusOK {
		t.Fatalf("index: %d %s", code, body)
	}
	var rows []struct{ Name, State, Reason string }
	if err := json.Unmarshal([]byte(body), &rows); err != nil {
		t.Fatalf("index %s: %v", body, err)
	}
	m := map[string][2]string{}
	for _, r := range rows {
		m[r.Name] = [2]string{r.State, r.Reason}
	}
	return m
}

// TestListenWhileLoading: the server listens before its models load. While
// one model's load runs, live answers 200, ready 503 with a JSON reason
// naming the model still loading and the one that failed, the models
// loaded so far serve, and the index shows each model's state.
func TestListenWhileLoading(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0", "--drain-delay", "0s",
			"--model-repository", hostileRepository(t), "--model-load-timeout", "10m"}, func(string) string { return "" }, io.Discard, logs, ready)
	}()
	var url string
	select {
	case addr := <-ready:
		url = "http://" + addr
	case err := <-done:
		t.Fatalf("server did not start: %v\n%s", err, logs)
	}
	defer func() {
		cancel() // stops the server, and with it the load still running
		if err := <-done; err != nil {
			t.Errorf("server exited with %v", err)
		}
	}()
	if code, body := get(t, url+"/v2/health/live"); code != http.StatusOK {
		t.Errorf("live at once: %d %s", code, body)
	}
	if code, body := get(t, url+"/v2/health/ready"); code != http.StatusServiceUnavailable || !strings.Contains(body, "still loading") {
		t.Errorf("ready at once: %d %s, want 503 naming the models still loading", code, body)
	}

	logs.waitFor(t, `msg="loading model" model=slow`) // broken and ok are done
	code, body := get(t, url+"/v2/health/ready")
	var ans struct {
		Ready  bool   `json:"ready"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(body), &ans); err != nil || code != http.StatusServiceUnavailable || ans.Ready ||
		!strings.Contains(ans.Reason, `models still loading: ["slow"]`) || !strings.Contains(ans.Reason, `model "broken" is not available`) {
		t.Errorf("ready while slow loads: %d %s", code, body)
	}
	if code, body := get(t, url+"/v2/health/live"); code != http.StatusOK {
		t.Errorf("live while slow loads: %d %s", code, body)
	}
	if code, body := get(t, url+"/v2/models/ok/ready"); code != http.StatusOK {
		t.Errorf("ok's ready while slow loads: %d %s", code, body)
	}
	if code, body := get(t, url+"/v2/models/slow/ready"); code == http.StatusOK || !strings.Contains(body, "still loading") {
		t.Errorf("slow's ready while it loads: %d %s", code, body)
	}
	if code, body := post(t, url+"/v2/models/ok/infer", okInfer); code != http.StatusOK || !strings.Contains(body, `"name":"y"`) {
		t.Errorf("ok's infer while slow loads: %d %s", code, body)
	}
	idx := indexStates(t, url)
	if idx["ok"][0] != "READY" || idx["huge"][0] != "READY" || idx["slow"][0] != "LOADING" || idx["broken"][0] != "UNAVAILABLE" || !strings.Contains(idx["broken"][1], "decoding ONNX") {
		t.Errorf("index while slow loads: %v", idx)
	}
}

// TestLoadTimeoutAtStartup: a model whose load outlasts
// --model-load-timeout fails with the reason, logged with its name and
// version; the server stays up and the other models serve.
func TestLoadTimeoutAtStartup(t *testing.T) {
	url, logs := start(t, []string{"--addr", "127.0.0.1:0", "--model-repository", hostileRepository(t), "--model-load-timeout", "300ms"}, nil)
	idx := indexStates(t, url)
	if idx["slow"][0] != "UNAVAILABLE" || !strings.Contains(idx["slow"][1], "deadline (300ms)") {
		t.Errorf("slow: %v, want UNAVAILABLE past its deadline", idx["slow"])
	}
	if idx["ok"][0] != "READY" {
		t.Errorf("ok: %v", idx["ok"])
	}
	// huge's constant is over the fold cap: left to run at inference.
	if idx["huge"][0] != "READY" || !strings.Contains(logs.String(), `model=huge version=1`) || !strings.Contains(logs.String(), "unfolded=[ConstantOfShape_a]") {
		t.Errorf("huge: %v\n%s", idx["huge"], logs)
	}
	if code, body := post(t, url+"/v2/models/ok/infer", okInfer); code != http.StatusOK {
		t.Errorf("ok's infer: %d %s", code, body)
	}
	if code, body := get(t, url+"/v2/health/ready"); code != http.StatusServiceUnavailable || !strings.Contains(body, `model \"slow\" is not available`) || strings.Contains(body, "still loading") {
		t.Errorf("ready after start-up: %d %s", code, body)
	}
	log := logs.String()
	for _, want := range []string{`msg="loading model" model=slow version=1`, `msg="model version failed to load" model=slow version=1`, "start-up load finished"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, `msg="model loaded" model=slow`) {
		t.Errorf("the log says slow loaded:\n%s", log)
	}
}
