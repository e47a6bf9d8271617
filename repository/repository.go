package repository

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quantserve/quantserve/batching"
	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/tensor"
)

// Errors callers map to HTTP statuses.
var (
	ErrModelNotFound   = errors.New("model not found")
	ErrVersionNotFound = errors.New("version not found")
	ErrInvalidName     = errors.New("invalid model name")
	ErrNoRepository    = errors.New("no model repository")
	ErrLoadFailed      = errors.New("model failed to load")
	// ErrStillInFlight reports an unload whose bounded wait ended with
	// requests still running on the model: it is no longer served, and its
	// memory is freed when they finish.
	ErrStillInFlight = errors.New("requests still in flight")
	// ErrBusy reports a load or unload that could not start in time
	// because another one on the same model was running.
	ErrBusy = errors.New("model control busy")
)

// Version is one loaded version of a model.
type Version struct {
	Model    *model.Model
	Number   int64
	LoadTime time.Duration
	ONNX     []byte // the model file, kept in builds that train (autodiff)
	// Batcher stacks concurrent requests when the model's config turns
	// dynamic batching on; nil otherwise. Its Stats are the version's
	// batching counters (executions, batch sizes, queue time).
	Batcher *batching.Batcher
}

// Run runs the version's model, through its batcher when it has one.
// Every front end runs models through it.
func (v *Version) Run(ctx context.Context, inputs map[string]*tensor.Tensor, outputs []string) (map[string]*tensor.Tensor, error) {
	if v.Batcher != nil {
		return v.Batcher.Run(ctx, inputs, outputs)
	}
	return v.Model.Run(ctx, inputs, outputs)
}

// VersionFailure records a version that could not be loaded.
type VersionFailure struct {
	Number int64
	Err    error
}

// Entry is a model as the repository knows it: its loaded versions, its
// config, and what could not be loaded.
type Entry struct {
	Name     string
	Config   *Config
	Versions []*Version // ascending by Number
	Failures []VersionFailure
	Err      error // non-nil when no version could be loaded

	guard *guard // shared by every entry served under this name
}

// guard counts the requests on a model, whichever of its entries
// (reloads) they started on, so unloading can wait for them. Unlike a
// read-write lock, a waiting unload never blocks new lookups of other
// entries, and the wait can be bounded.
type guard struct {
	mu       sync.Mutex
	n        int
	unloaded bool
	idle     chan struct{} // closed when n reaches 0 after unloading
}

// acquire counts a request in, unless the model was unloaded.
func (g *guard) acquire() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.unloaded {
		return false
	}
	g.n++
	return true
}

func (g *guard) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.n == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// unload refuses new requests and returns a channel closed once the
// requests in flight have finished, and how many there were.
func (g *guard) unload() (<-chan struct{}, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.unloaded = true
	ch := make(chan struct{})
	if g.n == 0 {
		close(ch)
	} else {
		g.idle = ch
	}
	return ch, g.n
}

// inFlight returns the number of requests running on the model.
func (g *guard) inFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// Default returns the version served when a request names none.
func (e *Entry) Default() *Version {
	if len(e.Versions) == 0 {
		return nil
	}
	if e.Config != nil && e.Config.DefaultVersion > 0 {
		for _, v := range e.Versions {
			if v.Number == e.Config.DefaultVersion {
				return v
			}
		}
	}
	return e.Versions[len(e.Versions)-1]
}

// Ready reports whether the model has a version to serve.
func (e *Entry) Ready() bool { return e.Err == nil && len(e.Versions) > 0 }

// VersionList formats the loaded versions as "1, 2".
func (e *Entry) VersionList() string {
	s := ""
	for i, v := range e.Versions {
		if i > 0 {
			s += ", "
		}
		s += strconv.FormatInt(v.Number, 10)
	}
	return s
}

// Repository holds the models being served. Lookups read an immutable
// snapshot; Load and Unload build a new one and swap it in, so a request
// finishes on the version it started with while new requests see the new
// one.
type Repository struct {
	root   string
	log    *slog.Logger
	opts   model.Options // defaults; a model's config.yaml may override them
	models atomic.Pointer[map[string]*Entry]

	swapMu  sync.Mutex               // serializes snapshot swaps
	mu      sync.Mutex               // guards the fields below
	ctl     map[string]chan struct{} // model -> its control lock (Load, Unload, AddVersion)
	pending map[string]string        // model -> LOADING or UNLOADING
	removed map[string]string        // model -> why it is not served (unloaded, failed)
}

