// Command serve runs the quantserve model server.
//
//	serve [--addr :8000] [--model-repository DIR|FILE.onnx] [--model-name NAME] [--max-body-bytes N] [--log-level info]
//	      [--kernels auto|amx|avx512vnni|avx512|avxvnni|avx2|i8mm|sdot|neon|generic] [--threads N] [--spin D] [--quantize int8|none]
//	      [--quantize-scheme per_channel|per_block|per_tensor] [--admin-token T]
//	      [--max-inflight N] [--max-inflight-bytes SIZE] [--max-request-bytes SIZE] [--request-timeout D]
//	      [--memory-limit SIZE] [--gc-min-heap SIZE] [--drain-delay D] [--shutdown-timeout D]
//	      [--grpc-addr :8001|off] [--grpc-max-streams N] [--log-format text|json] [--cors-origins O,...]
//	      [--tls-cert FILE --tls-key FILE] [--model-load-timeout D]
//
// It serves the Open Inference Protocol over HTTP on --addr and over gRPC
// on --grpc-addr, both with TLS when given a certificate. It listens
// before it loads the repository's models: live answers at once, ready
// answers 503 naming the models still loading (and those that failed)
// until every one has loaded. Each version loads under
// --model-load-timeout; one that fails or times out is logged and shown
// UNAVAILABLE in the repository index, and the others serve. Request spans
// are exported over OTLP when the standard OTEL_EXPORTER_OTLP_* variables
// name an endpoint.
//
// On SIGTERM or SIGINT it drains: readiness turns 503 at once and requests,
// on new connections too, are still served for --drain-delay (while load
// balancers take the server out of rotation); then new connections are
// refused, those already accepted are answered, idle connections close,
// and requests in flight get --shutdown-timeout to finish. It exits 0 when
// they all did, 1 (and says so in the log) when the timeout cut some
// short. A second signal exits at once.
//
// Every flag has an environment twin (QUANTSERVE_ADDR, ...); a flag given on
// the command line wins. With no repository it serves the embedded "mnist"
// model.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/quantserve/quantserve/api"
	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/repository"
	"github.com/quantserve/quantserve/telemetry"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

type config struct {
	addr           string
	repoDir        string
	modelName      string
	maxBodyBytes   int64
	logLevel       string
	kernels        string
	threads        int
	spin           time.Duration
	quantize       string
	quantizeScheme string
	adminToken     string
	maxInFlight    int
	requestTimeout time.Duration
	maxInflightMem byteSize
	maxRequestMem  byteSize
	memoryLimit    byteSize
	gcMinHeap      byteSize
	drainDelay     time.Duration
	shutdownTime   time.Duration
	showVersion    bool
	grpcAddr       string
	grpcMaxStreams int
	logFormat      string
	requestLogRate int
	corsOrigins    string
	cors           []string // corsOrigins, parsed
	tlsCert        string
	tlsKey         string
	loadTimeout    time.Duration
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}

