//go:build unix

package api

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/tensor"
)

// TestRepositoryFilesOverHTTP: a model directory that is a symbolic link
// is served from start-up and reloads through the API; a named pipe as
// model.onnx holds up neither start-up nor a load: the model is
// UNAVAILABLE with the reason and the load answers 400 saying why.
func TestRepositoryFilesOverHTTP(t *testing.T) {
	store := t.TempDir()
	dir := writeRepo(t, map[string]map[int][]byte{"plain": {1: onnxbuild.Identity(tensor.Float32, []int{-1})}}, nil)
	writeModel := func(p string) {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "model.onnx"), onnxbuild.Identity(tensor.Float32, []int{-1}), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeModel(filepath.Join(store, "linked", "1"))
	if err := os.Symlink(filepath.Join(store, "linked"), filepath.Join(dir, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "piped", "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "piped", "1", "model.onnx"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	url := adminServer(t, openRepo(t, dir), adminToken)

	body := inferBody("x", "FP32", []int{2}, []float32{1, 2})
	if r := do(t, "POST", url+"/v2/models/linked/infer", body); r.status != 200 {
		t.Errorf("infer on the linked model: %d %s", r.status, r.body)
	}
	idx := index(t, url)
	if st, _ := stateOf(idx, "linked", "1"); st != "READY" {
		t.Errorf("index: linked is %q: %v", st, idx)
	}
	if st, why := stateOf(idx, "piped", "1"); st != "UNAVAILABLE" || why == "" {
		t.Errorf("index: piped is %q (%q)", st, why)
	}
	wantError(t, doAuth(t, "POST", url+"/v2/repository/models/piped/load", adminToken), 400, "not a regular file", "named pipe")
	for _, op := range []string{"unload", "load"} {
		if r := doAuth(t, "POST", url+"/v2/repository/models/linked/"+op, adminToken); r.status != 200 {
			t.Errorf("%s of the linked model: %d %s", op, r.status, r.body)
		}
	}
	if r := do(t, "POST", url+"/v2/models/linked/infer", body); r.status != 200 {
		t.Errorf("infer on the reloaded linked model: %d %s", r.status, r.body)
	}
}