// Options configure a repository.
type Options struct {
	Log   *slog.Logger  // nil means slog.Default()
	Model model.Options // how models compile, unless their config.yaml says otherwise
}

// Source is a model given as bytes rather than read from disk (the
// embedded default model).
type Source struct {
	Name    string
	Version int64
	ONNX    []byte
	Config  *Config // nil: none
}

func newRepository(root string, opts Options) *Repository {
	log := opts.Log
	if log == nil {
		log = slog.Default()
	}
	return &Repository{root: root, log: log, opts: opts.Model, ctl: map[string]chan struct{}{}, pending: map[string]string{}, removed: map[string]string{}}
}

// New returns a repository serving the given in-memory models.
func New(opts Options, sources ...Source) *Repository {
	r := newRepository("", opts)
	m := map[string]*Entry{}
	for _, s := range sources {
		e := m[s.Name]
		if e == nil {
			e = &Entry{Name: s.Name, Config: s.Config, guard: &guard{}}
			m[s.Name] = e
		}
		opts, err := s.Config.modelOptions(r.opts)
		if err != nil {
			e.Err = err
			continue
		}
		v, err := loadVersion(s.Name, s.Version, s.ONNX, opts, s.Config, r.log)
		if err != nil {
			e.Err = err
			continue
		}
		e.Versions = append(e.Versions, v)
	}
	r.models.Store(&m)
	return r
}

// Open loads every model under root. It fails only if root cannot be read;
// models that fail to load are logged and reported by Index.
func Open(root string, opts Options) (*Repository, error) {
	dirs, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("repository: %w", err)
	}
	r := newRepository(root, opts)
	m := map[string]*Entry{}
	for _, d := range dirs {
		if !d.IsDir() || !ValidName(d.Name()) {
			continue
		}
		e := r.loadModel(d.Name())
		if e.Err != nil {
			r.log.Error("model failed to load", "model", e.Name, "err", e.Err)
		}
		m[e.Name] = e
	}
	r.models.Store(&m)
	return r, nil
}

