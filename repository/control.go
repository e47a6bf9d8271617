package repository

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// Model states, as Triton's repository index names them.
const (
	StateReady       = "READY"
	StateUnavailable = "UNAVAILABLE"
	StateLoading     = "LOADING"
	StateUnloading   = "UNLOADING"
)

// IndexEntry is one row of the repository index.
type IndexEntry struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	State   string `json:"state"`
	Reason  string `json:"reason,omitempty"`
}

// Index lists every model of the repository: each loaded version READY,
// each version that failed UNAVAILABLE with its reason, models on disk
// that are not served UNAVAILABLE, and models being loaded or unloaded.
func (r *Repository) Index() []IndexEntry {
	r.mu.Lock()
	pending := maps(r.pending)
	removed := maps(r.removed)
	r.mu.Unlock()
	out := []IndexEntry{}
	seen := map[string]bool{}
	add := func(name string, rows ...IndexEntry) {
		seen[name] = true
		if st, ok := pending[name]; ok {
			out = append(out, IndexEntry{Name: name, State: st})
			return
		}
		out = append(out, rows...)
	}
	for _, e := range r.Entries() {
		var rows []IndexEntry
		for _, v := range e.Versions {
			rows = append(rows, IndexEntry{Name: e.Name, Version: strconv.FormatInt(v.Number, 10), State: StateReady})
		}
		for _, f := range e.Failures {
			rows = append(rows, IndexEntry{Name: e.Name, Version: strconv.FormatInt(f.Number, 10), State: StateUnavailable, Reason: f.Err.Error()})
		}
		if len(rows) == 0 && e.Err != nil {
			rows = append(rows, IndexEntry{Name: e.Name, State: StateUnavailable, Reason: e.Err.Error()})
		}
		add(e.Name, rows...)
	}
	for name, why := range removed {
		if !seen[name] {
			add(name, IndexEntry{Name: name, State: StateUnavailable, Reason: why})
		}
	}
	for name, st := range pending {
		if !seen[name] {
			add(name, IndexEntry{Name: name, State: st})
		}
	}
	if r.root != "" && r.single == nil {
		if dirs, err := os.ReadDir(r.root); err == nil {
			for _, d := range dirs {
				if ValidName(d.Name()) && !seen[d.Name()] && isDir(r.root, d) {
					add(d.Name(), IndexEntry{Name: d.Name(), State: StateUnavailable, Reason: "not loaded"})
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func maps(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (r *Repository) setPending(name, state string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if state == "" {
		delete(r.pending, name)
	} else {
		r.pending[name] = state
	}
}

// lockModel takes the control lock of one model (loads, unloads and new
// versions of other models go on meanwhile), waiting at most until ctx
// ends. The caller must call the returned function.
func (r *Repository) lockModel(ctx context.Context, name string) (func(), error) {
	r.mu.Lock()
	ch := r.ctl[name]
	if ch == nil {
		ch = make(chan struct{}, 1)
		r.ctl[name] = ch
	}
	r.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: another load or unload of %q is still running (%v)", ErrBusy, name, context.Cause(ctx))
	}
}

// swap replaces (or, with e nil, removes) a model in a new snapshot.
func (r *Repository) swap(name string, e *Entry) {
	r.swapMu.Lock()
	defer r.swapMu.Unlock()
	old := *r.models.Load()
	m := make(map[string]*Entry, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	if e == nil {
		delete(m, name)
	} else {
		m[name] = e
	}
	r.models.Store(&m)
}

// Load (re)loads a model from the repository directory: every version its
// version policy selects. Requests keep running on the versions they
// started with; new requests see the new versions once all are loaded. If
// no version loads, the versions being served stay served and the error
// (also in Index) is returned wrapping ErrLoadFailed. Loads and unloads of
// one model run one at a time; ctx bounds the wait for the model's turn
// (ErrBusy), not the load itself: each version loads under the load
// deadline (Options.LoadTimeout).
func (r *Repository) Load(ctx context.Context, name string) error {
	return r.LoadWith(ctx, name, nil)
}

// LoadWith is Load with cfg read in place of the model's config file, for
// this load only (Triton's load-time config override, see
// ParseConfigJSON); a later Load reads the file again. A nil cfg reads
// the file.
func (r *Repository) LoadWith(ctx context.Context, name string, cfg *Config) error {
	if !ValidName(name) {
		return fmt.Errorf("%w: %q (letters, digits, '-', '_' and '.', not starting with '.')", ErrInvalidName, name)
	}
	if r.root == "" {
		return fmt.Errorf("%w: the server was started without --model-repository, so there is nothing to load from", ErrNoRepository)
	}
	if r.single != nil {
		if name != r.single.name {
			return fmt.Errorf("%w: the repository is the single model %q", ErrModelNotFound, r.single.name)
		}
	} else if st, err := os.Stat(filepath.Join(r.root, name)); err != nil || !st.IsDir() {
		return fmt.Errorf("%w: no directory %q in the model repository", ErrModelNotFound, name)
	}
	unlock, err := r.lockModel(ctx, name)
	if err != nil {
		return err
	}
	defer unlock()
	r.setPending(name, StateLoading)
	defer r.setPending(name, "")
	e := r.loadModel(context.WithoutCancel(ctx), name, cfg)
	r.dropStartup(name) // loaded here: the start-up load skips it
	old := (*r.models.Load())[name]
	if old != nil {
		e.guard = old.guard // Unload waits for requests on either
	}
	if e.Err != nil {
		r.logFailure(e)
		if old != nil && old.Ready() {
			// keep serving what we had; record the failure beside it
			kept := &Entry{Name: old.Name, Config: old.Config, Versions: old.Versions, Failures: e.Failures, guard: old.guard}
			if len(kept.Failures) == 0 {
				kept.Failures = []VersionFailure{{0, e.Err}}
			}
			r.swap(name, kept)
		} else {
			r.swap(name, e)
		}
		return fmt.Errorf("%w: %q: %v", ErrLoadFailed, name, e.Err)
	}
	r.swap(name, e)
	r.mu.Lock()
	delete(r.removed, name)
	r.mu.Unlock()
	if len(e.Failures) > 0 {
		// the versions that loaded serve; say which did not
		var msg string
		for i, f := range e.Failures {
			if i > 0 {
				msg += "; "
			}
			msg += fmt.Sprintf("version %d: %v", f.Number, f.Err)
		}
		return fmt.Errorf("%w: %q serves versions %s, but %s", ErrLoadFailed, name, e.VersionList(), msg)
	}
	return nil
}

// Unload stops serving a model: new requests get 404 at once, then Unload
// waits for the requests in flight to finish, after which the model's
// memory is the collector's. The wait ends with ctx: the model is then no
// longer served either way, Index shows it UNLOADING until the last
// request finishes, and the error wraps ErrStillInFlight.
func (r *Repository) Unload(ctx context.Context, name string) error {
	if !ValidName(name) {
		return fmt.Errorf("%w: %q", ErrInvalidName, name)
	}
	unlock, err := r.lockModel(ctx, name)
	if err != nil {
		return err
	}
	defer unlock()
	e := (*r.models.Load())[name]
	if e == nil {
		if r.dropStartup(name) {
			r.mu.Lock()
			r.removed[name] = "unloaded"
			r.mu.Unlock()
			r.log.Info("model unloaded before its start-up load", "model", name)
			return nil
		}
		return fmt.Errorf("%w: %q is not loaded", ErrModelNotFound, name)
	}
	// Refuse new requests first (out of the map, the guard closed), then
	// show UNLOADING: whoever sees that state can no longer get the model.
	r.swap(name, nil)
	idle, _ := e.guard.unload()
	r.mu.Lock()
	r.pending[name] = StateUnloading
	r.removed[name] = "unloaded"
	r.mu.Unlock()
	select {
	case <-idle:
		r.setPending(name, "")
		r.log.Info("model unloaded", "model", name)
		return nil
	case <-ctx.Done():
	}
	n := e.guard.inFlight()
	go func() {
		<-idle
		r.clearPending(name, StateUnloading)
		r.log.Info("model unloaded: the last request on it finished", "model", name)
	}()
	r.log.Warn("model no longer served; requests still running on it", "model", name, "in_flight", n)
	return fmt.Errorf("%w: %q is no longer served, but %d requests on it were still running when the wait ended (%v); its memory is freed when they finish", ErrStillInFlight, name, n, context.Cause(ctx))
}

// dropStartup takes a model out of the start-up load (a load or unload
// asked for it first), reporting whether it was still to load.
func (r *Repository) dropStartup(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.starting[name] {
		return false
	}
	delete(r.starting, name)
	if r.pending[name] == StateLoading {
		delete(r.pending, name)
	}
	return true
}

// clearPending clears a model's pending state if it is still state (a
// later load may have replaced it).
func (r *Repository) clearPending(name, state string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending[name] == state {
		delete(r.pending, name)
	}
}

// AddVersion adds a model file as the model's next version (one above the
// highest it serves). With a repository directory the file is written as
// DIR/<model>/<version>/model.onnx first (atomically), so other replicas
// pick it up through load; without one the version lives in memory. The
// versions being served keep serving until the new one is ready.
func (r *Repository) AddVersion(ctx context.Context, name string, data []byte) (int64, error) {
	unlock, err := r.lockModel(ctx, name)
	if err != nil {
		return 0, err
	}
	defer unlock()
	old := (*r.models.Load())[name]
	if old == nil || !old.Ready() {
		return 0, fmt.Errorf("%w: %q is not served", ErrModelNotFound, name)
	}
	number := old.Versions[len(old.Versions)-1].Number + 1
	opts, err := old.Config.modelOptions(r.opts)
	if err != nil {
		return 0, err
	}
	if r.root != "" && r.single == nil {
		dir := filepath.Join(r.root, name, strconv.FormatInt(number, 10))
		if err := writeAtomic(dir, data); err != nil {
			os.Remove(dir) // only if empty: leave no version directory without a model
			r.log.Warn("new version not written to the repository; serving it from memory", "model", name, "version", number, "err", err)
		}
	}
	v, err := r.loadVersion(context.WithoutCancel(ctx), name, number, data, opts, old.Config, false)
	if err != nil {
		return 0, fmt.Errorf("%w: the new version: %v", ErrLoadFailed, err)
	}
	e := &Entry{Name: name, Config: old.Config, Versions: append(append([]*Version(nil), old.Versions...), v), guard: old.guard}
	r.swap(name, e)
	return number, nil
}

func writeAtomic(dir string, data []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".model-*.onnx")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, "model.onnx"))
}