// parseConfig reads flags, falling back to QUANTSERVE_* environment
// variables for flags not given.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := newFlagSet(c)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // --help: run prints the help; an error: the hint below
	set := map[string]bool{}
	if err := fs.Parse(args); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "usage: serve [flags]; serve --help lists them by group")
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		env := envName(f.Name)
		if v := getenv(env); v != "" && !set[f.Name] && f.Name != "version" {
			if e := f.Value.Set(v); e != nil && err == nil {
				err = fmt.Errorf("%s=%q: %v", env, v, e)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if c.maxBodyBytes <= 0 {
		return nil, fmt.Errorf("--max-body-bytes must be positive")
	}
	if c.maxInFlight < 1 || c.requestTimeout <= 0 {
		return nil, fmt.Errorf("--max-inflight and --request-timeout must be positive")
	}
	if c.loadTimeout <= 0 {
		return nil, fmt.Errorf("--model-load-timeout must be positive")
	}
	if c.drainDelay < 0 || c.shutdownTime <= 0 {
		return nil, fmt.Errorf("--drain-delay must not be negative and --shutdown-timeout must be positive")
	}
	if c.threads < 1 {
		return nil, fmt.Errorf("--threads must be at least 1")
	}
	if c.spin < 0 {
		return nil, fmt.Errorf("--spin must not be negative (0: workers park at once)")
	}
	if c.grpcMaxStreams < 1 {
		return nil, fmt.Errorf("--grpc-max-streams must be at least 1")
	}
	if c.quantize != "int8" && c.quantize != "none" {
		return nil, fmt.Errorf("--quantize %q: int8 or none", c.quantize)
	}
	if _, err := quant.ParseScheme(c.quantizeScheme); err != nil {
		return nil, fmt.Errorf("--quantize-scheme: %v", err)
	}
	if c.logFormat != "text" && c.logFormat != "json" {
		return nil, fmt.Errorf("--log-format %q: json or text", c.logFormat)
	}
	if c.requestLogRate < 0 {
		return nil, fmt.Errorf("--request-log-rate must not be negative (0 logs every request)")
	}
	if c.cors, err = api.ParseCORSOrigins(c.corsOrigins); err != nil {
		return nil, fmt.Errorf("--cors-origins: %v", err)
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return nil, fmt.Errorf("--tls-cert and --tls-key go together")
	}
	return c, nil
}

// newFlagSet defines serve's flags on c; usage.go prints them by group.
func newFlagSet(c *config) *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&c.addr, "addr", ":8000", "listen address (env QUANTSERVE_ADDR)")
	fs.StringVar(&c.repoDir, "model-repository", "", "model repository: DIR/<model>/<version>/model.onnx, or one model as DIR/model.onnx or a .onnx file; empty serves the embedded mnist model (env QUANTSERVE_MODEL_REPOSITORY)")
	fs.StringVar(&c.modelName, "model-name", "", "name of the model of a single-model repository (DIR/model.onnx or a .onnx file); default: its directory's name (env QUANTSERVE_MODEL_NAME)")
	fs.Int64Var(&c.maxBodyBytes, "max-body-bytes", api.DefaultMaxBodyBytes, "largest accepted request body in bytes (env QUANTSERVE_MAX_BODY_BYTES)")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error (env QUANTSERVE_LOG_LEVEL)")
	fs.StringVar(&c.kernels, "kernels", "auto", "kernel table: auto, "+strings.Join(dispatch.Names(), ", ")+" (env QUANTSERVE_KERNELS)")
	fs.IntVar(&c.threads, "threads", runtime.GOMAXPROCS(0), "cores one operator (a product, a convolution, an element-wise loop) may use (env QUANTSERVE_THREADS)")
	fs.DurationVar(&c.spin, "spin", gemm.DefaultSpin, "how long a worker of --threads looks for its next task after one before it parks (yielding the core meanwhile; the OS counts it busy); 0 parks at once, for hosts shared with other work (env QUANTSERVE_SPIN)")
	fs.StringVar(&c.quantize, "quantize", "int8", "weights of MatMul/Gemm and Conv layers: int8 or none (env QUANTSERVE_QUANTIZE)")
	fs.StringVar(&c.quantizeScheme, "quantize-scheme", "per_channel", "int8 weight scales: per_channel, per_block or per_tensor (env QUANTSERVE_QUANTIZE_SCHEME)")
	fs.StringVar(&c.adminToken, "admin-token", "", "bearer token that enables POST /v2/repository/models/{m}/load and /unload; empty disables them (env QUANTSERVE_ADMIN_TOKEN)")
	fs.IntVar(&c.maxInFlight, "max-inflight", api.DefaultMaxInFlight, "work requests (infer, grad, train, tensor ops) in flight at once; more get 503 with Retry-After (env QUANTSERVE_MAX_INFLIGHT)")
	fs.DurationVar(&c.requestTimeout, "request-timeout", api.DefaultRequestTimeout, "deadline of a work request's computation (504 past it), and of receiving its body (408) and sending its answer (env QUANTSERVE_REQUEST_TIMEOUT)")
	fs.Var(&c.maxInflightMem, "max-inflight-bytes", "memory that work requests in flight may hold (bodies, decoded tensors, the values models make for them, answers), e.g. 512MiB; more get 503 with Retry-After; 0 means half of the memory limit, or 1GiB without one (env QUANTSERVE_MAX_INFLIGHT_BYTES)")
	fs.Var(&c.maxRequestMem, "max-request-bytes", "memory one work request may hold of --max-inflight-bytes, e.g. 256MiB; a request needing more gets 413 naming the node; 0 means all of it (env QUANTSERVE_MAX_REQUEST_BYTES)")
	fs.Var(&c.memoryLimit, "memory-limit", "soft memory limit of the Go runtime (debug.SetMemoryLimit), e.g. 2GiB; 0 means GOMEMLIMIT if set, else 90% of the cgroup's memory limit if any (env QUANTSERVE_MEMORY_LIMIT)")
	c.gcMinHeap = DefaultGCMinHeap
	fs.Var(&c.gcMinHeap, "gc-min-heap", "heap size below which the garbage collector is not started: GOGC is raised while the live heap is small (at most a quarter of the memory limit); 0 keeps GOGC as set (env QUANTSERVE_GC_MIN_HEAP)")
	fs.DurationVar(&c.drainDelay, "drain-delay", 5*time.Second, "on SIGTERM/SIGINT, how long readiness reports 503 while requests are still served, before the listener closes (env QUANTSERVE_DRAIN_DELAY)")
	fs.DurationVar(&c.shutdownTime, "shutdown-timeout", 30*time.Second, "after the drain delay, how long requests in flight get to finish before they are cut short (env QUANTSERVE_SHUTDOWN_TIMEOUT)")
	fs.StringVar(&c.grpcAddr, "grpc-addr", ":8001", "gRPC listen address (Open Inference Protocol, grpc.health.v1); off disables gRPC (env QUANTSERVE_GRPC_ADDR)")
	fs.IntVar(&c.grpcMaxStreams, "grpc-max-streams", api.DefaultGRPCMaxStreams, "gRPC calls one connection may have open at once (HTTP/2 MAX_CONCURRENT_STREAMS); a client waits for one to end before starting more (env QUANTSERVE_GRPC_MAX_STREAMS)")
	fs.StringVar(&c.logFormat, "log-format", "text", "log lines as text (key=value) or json (env QUANTSERVE_LOG_FORMAT)")
	fs.IntVar(&c.requestLogRate, "request-log-rate", api.DefaultRequestLogRate, "request lines logged a second at most for requests that succeed (a failed request's line always is; the next one logged after some were left out counts them: unlogged=N); 0 logs every request (env QUANTSERVE_REQUEST_LOG_RATE)")
	fs.StringVar(&c.corsOrigins, "cors-origins", "", "comma-separated origins browsers may call from (https://app.example.com), or *; empty disables CORS (env QUANTSERVE_CORS_ORIGINS)")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "PEM certificate (chain) file: serve HTTPS and gRPC over TLS; reread when it changes (env QUANTSERVE_TLS_CERT)")
	fs.StringVar(&c.tlsKey, "tls-key", "", "PEM private key file of --tls-cert (env QUANTSERVE_TLS_KEY)")
	fs.DurationVar(&c.loadTimeout, "model-load-timeout", repository.DefaultLoadTimeout, "deadline of loading one model version (decoding, compiling, folding constants, the batching probe, warm-up); a load past it fails and the other models serve (env QUANTSERVE_MODEL_LOAD_TIMEOUT)")
	fs.BoolVar(&c.showVersion, "version", false, "print the version, the Go version and the kernel table this CPU would use, and exit")
	return fs
}

