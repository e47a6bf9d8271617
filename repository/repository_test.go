package repository

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/tensor"
)

func TestValidName(t *testing.T) {
	for _, ok := range []string{"mnist", "resnet-50", "a.b_c", "M1"} {
		if !ValidName(ok) {
			t.Errorf("ValidName(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", ".", "..", ".hidden", "a/b", `a\b`, "../etc", "a b", "é", strings.Repeat("x", 256)} {
		if ValidName(bad) {
			t.Errorf("ValidName(%q) = true", bad)
		}
	}
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte("platform: onnx_onnxv1\ndefault_version: 3\nparameters:\n  a: b\n"))
	if err != nil || c.DefaultVersion != 3 || c.Parameters["a"] != "b" {
		t.Fatalf("%+v, %v", c, err)
	}
	if c, err := ParseConfig(nil); err != nil || c.DefaultVersion != 0 {
		t.Errorf("empty config: %+v, %v", c, err)
	}
	for in, want := range map[string]string{
		"platform: tensorflow_savedmodel\n": "platform",
		"default_verison: 1\n":              "default_verison",
		"default_version: -1\n":             "positive",
		"default_version: [1]\n":            "line 1",
	} {
		if _, err := ParseConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want mention of %q", in, err, want)
		}
	}
}

func TestGetNotFound(t *testing.T) {
	r := New(Options{})
	if _, _, _, err := r.Get("x", ""); !errors.Is(err, ErrModelNotFound) {
		t.Errorf("Get on empty repository: %v", err)
	}
	if r.Ready() || r.NotReady() != "no model to serve" {
		t.Errorf("an empty repository: ready %v (%q); it has nothing to serve", r.Ready(), r.NotReady())
	}
}

func identityRepo(t *testing.T, names ...string) *Repository {
	t.Helper()
	dir := t.TempDir()
	for _, name := range names {
		p := filepath.Join(dir, name, "1")
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "model.onnx"), onnxbuild.Identity(tensor.Float32, []int{-1}), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Open(dir, Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func stateOf(r *Repository, name string) string {
	for _, e := range r.Index() {
		if e.Name == name {
			return e.State
		}
	}
	return ""
}

// TestControlLocksArePerModel: an unload waiting for a request on one
// model does not hold up loading another.
func TestControlLocksArePerModel(t *testing.T) {
	r := identityRepo(t, "a", "b")
	_, _, release, err := r.Get("a", "")
	if err != nil {
		t.Fatal(err)
	}
	unloaded := make(chan error, 1)
	go func() { unloaded <- r.Unload(context.Background(), "a") }()
	for stateOf(r, "a") != StateUnloading {
		runtime.Gosched()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Load(ctx, "b"); err != nil {
		t.Fatalf("load of b while a unloads: %v", err)
	}
	select {
	case err := <-unloaded:
		t.Fatalf("unload of a returned (%v) with a request on it in flight", err)
	default:
	}
	release()
	if err := <-unloaded; err != nil {
		t.Fatal(err)
	}
}

// TestUnloadWaitIsBounded: an unload whose wait ends with requests still
// running returns ErrStillInFlight; the model is not served from then on,
// and shows UNLOADING until the last request finishes.
func TestUnloadWaitIsBounded(t *testing.T) {
	r := identityRepo(t, "a")
	_, _, release, err := r.Get("a", "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	unloaded := make(chan error, 1)
	go func() { unloaded <- r.Unload(ctx, "a") }()
	for stateOf(r, "a") != StateUnloading {
		runtime.Gosched()
	}
	cancel() // the wait's bound has passed
	if err := <-unloaded; !errors.Is(err, ErrStillInFlight) || !strings.Contains(err.Error(), "1 requests") {
		t.Fatalf("unload with a request in flight past its bound: %v", err)
	}
	if _, _, _, err := r.Get("a", ""); !errors.Is(err, ErrModelNotFound) {
		t.Errorf("a is still served: %v", err)
	}
	if st := stateOf(r, "a"); st != StateUnloading {
		t.Errorf("state %q while its request runs", st)
	}
	release()
	release() // a second call is harmless
	for stateOf(r, "a") != StateUnavailable {
		runtime.Gosched()
	}
}

// TestControlWaitIsBounded: a load that cannot get its model's turn in
// time returns ErrBusy.
func TestControlWaitIsBounded(t *testing.T) {
	r := identityRepo(t, "a")
	_, _, release, err := r.Get("a", "")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	go r.Unload(context.Background(), "a") // waits for the request above
	for stateOf(r, "a") != StateUnloading {
		runtime.Gosched()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Load(ctx, "a"); !errors.Is(err, ErrBusy) {
		t.Errorf("load during another's unload, past its bound: %v", err)
	}
}

// TestMissingDefaultVersion: a default_version the repository does not
// hold fails the model before any version loads, so the log never says a
// version loaded and the index shows the model unavailable with the
// reason, not a version READY.
func TestMissingDefaultVersion(t *testing.T) {
	dir := t.TempDir()
	writeModel(t, filepath.Join(dir, "m", "1"))
	if err := os.WriteFile(filepath.Join(dir, "m", "config.yaml"), []byte("default_version: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	r, err := Open(dir, Options{Log: timelessLog(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	if lines := logs.lines("model loaded"); len(lines) > 0 {
		t.Errorf("a model whose default version is missing logged %q", lines)
	}
	var found bool
	for _, e := range r.Index() {
		if e.Name != "m" {
			continue
		}
		found = true
		if e.State == "READY" || !strings.Contains(e.Reason, "default_version 5") {
			t.Errorf("index entry %+v, want m unavailable for its default_version 5", e)
		}
	}
	if !found {
		t.Error("the index does not list m")
	}
}
