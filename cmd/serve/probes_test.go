//go:build unix

package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
)

// TestHostileModelProbes starts the server on the hostile repository (a
// constant that would fold into 16 GiB, a batching probe that never ends,
// a file that is not ONNX) with a named pipe as one model.onnx and the
// attention-mask model beside them, under --max-inflight-bytes 64MiB. It
// listens, every load ends (the pipe refused as not a regular file, the
// probe at its deadline), and a request that makes the unfolded constant,
// or the mask of 46,340 ids, is answered 413 naming the node; the other
// models serve after each.
func TestHostileModelProbes(t *testing.T) {
	root := hostileRepository(t)
	if err := os.MkdirAll(filepath.Join(root, "piped", "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "piped", "1", "model.onnx"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(root, "mask", "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "mask", "1", "model.onnx"), onnxbuild.AttentionMask().Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	url, _ := start(t, []string{"--addr", "127.0.0.1:0", "--model-repository", root, "--model-load-timeout", "300ms",
		"--max-inflight-bytes", "64MiB"}, nil)

	idx := indexStates(t, url)
	for name, want := range map[string][2]string{
		"piped": {"UNAVAILABLE", "named pipe"}, "slow": {"UNAVAILABLE", "deadline"}, "broken": {"UNAVAILABLE", "decoding ONNX"},
		"huge": {"READY", ""}, "ok": {"READY", ""}, "mask": {"READY", ""},
	} {
		if got := idx[name]; got[0] != want[0] || !strings.Contains(got[1], want[1]) {
			t.Errorf("%s: %v, want %s naming %q", name, got, want[0], want[1])
		}
	}
	serves := func(after string) {
		t.Helper()
		if code, body := post(t, url+"/v2/models/ok/infer", okInfer); code != http.StatusOK {
			t.Fatalf("after %s: ok's infer: %d %s", after, code, body)
		}
	}
	serves("start-up")

	ids, _ := json.Marshal(make([]int64, 46340))
	for _, p := range []struct{ model, body, names string }{
		{"huge", `{"inputs":[{"name":"x","shape":[1],"datatype":"FP64","data":[1]}]}`, "ConstantOfShape"},
		{"mask", `{"inputs":[{"name":"ids","shape":[1,46340],"datatype":"INT64","data":` + string(ids) + `}]}`, "ConstantOfShape"},
	} {
		code, body := post(t, url+"/v2/models/"+p.model+"/infer", p.body)
		var ans map[string]string
		if err := json.Unmarshal([]byte(body), &ans); err != nil || code != http.StatusRequestEntityTooLarge ||
			!strings.Contains(ans["error"], p.names) || !strings.Contains(ans["error"], "--max-inflight-bytes") {
			t.Errorf("%s: %d %s, want 413 naming %s and the flag", p.model, code, body, p.names)
		}
		serves(p.model)
	}
}
