package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/repository"
)

// testServer serves repo over real HTTP on 127.0.0.1 and returns its URL.
func testServer(t *testing.T, repo *repository.Repository, maxBody int64) string {
	t.Helper()
	return newTestHTTPServer(t, Options{Repository: repo, Version: "test", MaxBodyBytes: maxBody, Logger: quietLog()})
}

func newTestHTTPServer(t *testing.T, opts Options) string {
	t.Helper()
	srv := httptest.NewServer(NewRouter(opts))
	t.Cleanup(srv.Close)
	return srv.URL
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// serverOptions are the server's defaults: int8 weights, per channel.
func serverOptions() repository.Options {
	return repository.Options{Log: quietLog(), Model: model.Options{Quantize: true, Scheme: quant.PerChannel}}
}

// writeRepo lays out models as DIR/<name>/<version>/model.onnx.
func writeRepo(t *testing.T, models map[string]map[int][]byte, configs map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, versions := range models {
		for v, data := range versions {
			p := filepath.Join(dir, name, fmt.Sprint(v))
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(p, "model.onnx"), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, cfg := range configs {
		os.MkdirAll(filepath.Join(dir, name), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name, "config.yaml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func openRepo(t *testing.T, dir string) *repository.Repository {
	t.Helper()
	repo, err := repository.Open(dir, serverOptions())
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

type response struct {
	status int
	header http.Header
	body   []byte
	close  bool // the server closes the connection after it
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("response is not a JSON object: %v: %s", err, r.body)
	}
	return m
}

func do(t *testing.T, method, url, body string) response {
	t.Helper()
	return doWith(t, method, url, body, nil)
}

func doWith(t *testing.T, method, url, body string, headers map[string]string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, b, resp.Close}
}

// wantError checks an error response: status, JSON {"error"} mentioning
// each of the fragments.
func wantError(t *testing.T, r response, status int, fragments ...string) {
	t.Helper()
	if r.status != status {
		t.Errorf("status %d, want %d: %s", r.status, status, r.body)
		return
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	m := r.json(t)
	msg, ok := m["error"].(string)
	if !ok || len(m) != 1 {
		t.Errorf("error body %s is not {\"error\": string}", r.body)
		return
	}
	for _, f := range fragments {
		if !strings.Contains(msg, f) {
			t.Errorf("error %q does not mention %q", msg, f)
		}
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func inferBody(name, dtype string, shape []int, data any) string {
	return mustJSON(map[string]any{"inputs": []any{map[string]any{"name": name, "datatype": dtype, "shape": shape, "data": data}}})
}

func bytesOf(n int) string { return string(bytes.Repeat([]byte{' '}, n)) }