// run starts the server and blocks until ctx is done or a signal arrives.
// When ready is non-nil the bound address is sent on it once listening.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, ready chan<- string) error {
	c, err := parseConfig(args, getenv, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return printHelp(stdout, newFlagSet(&config{}))
		}
		return err
	}
	table, err := dispatch.Select(c.kernels)
	if err != nil {
		return fmt.Errorf("--kernels: %v", err)
	}
	if c.showVersion {
		fmt.Fprintf(stdout, "quantserve %s (%s)\nkernels: %v on %s\n", buildVersion(), runtimeInfo(), table, dispatch.CPU())
		return nil
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %v", err)
	}
	log, flushLog, err := newLogger(c.logFormat, level, stderr)
	if err != nil {
		return err
	}
	defer flushLog()
	slog.SetDefault(log)

	log.Info("kernels", "table", table.String(), "cpu", dispatch.CPU(), "threads", c.threads, "spin", c.spin, "quantize", c.quantize, "scheme", c.quantizeScheme)
	scheme, _ := quant.ParseScheme(c.quantizeScheme)
	exec := gemm.NewSpin(table, c.threads, c.spin)
	opts := repository.Options{Log: log, ModelName: c.modelName, LoadTimeout: c.loadTimeout, Model: model.Options{
		Exec:     exec,
		Quantize: c.quantize == "int8",
		Scheme:   scheme,
	}}
	// The repository's models load once the listeners are open (loadModels).
	var repo *repository.Repository
	loadModels := func(context.Context) {}
	if c.repoDir == "" {
		if c.modelName != "" {
			return fmt.Errorf("--model-name names the model of a --model-repository holding one model")
		}
		log.Info("no --model-repository: serving the embedded model", "model", defaultmodel.Name)
		repo = repository.New(opts, repository.Source{Name: defaultmodel.Name, Version: 1, ONNX: defaultmodel.ONNX})
	} else if repo, loadModels, err = repository.Start(c.repoDir, opts); err != nil {
		return err
	}
	memLimit, memSource := applyMemoryLimit(int64(c.memoryLimit), getenv)
	budget := int64(c.maxInflightMem)
	if budget == 0 {
		budget = api.DefaultMaxInflightBytes
		if memLimit > 0 {
			budget = memLimit / 2
		}
	}
	gcMin := int64(c.gcMinHeap)
	if memLimit > 0 {
		gcMin = min(gcMin, memLimit/4)
	}
	setHeapFloor(uint64(gcMin))
	perRequest := int64(c.maxRequestMem)
	if perRequest == 0 || perRequest > budget {
		perRequest = budget
	}
	log.Info("memory", "limit", formatSize(memLimit), "limit_from", memSource, "max_inflight_bytes", formatSize(budget), "max_request_bytes", formatSize(perRequest), "gc_min_heap", formatSize(gcMin))
	if budget < c.maxBodyBytes {
		log.Warn("--max-inflight-bytes is below --max-body-bytes: bodies between the two are always refused", "max_inflight_bytes", budget, "max_body_bytes", c.maxBodyBytes)
	}
	tlsCfg, err := tlsConfig(c.tlsCert, c.tlsKey, log)
	if err != nil {
		return err
	}
	tracing, err := telemetry.NewTracing(ctx, getenv, buildVersion())
	if err != nil {
		return err
	}
	defer func() {
		flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tracing.Shutdown(flushCtx); err != nil {
			log.Warn("tracing: spans not exported at exit", "err", err)
		}
	}()
	log.Info("tracing", "export", tracing.Exporter)
	ln, err := listenTCP(c.addr)
	if err != nil {
		return err
	}
	grpcLn, err := listenGRPC(c.grpcAddr)
	if err != nil {
		ln.Close()
		return err
	}
	httpLn := newDrainListener(ln)
	var grpcDrain *drainListener
	if grpcLn != nil {
		grpcDrain = newDrainListener(grpcLn)
	}
	var draining atomic.Bool
	baseCtx, cancelRequests := context.WithCancel(context.Background())
	defer cancelRequests()
	conns := &connCounter{}
	front := api.New(api.Options{Repository: repo, Version: buildVersion(), Kernels: table.String(), Exec: exec, AdminToken: c.adminToken,
		MaxInFlight: c.maxInFlight, RequestTimeout: c.requestTimeout, MaxBodyBytes: c.maxBodyBytes, MaxInflightBytes: budget, MaxRequestBytes: perRequest,
		Draining: draining.Load, Logger: log, RequestLogRate: requestLogRate(c.requestLogRate), TracerProvider: tracing.Provider, Propagator: tracing.Propagator, CORSOrigins: c.cors})
	srv := &http.Server{
		Handler:   front.Handler(),
		TLSConfig: tlsCfg,
		// Work routes set their own read and write deadlines per request
		// (api); these bound every other route and back them up.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       c.requestTimeout + 10*time.Second,
		WriteTimeout:      2*c.requestTimeout + 10*time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
		ConnState:         conns.track,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	errc := make(chan error, 2)
	var grpcSrv *grpc.Server
	if grpcLn != nil {
		grpcSrv = newGRPC(front, tlsCfg, c.grpcMaxStreams)
		log.Info("grpc listening", "addr", grpcLn.Addr().String(), "tls", tlsCfg != nil)
		go func() { errc <- grpcSrv.Serve(grpcDrain) }()
	}
	log.Info("listening", "addr", ln.Addr().String(), "version", buildVersion(), "tls", tlsCfg != nil)
	flushLog() // the start-up lines are out by the time anyone can connect
	if ready != nil {
		ready <- ln.Addr().String()
	}
	go func() {
		if tlsCfg != nil {
			errc <- srv.ServeTLS(httpLn, "", "")
		} else {
			errc <- srv.Serve(httpLn)
		}
	}()
	loadCtx, stopLoading := context.WithCancel(context.Background())
	defer stopLoading() // a load still running when the server stops ends with it
	go loadStartup(loadCtx, repo, loadModels, log)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		log.Info("stopping", "cause", context.Cause(ctx))
	case sig := <-sigs:
		log.Info("signal received", "signal", sig.String())
	}

	// 1. Readiness turns 503 and responses close their connections, while
	// requests are still served, so load balancers and clients move away.
	draining.Store(true)
	closeNow := func() { // both front ends, without waiting for requests
		srv.Close()
		if grpcSrv != nil {
			grpcSrv.Stop()
		}
	}
	log.Info("draining: readiness reports 503; serving on until the drain delay ends", "drain_delay", c.drainDelay)
	timer := time.NewTimer(c.drainDelay)
	defer timer.Stop()
	select {
	case <-timer.C:
	case sig := <-sigs:
		closeNow()
		log.Error("second signal: exiting without draining", "signal", sig.String(), "active_connections", conns.active())
		return fmt.Errorf("second signal (%v): exited without draining", sig)
	case err := <-errc:
		return err
	}

	// 2. Stop accepting without resetting a connection (new connections
	// are refused, those the kernel has accepted are answered), close idle
	// connections, and let requests in flight finish within the shutdown
	// timeout (HTTP and gRPC alike).
	log.Info("closing the listener; finishing requests in flight", "active_connections", conns.active(), "shutdown_timeout", c.shutdownTime)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), c.shutdownTime)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		grpcDone := make(chan error, 1)
		go func() {
			if grpcDrain != nil {
				stopListener(shutdownCtx, "grpc", grpcDrain, log)
			}
			grpcDone <- stopGRPC(shutdownCtx, grpcSrv)
		}()
		err := stopHTTP(shutdownCtx, srv, httpLn, conns, log)
		if gerr := <-grpcDone; err == nil && gerr != nil {
			err = fmt.Errorf("gRPC calls still running: %w", gerr)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			log.Info("drained: every request finished")
			return nil
		}
		n := conns.active()
		cancelRequests()
		closeNow()
		log.Error("shutdown timeout: requests in flight were cut short", "active_connections", n, "shutdown_timeout", c.shutdownTime)
		return fmt.Errorf("--shutdown-timeout %v passed with %d connections still active: their requests were cut short", c.shutdownTime, n)
	case sig := <-sigs:
		n := conns.active()
		cancelRequests()
		closeNow()
		log.Error("second signal: exiting without finishing requests in flight", "signal", sig.String(), "active_connections", n)
		return fmt.Errorf("second signal (%v): exited with %d connections still active", sig, n)
	}
}

