package repository

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/tensor"
)

// notify is a log handler that also sends on a channel each record whose
// message and model are the ones it waits for.
type notify struct {
	slog.Handler
	msg, model string
	seen       chan struct{}
}

func (h *notify) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "model" && a.Value.String() == h.model {
				h.seen <- struct{}{}
			}
			return true
		})
	}
	return h.Handler.Handle(ctx, r)
}

func (h *notify) WithAttrs(as []slog.Attr) slog.Handler {
	return &notify{h.Handler.WithAttrs(as), h.msg, h.model, h.seen}
}

// hostileRepo lays out ok (an identity model), broken (not ONNX) and slow
// (a model whose batching probe at load never ends on its own).
func hostileRepo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	writeModel(t, filepath.Join(root, "ok", "1"))
	files := map[string][]byte{
		"broken/1/model.onnx": []byte("not a model"),
		"slow/1/model.onnx":   onnxbuild.EndlessLoop().Bytes(),
		"slow/config.yaml":    []byte("max_batch_size: 4\ndynamic_batching: {}\n"),
	}
	for name, data := range files {
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

func indexOf(r *Repository) map[string]IndexEntry {
	m := map[string]IndexEntry{}
	for _, e := range r.Index() {
		m[e.Name] = e
	}
	return m
}

// TestStartServesWhileLoading: Start finds the models without loading
// them (LOADING, not ready, not served); while one model's load runs,
// those loaded before it serve and the failed one shows why; a load
// stopped by its context fails with the reason and leaves the rest
// serving.
func TestStartServesWhileLoading(t *testing.T) {
	var log lockedBuffer
	h := &notify{Handler: timelessLog(&log).Handler(), msg: "loading model", model: "slow", seen: make(chan struct{}, 1)}
	r, load, err := Start(hostileRepo(t), Options{Log: slog.New(h)})
	if err != nil {
		t.Fatal(err)
	}
	for name, e := range indexOf(r) {
		if e.State != StateLoading {
			t.Errorf("before loading, %s is %s, want %s", name, e.State, StateLoading)
		}
	}
	if why := r.NotReady(); !strings.Contains(why, `models still loading: ["broken" "ok" "slow"]`) {
		t.Errorf("before loading, NotReady = %q", why)
	}
	if _, _, _, err := r.Get("ok", ""); !errors.Is(err, ErrModelNotFound) || !strings.Contains(err.Error(), "still loading") {
		t.Errorf("Get before loading: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { load(ctx); close(done) }()
	<-h.seen // broken and ok are done; slow's probe runs until cancelled
	_, v, release, err := r.Get("ok", "")
	if err != nil {
		t.Fatalf("ok while slow loads: %v", err)
	}
	out, err := v.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.From([]int{2}, []float32{1, 2})}, nil)
	release()
	if err != nil || !slices.Equal(out["y"].Data.([]float32), []float32{1, 2}) {
		t.Errorf("ok while slow loads: %v %v", out, err)
	}
	why := r.NotReady()
	if !strings.Contains(why, `models still loading: ["slow"]`) || !strings.Contains(why, `model "broken" is not available`) {
		t.Errorf("while slow loads, NotReady = %q", why)
	}
	idx := indexOf(r)
	if idx["slow"].State != StateLoading || idx["ok"].State != StateReady || idx["broken"].State != StateUnavailable || idx["broken"].Reason == "" {
		t.Errorf("index while slow loads: %+v", idx)
	}
	cancel()
	<-done
	idx = indexOf(r)
	if e := idx["slow"]; e.State != StateUnavailable || !strings.Contains(e.Reason, "context canceled") {
		t.Errorf("slow after its load was cancelled: %+v", e)
	}
	if why := r.NotReady(); strings.Contains(why, "still loading") || !strings.Contains(why, `model "slow" is not available`) {
		t.Errorf("after loading, NotReady = %q", why)
	}
	// One start line and one outcome line per version, never both outcomes.
	for _, name := range []string{"ok", "broken", "slow"} {
		starts := log.lines("loading model", "model="+name+" ", "version=1")
		loaded := log.lines("model loaded", "model="+name+" ")
		failed := log.lines("model version failed to load", "model="+name+" ", "version=1")
		if len(starts) != 1 || len(loaded)+len(failed) != 1 || (name == "ok") != (len(loaded) == 1) {
			t.Errorf("%s: %d start lines, %d loaded, %d failed:\n%s", name, len(starts), len(loaded), len(failed), log.b.String())
		}
	}
}

// TestLoadDeadline: a version whose load outlasts the load timeout fails
// with the reason, at start-up and through Load, and the other models
// keep serving.
func TestLoadDeadline(t *testing.T) {
	var log lockedBuffer
	r := openWithin(t, hostileRepo(t), Options{Log: timelessLog(&log), LoadTimeout: 100 * time.Millisecond})
	check := func(when string) {
		t.Helper()
		e := indexOf(r)["slow"]
		if e.State != StateUnavailable || !strings.Contains(e.Reason, "the load took longer than its deadline (100ms)") {
			t.Errorf("%s: slow is %+v, want UNAVAILABLE past its deadline", when, e)
		}
		if versionsOf(r, "ok") != "1" {
			t.Errorf("%s: ok serves versions %q", when, versionsOf(r, "ok"))
		}
	}
	check("at start-up")
	err := r.Load(context.Background(), "slow")
	if !errors.Is(err, ErrLoadFailed) || !strings.Contains(err.Error(), "deadline (100ms)") {
		t.Errorf("Load past the deadline: %v", err)
	}
	check("after Load")
	if n := len(log.lines("model version failed to load", "model=slow", "deadline")); n != 2 {
		t.Errorf("%d lines say slow's load passed its deadline, want 2:\n%s", n, log.b.String())
	}
}

// TestControlBeforeStartupLoad: a model loaded or unloaded through the API
// before the start-up load reaches it is not loaded again by start-up.
func TestControlBeforeStartupLoad(t *testing.T) {
	var log lockedBuffer
	r, load, err := Start(hostileRepo(t), Options{Log: timelessLog(&log), LoadTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := r.Load(ctx, "ok"); err != nil {
		t.Fatal(err)
	}
	if err := r.Unload(ctx, "slow"); err != nil {
		t.Fatalf("Unload of a model start-up has yet to load: %v", err)
	}
	if why := r.NotReady(); !strings.Contains(why, `models still loading: ["broken"]`) {
		t.Errorf("NotReady = %q", why)
	}
	load(ctx)
	if n := len(log.lines("loading model", "model=ok ")); n != 1 {
		t.Errorf("ok loaded %d times, want once:\n%s", n, log.b.String())
	}
	if n := len(log.lines("loading model", "model=slow ")); n != 0 {
		t.Errorf("slow, unloaded, was loaded %d times:\n%s", n, log.b.String())
	}
	if e := indexOf(r)["slow"]; e.State != StateUnavailable || e.Reason != "unloaded" {
		t.Errorf("slow: %+v", e)
	}
	if versionsOf(r, "ok") != "1" {
		t.Errorf("ok serves %q", versionsOf(r, "ok"))
	}
}