// ValidName reports whether name can be a model's directory name: letters,
// digits, '-', '_' and '.', not starting with '.', so nothing outside the
// repository directory can be named.
func ValidName(name string) bool {
	if name == "" || name[0] == '.' || len(name) > 255 {
		return false
	}
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

// loadModel reads DIR/name from disk: its config and the versions its
// version policy selects.
func (r *Repository) loadModel(name string) *Entry {
	e := &Entry{Name: name, guard: &guard{}}
	dir := filepath.Join(r.root, name)
	if data, err := os.ReadFile(filepath.Join(dir, "config.yaml")); err == nil {
		if e.Config, err = ParseConfig(data); err != nil {
			e.Err = err
			return e
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		e.Err = err
		return e
	}
	opts, err := e.Config.modelOptions(r.opts)
	if err != nil {
		e.Err = err
		return e
	}
	subs, err := os.ReadDir(dir)
	if err != nil {
		e.Err = err
		return e
	}
	var numbers []int64
	for _, s := range subs {
		n, err := strconv.ParseInt(s.Name(), 10, 64)
		if s.IsDir() && err == nil && n > 0 && strconv.FormatInt(n, 10) == s.Name() {
			numbers = append(numbers, n)
		}
	}
	numbers = e.Config.selectVersions(numbers)
	for _, n := range numbers {
		data, err := os.ReadFile(filepath.Join(dir, strconv.FormatInt(n, 10), "model.onnx"))
		if err == nil {
			var v *Version
			if v, err = loadVersion(name, n, data, opts, e.Config, r.log); err == nil {
				e.Versions = append(e.Versions, v)
				continue
			}
		}
		r.log.Error("model version failed to load", "model", name, "version", n, "err", err)
		e.Failures = append(e.Failures, VersionFailure{n, err})
	}
	sort.Slice(e.Versions, func(i, j int) bool { return e.Versions[i].Number < e.Versions[j].Number })
	if len(e.Versions) == 0 {
		if len(e.Failures) == 0 {
			e.Err = fmt.Errorf("no versions: expected %s/<version>/model.onnx with a positive integer version", dir)
		} else {
			var errs []error
			for _, f := range e.Failures {
				errs = append(errs, fmt.Errorf("version %d: %w", f.Number, f.Err))
			}
			e.Err = errors.Join(errs...)
		}
	}
	if e.Config != nil && e.Config.DefaultVersion > 0 && e.Err == nil {
		if !slices.ContainsFunc(e.Versions, func(v *Version) bool { return v.Number == e.Config.DefaultVersion }) {
			e.Err = fmt.Errorf("config.yaml: default_version %d is not among the loaded versions", e.Config.DefaultVersion)
		}
	}
	return e
}

func loadVersion(name string, number int64, data []byte, opts model.Options, cfg *Config, log *slog.Logger) (*Version, error) {
	start := time.Now()
	m, err := model.LoadWith(data, opts)
	if err != nil {
		return nil, err
	}
	v := &Version{Model: m, Number: number}
	if bc := cfg.Batching(); bc.Enabled() {
		probed, err := batching.Check(context.Background(), m)
		if err != nil {
			return nil, err
		}
		if !probed {
			log.Warn("max_batch_size: the model's rows could not be probed at load; batching relies on the model keeping them apart",
				"model", name, "version", number)
		}
		if v.Batcher, err = batching.New(m, bc); err != nil {
			return nil, err
		}
	}
	v.LoadTime = time.Since(start)
	if dispatch.AutodiffBuilt {
		v.ONNX = data
	}
	int8Layers := 0
	for _, l := range m.Layers {
		if l.Kernels != "float32" {
			int8Layers++
		}
	}
	attrs := []any{"model", name, "version", number, "parameters", m.Params, "opset", m.Opset,
		"int8_layers", fmt.Sprintf("%d/%d", int8Layers, len(m.Layers)), "load_time", v.LoadTime.Round(time.Microsecond)}
	if v.Batcher != nil {
		bc := v.Batcher.Config()
		attrs = append(attrs, "max_batch_size", bc.MaxBatchSize, "max_queue_delay", bc.MaxQueueDelay)
	}
	log.Info("model loaded", attrs...)
	return v, nil
}

// Get returns the named model and version ("" for the default) and a
// release function the caller must call when its request is done; Unload
// waits for it.
func (r *Repository) Get(name, version string) (*Entry, *Version, func(), error) {
	e := (*r.models.Load())[name]
	if e == nil {
		return nil, nil, nil, fmt.Errorf("%w: %q is not served here (models: %s)", ErrModelNotFound, name, r.names())
	}
	if !e.Ready() {
		return e, nil, nil, fmt.Errorf("%w: %q is not available: %v", ErrModelNotFound, name, e.Err)
	}
	var v *Version
	if version == "" {
		v = e.Default()
	} else if n, err := strconv.ParseInt(version, 10, 64); err == nil {
		for _, cand := range e.Versions {
			if cand.Number == n {
				v = cand
			}
		}
	}
	if v == nil {
		return e, nil, nil, fmt.Errorf("%w: model %q has no version %q (versions: %s)", ErrVersionNotFound, name, version, e.VersionList())
	}
	g := e.guard
	if !g.acquire() {
		return nil, nil, nil, fmt.Errorf("%w: %q was unloaded", ErrModelNotFound, name)
	}
	var once sync.Once
	return e, v, func() { once.Do(g.release) }, nil
}

func (r *Repository) names() string {
	s := ""
	for i, e := range r.Entries() {
		if i > 0 {
			s += ", "
		}
		s += e.Name
	}
	return s
}

// Entries returns every model being served, sorted by name.
func (r *Repository) Entries() []*Entry {
	m := *r.models.Load()
	out := make([]*Entry, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Ready reports whether every model in the repository has a version to
// serve (Triton's strict readiness): a model that failed to load keeps the
// server not ready, so a broken deployment does not receive traffic.
func (r *Repository) Ready() bool {
	for _, e := range *r.models.Load() {
		if !e.Ready() {
			return false
		}
	}
	return true
}
