package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/defaultmodel"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// KServe mounts one model's files at /mnt/models: model.onnx directly in
// the repository directory is served as one model, named after the
// directory or --model-name (QUANTSERVE_MODEL_NAME).
func TestServeKServeSingleModelLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "digits")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(file, defaultmodel.ONNX, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		env  map[string]string
		name string
	}{
		{[]string{"--model-repository", dir}, nil, "digits"},
		{[]string{"--model-repository", file}, nil, "digits"},
		{[]string{"--model-repository", dir}, map[string]string{"QUANTSERVE_MODEL_NAME": "mnist-v2"}, "mnist-v2"},
		{[]string{"--model-repository", file, "--model-name", "flagged"}, map[string]string{"QUANTSERVE_MODEL_NAME": "env"}, "flagged"},
	} {
		url, _ := start(t, append([]string{"--addr", "127.0.0.1:0"}, c.args...), c.env)
		status, body := get(t, url+"/v2/models/"+c.name)
		if status != 200 || !strings.Contains(body, `"versions":["1"]`) {
			t.Errorf("%v %v: model %q: %d %s", c.args, c.env, c.name, status, body)
		}
		if status, body := get(t, url+"/v2/health/ready"); status != 200 {
			t.Errorf("%v: ready: %d %s", c.args, status, body)
		}
	}
}

// A repository with nothing to serve keeps the server up but not ready,
// and says why in the readiness answer and the log.
func TestServeEmptyRepositoryIsNotReady(t *testing.T) {
	dir := t.TempDir()
	url, logs := start(t, []string{"--addr", "127.0.0.1:0", "--model-repository", dir}, nil)
	status, body := get(t, url+"/v2/health/ready")
	var ready struct {
		Ready  bool
		Reason string
	}
	if err := json.Unmarshal([]byte(body), &ready); err != nil || status != 503 || ready.Ready || !strings.Contains(ready.Reason, "no model to serve") || !strings.Contains(ready.Reason, dir) {
		t.Errorf("ready: %d %s", status, body)
	}
	if !strings.Contains(logs.String(), "no model to serve") {
		t.Errorf("the log does not say why the server is not ready:\n%s", logs.String())
	}
	if status, _ := get(t, url+"/v2/health/live"); status != 200 {
		t.Errorf("live: %d", status)
	}
}

func TestModelNameNeedsASingleModel(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--model-name", "x"},
		{"--model-name", "x", "--model-repository", dir},
		{"--model-repository", filepath.Join(dir, "a", "notes.txt")},
	} {
		if args[len(args)-1] == filepath.Join(dir, "a", "notes.txt") {
			os.WriteFile(args[len(args)-1], []byte("hi"), 0o644)
		}
		err := run(t.Context(), append([]string{"--addr", "127.0.0.1:0"}, args...), func(string) string { return "" }, io.Discard, io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), "model") {
			t.Errorf("%v: %v", args, err)
		}
	}
}
