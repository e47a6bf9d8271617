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
	"strings"
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
	Stats    Stats  // its inferences, for the statistics extension
	// Batcher stacks concurrent requests when the model's config turns
	// dynamic batching on; nil otherwise. Its Stats are the version's
	// batching counters (executions, batch sizes, queue time).
	Batcher *batching.Batcher
	// Options are the options the model compiled with: the server's,
	// with its config's quantize keys and parameters applied.
	Options model.Options

	// instances bounds the executions running at once when the config
	// gives instance_group without dynamic batching (the batcher bounds
	// its batches itself); nil: no bound.
	instances chan struct{}
	config    *Config // the config it was loaded with: declared dims, reshape
}

// Run runs the version's model, through its batcher when it has one, in
// one of its instances when it has a number of them. Every front end runs
// models through it.
func (v *Version) Run(ctx context.Context, inputs map[string]*tensor.Tensor, outputs []string) (map[string]*tensor.Tensor, error) {
	return v.runModel(ctx, inputs, outputs, v.run)
}

func (v *Version) run(ctx context.Context, inputs map[string]*tensor.Tensor, outputs []string) (map[string]*tensor.Tensor, error) {
	if v.Batcher != nil {
		return v.Batcher.Run(ctx, inputs, outputs)
	}
	if v.instances != nil {
		select {
		case v.instances <- struct{}{}:
			defer func() { <-v.instances }()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
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
	single *singleModel // the single-model layout, or nil
	log    *slog.Logger
	opts   model.Options // defaults; a model's config.yaml may override them
	models atomic.Pointer[map[string]*Entry]

	swapMu  sync.Mutex               // serializes snapshot swaps
	mu      sync.Mutex               // guards the fields below
	ctl     map[string]chan struct{} // model -> its control lock (Load, Unload, AddVersion)
	pending map[string]string        // model -> LOADING or UNLOADING
	removed map[string]string        // model -> why it is not served (unloaded, failed)
	// starting holds the models the start-up load has not finished: the
	// repository is not ready while it holds any.
	starting    map[string]bool
	loadTimeout time.Duration
}

// DefaultLoadTimeout is the deadline of loading one model version when
// Options.LoadTimeout is 0.
const DefaultLoadTimeout = 5 * time.Minute

// Options configure a repository.
type Options struct {
	Log   *slog.Logger  // nil means slog.Default()
	Model model.Options // how models compile, unless their config.yaml says otherwise
	// ModelName names the model of a single-model layout (a directory
	// holding model.onnx, or one .onnx file); "" names it after its
	// directory (or, for a file not named model.onnx, after the file).
	ModelName string
	// LoadTimeout is the deadline of loading one version: decoding,
	// compiling, folding constants, the batching probe. A load past it
	// fails with the reason, leaving the other models serving. 0 means
	// DefaultLoadTimeout.
	LoadTimeout time.Duration
}

// singleModel is KServe's layout: one model, its file directly in the
// repository directory (or the repository is the file), served as
// version 1.
type singleModel struct {
	name string
	dir  string // holds the file and the optional config
	file string // the model's file name in dir
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
	timeout := opts.LoadTimeout
	if timeout <= 0 {
		timeout = DefaultLoadTimeout
	}
	return &Repository{root: root, log: log, opts: opts.Model, ctl: map[string]chan struct{}{}, pending: map[string]string{}, removed: map[string]string{},
		starting: map[string]bool{}, loadTimeout: timeout}
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
		opts, err := s.Config.loadOptions(r.opts)
		if err != nil {
			e.Err = err
			continue
		}
		v, err := r.loadVersion(context.Background(), s.Name, s.Version, s.ONNX, opts, s.Config, false)
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
// models that fail to load are logged and reported by Index. It is Start
// with its models loaded before it returns.
//
// root is a repository of models (root/<model>/<version>/model.onnx), or
// KServe's single-model layout: a directory holding model.onnx itself, or
// one .onnx file. A single model is served as version 1 under
// opts.ModelName, or the directory's name (a file not named model.onnx
// gives its own name, less .onnx).
func Open(root string, opts Options) (*Repository, error) {
	r, load, err := Start(root, opts)
	if err != nil {
		return nil, err
	}
	load(context.Background())
	return r, nil
}

// Start finds the models under root (as Open does) without loading them,
// so a server can listen while they load: it returns the repository with
// every model LOADING (Index), not ready (NotReady names them) and not
// yet served, and the function that loads them one after the other, each
// version under its load deadline (and ctx). A model that fails to load
// is logged, shown UNAVAILABLE with the reason, and leaves the others
// serving. Start fails only if root cannot be read.
func Start(root string, opts Options) (*Repository, func(ctx context.Context), error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, nil, fmt.Errorf("repository: %w", err)
	}
	r := newRepository(root, opts)
	var names []string
	if single, err := singleLayout(root, st, opts.ModelName); err != nil {
		return nil, nil, err
	} else if single != nil {
		r.single = single
		if opts.ModelName == "" {
			// a config.pbtxt beside the model may name it
			if c, err := readConfig(single.dir, ""); err == nil && c != nil && c.Name != "" {
				single.name = c.Name
			}
		}
		names = []string{single.name}
	} else {
		dirs, err := os.ReadDir(root)
		if err != nil {
			return nil, nil, fmt.Errorf("repository: %w", err)
		}
		for _, d := range dirs {
			if ValidName(d.Name()) && isDir(root, d) {
				names = append(names, d.Name())
			}
		}
	}
	r.models.Store(&map[string]*Entry{})
	for _, name := range names {
		r.starting[name] = true
		r.pending[name] = StateLoading
	}
	return r, func(ctx context.Context) { r.loadStartup(ctx, names) }, nil
}

// loadStartup loads the models Start found, one at a time, each under
// its model's control lock (a load or unload asked for meanwhile waits,
// or has already taken the model's place).
func (r *Repository) loadStartup(ctx context.Context, names []string) {
	for _, name := range names {
		unlock, _ := r.lockModel(context.Background(), name)
		r.mu.Lock()
		todo := r.starting[name]
		r.mu.Unlock()
		if todo {
			e := r.loadModel(ctx, name, nil)
			r.logFailure(e)
			r.swap(name, e)
			r.mu.Lock()
			delete(r.starting, name)
			delete(r.pending, name)
			r.mu.Unlock()
		}
		unlock()
	}
	if len(r.Entries()) == 0 {
		r.log.Error("no model to serve: the server is not ready", "reason", r.NotReady())
	}
}

// logFailure logs why a model serves no version, unless the failures of
// its versions were logged as they happened.
func (r *Repository) logFailure(e *Entry) {
	if e.Err != nil && len(e.Failures) == 0 {
		r.log.Error("model failed to load", "model", e.Name, "err", e.Err)
	}
}

// singleLayout recognizes the single-model layout at root: nil for a
// repository of models.
func singleLayout(root string, st os.FileInfo, name string) (*singleModel, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("repository: %w", err)
	}
	var s *singleModel
	switch {
	case !st.IsDir():
		if !strings.HasSuffix(abs, ".onnx") {
			return nil, fmt.Errorf("repository: %s is a file, but not an .onnx model: give a model repository directory or one .onnx file", root)
		}
		s = &singleModel{dir: filepath.Dir(abs), file: filepath.Base(abs)}
		if s.file == "model.onnx" {
			s.name = filepath.Base(s.dir)
		} else {
			s.name = strings.TrimSuffix(s.file, ".onnx")
		}
	default:
		if fi, err := os.Stat(filepath.Join(abs, "model.onnx")); err != nil || fi.IsDir() {
			if name != "" {
				return nil, fmt.Errorf("repository: --model-name %q names the model of a single-model layout (DIR/model.onnx, or one .onnx file), but %s holds no model.onnx: it is a repository of models, each named by its directory", name, root)
			}
			return nil, nil
		}
		s = &singleModel{name: filepath.Base(abs), dir: abs, file: "model.onnx"}
	}
	if name != "" {
		s.name = name
	}
	if !ValidName(s.name) {
		return nil, fmt.Errorf("repository: the model at %s would be named %q, which is not a valid model name (letters, digits, '-', '_' and '.', not starting with '.'): name it with --model-name", root, s.name)
	}
	return s, nil
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

// readConfig reads a model directory's config.yaml or Triton
// config.pbtxt (nil when it has neither; both is an error).
// A config.pbtxt's name must be name, unless name is "".
func readConfig(dir, name string) (*Config, error) {
	yamlData, yamlErr := readRegular(filepath.Join(dir, "config.yaml"))
	pbData, pbErr := readRegular(filepath.Join(dir, "config.pbtxt"))
	for _, err := range []error{yamlErr, pbErr} {
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	switch {
	case yamlErr == nil && pbErr == nil:
		return nil, fmt.Errorf("%s has both config.yaml and config.pbtxt: keep one", dir)
	case yamlErr == nil:
		return ParseConfig(yamlData)
	case pbErr == nil:
		return ParseTritonConfig(pbData, name)
	}
	return nil, nil
}

// loadModel reads a model from disk: its config and the versions its
// version policy selects (DIR/name/<version>/model.onnx), or the single
// model of a single-model layout. Each version loads under its deadline
// within ctx. A non-nil override is read in place of the config file.
func (r *Repository) loadModel(ctx context.Context, name string, override *Config) *Entry {
	e := &Entry{Name: name, guard: &guard{}}
	dir := filepath.Join(r.root, name)
	if r.single != nil {
		dir = r.single.dir
	}
	var err error
	confName := name
	if r.single != nil {
		confName = "" // --model-name may rename what the config names
	}
	if override != nil {
		e.Config = override
	} else if e.Config, err = readConfig(dir, confName); err != nil {
		e.Err = err
		return e
	}
	if c := e.Config; c != nil && len(c.Ignored) > 0 {
		r.log.Warn("config fields accepted but not applied: they do not change answers", "model", name, "config", c.File, "fields", strings.Join(c.Ignored, ", "))
	}
	opts, err := e.Config.loadOptions(r.opts)
	if err != nil {
		e.Err = err
		return e
	}
	file := "model.onnx"
	if e.Config != nil && e.Config.ModelFile != "" {
		file = e.Config.ModelFile
	}
	var numbers []int64
	if r.single != nil {
		numbers = []int64{1}
	} else {
		subs, err := os.ReadDir(dir)
		if err != nil {
			e.Err = err
			return e
		}
		for _, s := range subs {
			n, err := strconv.ParseInt(s.Name(), 10, 64)
			if err == nil && n > 0 && strconv.FormatInt(n, 10) == s.Name() && isDir(dir, s) {
				numbers = append(numbers, n)
			}
		}
		numbers = e.Config.selectVersions(numbers)
	}
	// A default version that is not there fails the model before any
	// version loads (and logs that it loaded).
	if c := e.Config; c != nil && c.DefaultVersion > 0 && !slices.Contains(numbers, c.DefaultVersion) {
		e.Err = fmt.Errorf("%s: default_version %d is not among the versions the policy selects (%v)", c.File, c.DefaultVersion, numbers)
		return e
	}
	for _, n := range numbers {
		path := filepath.Join(dir, strconv.FormatInt(n, 10), file)
		if r.single != nil {
			path = filepath.Join(dir, r.single.file)
		}
		data, err := readRegular(path)
		if err != nil {
			r.log.Error("model version failed to load", "model", name, "version", n, "err", err)
		} else {
			var v *Version
			if v, err = r.loadVersion(ctx, name, n, data, opts, e.Config, true); err == nil {
				e.Versions = append(e.Versions, v)
				continue
			}
		}
		e.Failures = append(e.Failures, VersionFailure{n, err})
	}
	sort.Slice(e.Versions, func(i, j int) bool { return e.Versions[i].Number < e.Versions[j].Number })
	if len(e.Versions) == 0 {
		if len(e.Failures) == 0 {
			e.Err = fmt.Errorf("no versions: expected %s/<version>/%s with a positive integer version", dir, file)
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
			e.Err = fmt.Errorf("%s: default_version %d is not among the loaded versions", e.Config.File, e.Config.DefaultVersion)
		}
	}
	return e
}

// loadVersion loads one version of a model under the load deadline
// (within ctx), checked against cfg when check is set, and logs its
// start and its outcome: one line each.
func (r *Repository) loadVersion(ctx context.Context, name string, number int64, data []byte, opts model.Options, cfg *Config, check bool) (*Version, error) {
	r.log.Info("loading model", "model", name, "version", number)
	ctx, cancel := context.WithTimeoutCause(ctx, r.loadTimeout, fmt.Errorf("the load took longer than its deadline (%v)", r.loadTimeout))
	defer cancel()
	opts, cal, err := calibrate(ctx, r.versionDir(name, number), data, opts, cfg)
	var v *Version
	if err == nil {
		v, err = buildVersion(ctx, name, number, data, opts, cfg, r.log)
	}
	if err == nil && check {
		err = cfg.checkModel(v.Model)
	}
	if err == nil {
		err = v.warmUp(ctx, cfg, r.modelDir(name))
	}
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%v: %w", context.Cause(ctx), err)
	}
	if err != nil {
		r.log.Error("model version failed to load", "model", name, "version", number, "err", err)
		return nil, err
	}
	m := v.Model
	attrs := []any{"model", name, "version", number, "parameters", m.Params, "opset", m.Opset,
		"int8_layers", fmt.Sprintf("%d/%d", model.Int8Layers(m.Layers), len(m.Layers)), "load_time", v.LoadTime.Round(time.Microsecond)}
	if cfg != nil && len(cfg.Warmup) > 0 {
		attrs = append(attrs, "warmup_samples", len(cfg.Warmup))
	}
	if v.Batcher != nil {
		bc := v.Batcher.Config()
		attrs = append(attrs, "max_batch_size", bc.MaxBatchSize, "max_queue_delay", bc.MaxQueueDelay, "instances", bc.Instances)
	} else if v.instances != nil {
		attrs = append(attrs, "instances", cap(v.instances))
	}
	if cal != nil {
		attrs = append(attrs, "calibration", CalibrationStatic, "calibration_sets", cal.sets,
			"static_layers", fmt.Sprintf("%d/%d", staticLayers(m.Layers), cal.int8), "calibration_time", cal.took.Round(time.Microsecond))
	}
	if len(m.Unfolded) > 0 {
		attrs = append(attrs, "unfolded", m.Unfolded)
	}
	r.log.Info("model loaded", attrs...)
	return v, nil
}

// buildVersion compiles a version and sets up its batcher or instances.
func buildVersion(ctx context.Context, name string, number int64, data []byte, opts model.Options, cfg *Config, log *slog.Logger) (*Version, error) {
	start := time.Now()
	m, err := model.LoadContext(ctx, data, opts)
	if err != nil {
		return nil, err
	}
	v := &Version{Model: m, Number: number, config: cfg, Options: opts}
	if bc := cfg.Batching(); bc.Enabled() {
		probed, err := batching.Check(ctx, m)
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
	} else if n := cfg.Instances(); n > 0 {
		v.instances = make(chan struct{}, n)
	}
	v.LoadTime = time.Since(start)
	if dispatch.AutodiffBuilt {
		v.ONNX = data
	}
	return v, nil
}

// Get returns the named model and version ("" for the default) and a
// release function the caller must call when its request is done; Unload
// waits for it.
func (r *Repository) Get(name, version string) (*Entry, *Version, func(), error) {
	e := (*r.models.Load())[name]
	if e == nil {
		r.mu.Lock()
		loading := r.starting[name]
		r.mu.Unlock()
		if loading {
			return nil, nil, nil, fmt.Errorf("%w: %q is still loading", ErrModelNotFound, name)
		}
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

// Ready reports whether the repository serves a model and every model in
// it has a version to serve (Triton's strict readiness): a model that
// failed to load, or a repository with nothing to serve, keeps the server
// not ready, so a broken deployment does not receive traffic.
func (r *Repository) Ready() bool { return r.NotReady() == "" }

// NotReady says why the repository is not ready, "" when it is.
func (r *Repository) NotReady() string {
	r.mu.Lock()
	var loading []string
	for name := range r.starting {
		loading = append(loading, name)
	}
	r.mu.Unlock()
	sort.Strings(loading)
	entries := r.Entries()
	if len(entries) == 0 && len(loading) == 0 {
		if r.root == "" {
			return "no model to serve"
		}
		return fmt.Sprintf("no model to serve: %s holds none (expected %s/<model>/<version>/model.onnx, %s/model.onnx, or an .onnx file as the repository)", r.root, r.root, r.root)
	}
	var why []string
	if len(loading) > 0 {
		why = append(why, fmt.Sprintf("models still loading: %q", loading))
	}
	for _, e := range entries {
		if !e.Ready() {
			why = append(why, fmt.Sprintf("model %q is not available: %v", e.Name, e.Err))
		}
	}
	return strings.Join(why, "; ")
}
