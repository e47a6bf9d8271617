//go:build unix

package repository

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/tensor"
)

// lockedBuffer collects log lines written from any goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the log lines that contain every one of the fragments.
func (l *lockedBuffer) lines(fragments ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.b.String(), "\n") {
		all := line != ""
		for _, f := range fragments {
			all = all && strings.Contains(line, f)
		}
		if all {
			out = append(out, line)
		}
	}
	return out
}

// timelessLog logs text lines without their time, so that lines of two
// events compare equal.
func timelessLog(w *lockedBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey && len(groups) == 0 {
			return slog.Attr{}
		}
		return a
	}}))
}

func writeModel(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "model.onnx"), onnxbuild.Identity(tensor.Float32, []int{-1}), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

// openWithin opens root, failing the test if Open does not return
// within a minute (it would be blocked on a file).
func openWithin(t *testing.T, root string, opts Options) *Repository {
	t.Helper()
	type result struct {
		r   *Repository
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := Open(root, opts)
		done <- result{r, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			t.Fatal(res.err)
		}
		return res.r
	case <-time.After(time.Minute):
		t.Fatalf("Open(%s) did not return", root)
		return nil
	}
}

func versionsOf(r *Repository, name string) string {
	for _, e := range r.Entries() {
		if e.Name == name {
			return e.VersionList()
		}
	}
	return ""
}

// TestSymlinksAreFollowed: a model directory or a version directory that
// is a symbolic link to a directory is served at start-up, listed by the
// index and loaded by Load alike; a dangling link is no model.
func TestSymlinksAreFollowed(t *testing.T) {
	store, root := t.TempDir(), t.TempDir()
	writeModel(t, filepath.Join(store, "a", "1"))
	writeModel(t, filepath.Join(store, "v"))
	symlink(t, filepath.Join(store, "a"), filepath.Join(root, "linked"))
	if err := os.MkdirAll(filepath.Join(root, "versions"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join(store, "v"), filepath.Join(root, "versions", "2"))
	symlink(t, filepath.Join(store, "nothing"), filepath.Join(root, "dangling"))
	var log lockedBuffer
	r := openWithin(t, root, Options{Log: timelessLog(&log)})
	if v := versionsOf(r, "linked"); v != "1" {
		t.Errorf("linked model directory at start-up: versions %q, want 1", v)
	}
	if v := versionsOf(r, "versions"); v != "2" {
		t.Errorf("linked version directory at start-up: versions %q, want 2", v)
	}
	if !r.Ready() {
		t.Errorf("not ready: %s", r.NotReady())
	}
	if st := stateOf(r, "dangling"); st != "" {
		t.Errorf("a dangling link is listed %s", st)
	}
	if len(log.lines("model loaded", "model=linked")) != 1 {
		t.Errorf("log:\n%s", log.b.String())
	}

	ctx := context.Background()
	if err := r.Unload(ctx, "linked"); err != nil {
		t.Fatal(err)
	}
	if err := r.Load(ctx, "linked"); err != nil || versionsOf(r, "linked") != "1" {
		t.Errorf("Load of a linked model directory: %v, versions %q", err, versionsOf(r, "linked"))
	}
	// a link added after start-up is listed as not loaded, and loads
	symlink(t, filepath.Join(store, "a"), filepath.Join(root, "late"))
	if st := stateOf(r, "late"); st != StateUnavailable {
		t.Errorf("index: a linked model not loaded is %q, want %s", st, StateUnavailable)
	}
	if err := r.Load(ctx, "late"); err != nil || versionsOf(r, "late") != "1" {
		t.Errorf("Load of a model linked after start-up: %v, versions %q", err, versionsOf(r, "late"))
	}
	if err := r.Load(ctx, "dangling"); !errors.Is(err, ErrModelNotFound) {
		t.Errorf("Load of a dangling link: %v, want ErrModelNotFound", err)
	}
}

// TestOnlyRegularFilesAreRead: a named pipe as model.onnx or config.yaml
// does not hold up start-up or Load: the model fails with the reason, the
// same log line at start-up and on Load, and the other models serve.
func TestOnlyRegularFilesAreRead(t *testing.T) {
	root := t.TempDir()
	writeModel(t, filepath.Join(root, "ok", "1"))
	mkfifo(t, filepath.Join(root, "piped", "1", "model.onnx"))
	writeModel(t, filepath.Join(root, "config", "1"))
	mkfifo(t, filepath.Join(root, "config", "config.yaml"))
	var log lockedBuffer
	r := openWithin(t, root, Options{Log: timelessLog(&log)})
	if v := versionsOf(r, "ok"); v != "1" {
		t.Errorf("ok: versions %q", v)
	}
	for _, name := range []string{"piped", "config"} {
		var err error
		for _, e := range r.Entries() {
			if e.Name == name {
				err = e.Err
			}
		}
		if err == nil || !strings.Contains(err.Error(), "is not a regular file but a named pipe") {
			t.Errorf("%s: error %v, want it refused as a named pipe", name, err)
		}
	}
	atStart := log.lines("model version failed to load", "model=piped")
	if len(atStart) != 1 || !strings.Contains(atStart[0], "named pipe") {
		t.Fatalf("start-up log: %q", atStart)
	}

	done := make(chan error, 1)
	go func() { done <- r.Load(context.Background(), "piped") }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrLoadFailed) || !strings.Contains(err.Error(), "named pipe") {
			t.Errorf("Load: %v, want ErrLoadFailed naming the named pipe", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Load of a named pipe did not return")
	}
	if onLoad := log.lines("model version failed to load", "model=piped"); len(onLoad) != 2 || onLoad[1] != atStart[0] {
		t.Errorf("the log line of Load differs from start-up's:\n%q", onLoad)
	}
	if v := versionsOf(r, "ok"); v != "1" {
		t.Errorf("ok after the failed load: versions %q", v)
	}

	// the single-model layout: DIR/model.onnx a named pipe
	single := filepath.Join(t.TempDir(), "one")
	mkfifo(t, filepath.Join(single, "model.onnx"))
	r = openWithin(t, single, Options{Log: timelessLog(&log)})
	if r.Ready() || !strings.Contains(r.NotReady(), "named pipe") {
		t.Errorf("single model a named pipe: ready %v, %q", r.Ready(), r.NotReady())
	}
}
