package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/dispatch"
)

// syncBuffer is a bytes.Buffer safe for the server's log writes while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs the server with args and env until the test ends, and returns
// its base URL and its log.
func start(t *testing.T, args []string, env map[string]string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, args, func(k string) string { return env[k] }, io.Discard, logs, ready)
	}()
	select {
	case addr := <-ready:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("server exited with %v", err)
			}
		})
		return "http://" + addr, logs
	case err := <-done:
		cancel()
		t.Fatalf("server did not start: %v\n%s", err, logs.String())
	}
	return "", nil
}

func TestServeEmbeddedModel(t *testing.T) {
	url, logs := start(t, []string{"--addr", "127.0.0.1:0"}, nil)
	body := `{"inputs":[{"name":"input","shape":[1,784],"datatype":"FP32","data":[` + strings.Repeat("0,", 783) + `0]}]}`
	resp, err := http.Post(url+"/v2/models/mnist/infer", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"name":"scores","datatype":"FP32","shape":[1,10]`) {
		t.Fatalf("infer: %d %s", resp.StatusCode, b)
	}
	log := logs.String()
	for _, want := range []string{"model loaded", "model=mnist", "version=1", "parameters=235146", "load_time=", "listening", "addr=127.0.0.1:"} {
		if !strings.Contains(log, want) {
			t.Errorf("start-up log lacks %q:\n%s", want, log)
		}
	}
}

func TestServeRepositoryFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "digits", "4"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "digits", "4", "model.onnx"), defaultmodel.ONNX, 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"QUANTSERVE_ADDR": "127.0.0.1:0", "QUANTSERVE_MODEL_REPOSITORY": dir, "QUANTSERVE_MAX_BODY_BYTES": "100"}
	url, _ := start(t, nil, env)
	resp, err := http.Get(url + "/v2/models/digits")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"versions":["4"]`) {
		t.Fatalf("metadata: %d %s", resp.StatusCode, b)
	}
	resp, err = http.Post(url+"/v2/models/digits/infer", "application/json", strings.NewReader(strings.Repeat(" ", 101)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("QUANTSERVE_MAX_BODY_BYTES=100 not applied: status %d", resp.StatusCode)
	}
}

func TestFlagsOverrideEnvironment(t *testing.T) {
	c, err := parseConfig([]string{"--addr", ":9"}, func(k string) string {
		return map[string]string{"QUANTSERVE_ADDR": ":1", "QUANTSERVE_LOG_LEVEL": "debug"}[k]
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.addr != ":9" || c.logLevel != "debug" || c.maxBodyBytes != 64<<20 {
		t.Errorf("config %+v", c)
	}
	for _, bad := range [][]string{{"--max-body-bytes", "0"}, {"--nope"}, {"extra"}} {
		if _, err := parseConfig(bad, func(string) string { return "" }, io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if _, err := parseConfig(nil, func(k string) string {
		if k == "QUANTSERVE_MAX_BODY_BYTES" {
			return "lots"
		}
		return ""
	}, io.Discard); err == nil || !strings.Contains(err.Error(), "QUANTSERVE_MAX_BODY_BYTES") {
		t.Errorf("bad environment value: %v", err)
	}
}

func TestVersionAndBadRepository(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--version"}, func(string) string { return "" }, &out, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "quantserve ") {
		t.Errorf("--version printed %q", out.String())
	}
	err := run(context.Background(), []string{"--model-repository", filepath.Join(t.TempDir(), "missing"), "--addr", "127.0.0.1:0"}, func(string) string { return "" }, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing repository: %v", err)
	}
}

func TestKernelsFlag(t *testing.T) {
	url, logs := start(t, []string{"--addr", "127.0.0.1:0", "--kernels", "generic", "--threads", "1", "--quantize", "none"}, nil)
	resp, err := http.Get(url + "/v2")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"kernels":"generic"`) {
		t.Errorf("/v2: %s", b)
	}
	if !strings.Contains(logs.String(), "table=generic") || !strings.Contains(logs.String(), "int8_layers=0/3") {
		t.Errorf("start-up log: %s", logs.String())
	}
	// a table this CPU cannot run, or no such table: a clear start-up error
	for _, bad := range append(dispatch.Names(), "sse9") {
		if slices.ContainsFunc(dispatch.Available(), func(tb *dispatch.Table) bool { return tb.Name == bad }) {
			continue
		}
		err := run(context.Background(), []string{"--kernels", bad, "--addr", "127.0.0.1:0"}, func(string) string { return "" }, io.Discard, io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), "--kernels") || !strings.Contains(err.Error(), bad) {
			t.Errorf("--kernels %s: %v", bad, err)
		}
	}
	var out bytes.Buffer
	env := func(k string) string { return map[string]string{"QUANTSERVE_KERNELS": "generic"}[k] }
	if err := run(context.Background(), []string{"--version"}, env, &out, io.Discard, nil); err != nil || !strings.Contains(out.String(), "kernels: generic") {
		t.Errorf("--version with QUANTSERVE_KERNELS=generic: %q %v", out.String(), err)
	}
	// every table this CPU runs can be chosen by name, and is the one reported
	for _, tb := range dispatch.Available() {
		out.Reset()
		if err := run(context.Background(), []string{"--kernels", tb.Name, "--version"}, func(string) string { return "" }, &out, io.Discard, nil); err != nil || !strings.Contains(out.String(), "kernels: "+tb.Name+" ") {
			t.Errorf("--kernels %s --version: %q %v", tb.Name, out.String(), err)
		}
	}
}