// loadStartup loads the repository's models while the server listens, and
// says when they are done and how many serve.
func loadStartup(ctx context.Context, repo *repository.Repository, load func(context.Context), log *slog.Logger) {
	start := time.Now()
	load(ctx)
	serving, failed := 0, 0
	for _, e := range repo.Entries() {
		if e.Ready() {
			serving++
		} else {
			failed++
		}
	}
	attrs := []any{"serving", serving, "failed", failed, "time", time.Since(start).Round(time.Millisecond)}
	if why := repo.NotReady(); why != "" {
		log.Warn("start-up load finished: not ready", append(attrs, "reason", why)...)
		return
	}
	log.Info("start-up load finished: ready", attrs...)
}

func buildVersion() string {
	if version != "dev" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return version
}

func runtimeInfo() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown build"
	}
	s := bi.GoVersion
	for _, kv := range bi.Settings {
		if kv.Key == "vcs.revision" && len(kv.Value) >= 12 {
			s += ", " + kv.Value[:12]
		}
		if kv.Key == "-tags" && kv.Value != "" {
			s += ", tags " + kv.Value
		}
	}
	return s + ", " + strconv.Itoa(os.Getpagesize()/1024) + "K pages"
}

// requestLogRate is api.Options.RequestLogRate for --request-log-rate,
// whose 0 logs every request.
func requestLogRate(flag int) int {
	if flag == 0 {
		return -1
	}
	return flag
}
