// Command serve runs the quantserve model server.
//
//	serve [--addr :8000] [--model-repository DIR] [--max-body-bytes N] [--log-level info]
//	      [--kernels auto|avx512vnni|avx512|avxvnni|avx2|i8mm|sdot|neon|generic] [--threads N] [--quantize int8|none]
//	      [--quantize-scheme per_channel|per_block|per_tensor]
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
	"syscall"
	"time"

	"github.com/quantserve/quantserve/api"
	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/repository"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

type config struct {
	addr           string
	repoDir        string
	maxBodyBytes   int64
	logLevel       string
	kernels        string
	threads        int
	quantize       string
	quantizeScheme string
	adminToken     string
	maxInFlight    int
	requestTimeout time.Duration
	showVersion    bool
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
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.addr, "addr", ":8000", "listen address (env QUANTSERVE_ADDR)")
	fs.StringVar(&c.repoDir, "model-repository", "", "model repository directory: DIR/<model>/<version>/model.onnx; empty serves the embedded mnist model (env QUANTSERVE_MODEL_REPOSITORY)")
	fs.Int64Var(&c.maxBodyBytes, "max-body-bytes", api.DefaultMaxBodyBytes, "largest accepted request body in bytes (env QUANTSERVE_MAX_BODY_BYTES)")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error (env QUANTSERVE_LOG_LEVEL)")
	fs.StringVar(&c.kernels, "kernels", "auto", "kernel table: auto, "+strings.Join(dispatch.Names(), ", ")+" (env QUANTSERVE_KERNELS)")
	fs.IntVar(&c.threads, "threads", runtime.GOMAXPROCS(0), "cores a matrix product may use (env QUANTSERVE_THREADS)")
	fs.StringVar(&c.quantize, "quantize", "int8", "weights of MatMul/Gemm layers: int8 or none (env QUANTSERVE_QUANTIZE)")
	fs.StringVar(&c.quantizeScheme, "quantize-scheme", "per_channel", "int8 weight scales: per_channel, per_block or per_tensor (env QUANTSERVE_QUANTIZE_SCHEME)")
	fs.StringVar(&c.adminToken, "admin-token", "", "bearer token that enables POST /v2/repository/models/{m}/load and /unload; empty disables them (env QUANTSERVE_ADMIN_TOKEN)")
	fs.IntVar(&c.maxInFlight, "max-inflight", api.DefaultMaxInFlight, "work requests (infer, grad, train, tensor ops) in flight at once; more get 503 with Retry-After (env QUANTSERVE_MAX_INFLIGHT)")
	fs.DurationVar(&c.requestTimeout, "request-timeout", api.DefaultRequestTimeout, "deadline of a work request; past it the answer is 504 (env QUANTSERVE_REQUEST_TIMEOUT)")
	fs.BoolVar(&c.showVersion, "version", false, "print the version and exit")
	set := map[string]bool{}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		env := "QUANTSERVE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
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
	if c.threads < 1 {
		return nil, fmt.Errorf("--threads must be at least 1")
	}
	if c.quantize != "int8" && c.quantize != "none" {
		return nil, fmt.Errorf("--quantize %q: int8 or none", c.quantize)
	}
	if _, err := quant.ParseScheme(c.quantizeScheme); err != nil {
		return nil, fmt.Errorf("--quantize-scheme: %v", err)
	}
	return c, nil
}

// run starts the server and blocks until ctx is done or a signal arrives.
// When ready is non-nil the bound address is sent on it once listening.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, ready chan<- string) error {
	c, err := parseConfig(args, getenv, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
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
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)

	log.Info("kernels", "table", table.String(), "cpu", dispatch.CPU(), "threads", c.threads, "quantize", c.quantize, "scheme", c.quantizeScheme)
	scheme, _ := quant.ParseScheme(c.quantizeScheme)
	exec := gemm.New(table, c.threads)
	opts := repository.Options{Log: log, Model: model.Options{
		Exec:     exec,
		Quantize: c.quantize == "int8",
		Scheme:   scheme,
	}}
	var repo *repository.Repository
	if c.repoDir == "" {
		log.Info("no --model-repository: serving the embedded model", "model", defaultmodel.Name)
		repo = repository.New(opts, repository.Source{Name: defaultmodel.Name, Version: 1, ONNX: defaultmodel.ONNX})
	} else if repo, err = repository.Open(c.repoDir, opts); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           api.NewRouter(api.Options{Repository: repo, Version: buildVersion(), Kernels: table.String(), Exec: exec, AdminToken: c.adminToken, MaxInFlight: c.maxInFlight, RequestTimeout: c.requestTimeout, MaxBodyBytes: c.maxBodyBytes, Logger: log}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("listening", "addr", ln.Addr().String(), "version", buildVersion())
	if ready != nil {
		ready <- ln.Addr().String()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing requests in flight")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	return nil
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
