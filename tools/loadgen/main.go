// Command loadgen is a closed-loop HTTP and gRPC load generator: each of
// -c connections sends a request, waits for the whole answer, and sends
// the next, for -d. It reports requests per second, latency percentiles,
// answers by status and errors by kind and, with -pid, the resident memory
// of the server process sampled while it runs (Linux /proc).
//
//	go build -o /tmp/serve ./cmd/serve && /tmp/serve &
//	go run -C tools ./loadgen -c 64 -d 60s -pid $!
//	go run -C tools ./loadgen -grpc 127.0.0.1:8001 -c 64 -d 60s
//
// It is part of the tools module (tools/go.mod), so the commands run in
// tools/ and relative paths given to it (-body, -out, -shared, -from) are
// taken from there.
//
// Scenarios name what is sent: "mnist" (the default) posts infer requests
// for the embedded model with one 28×28 image of 7-significant-digit
// pixels (an 8 KB body); "custom" sends -method to -url with the body of
// -body (a file). Only loopback addresses are accepted unless -any-host.
//
// With -grpc the requests are the Open Inference Protocol's ModelInfer
// calls instead: mnist sends the same 784 values in raw_input_contents,
// custom the ModelInferRequest in -body (protobuf JSON or wire format).
// -c is then the number of unary calls outstanding, spread over
// -grpc-conns connections (one by default, as a gRPC client's one
// channel); an answer other than OK counts as an error of its status
// code's name (NotFound, Unavailable, ...).
// With -rate the load is open-loop instead: requests leave at a fixed rate
// whether or not earlier ones were answered, and latency counts from when
// each was due.
//
// With -tail it measures the tail of small inferences against the
// server's cheapest route: rounds of -c connections on GET
// /v2/health/live, then on the infer requests, alternated for -d in all,
// and prints infer p50/p90/p99, health p99 and their ratio (see tail.go):
//
//	go run -C tools ./loadgen -tail -c 8 -d 60s
//
// With -suite it runs the serving benchmark and writes the repository's
// BENCHMARKS.md and its charts (see suite.go):
//
//	go run -C tools ./loadgen -suite
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc/metadata"
)

type config struct {
	scenario string
	url      string
	method   string
	bodyFile string
	headers  headerList
	conns    int
	duration time.Duration
	timeout  time.Duration
	pid      int
	sample   time.Duration
	json     bool
	anyHost  bool
	rate     float64
	maxOpen  int
	suite    suiteConfig
	bare     string
	grpc     string
	gconns   int
	model    string
	tail     tailConfig
	// finish lets the requests in flight at the end of the run finish
	// (uncounted) instead of cutting them, so that nothing of this run
	// overlaps the next one (-tail's phases).
	finish bool
}

type headerList []string

func (h *headerList) String() string     { return strings.Join(*h, ", ") }
func (h *headerList) Set(v string) error { *h = append(*h, v); return nil }

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	c := config{}
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.scenario, "scenario", "mnist", "what to send: mnist (infer on the embedded model) or custom (-method, -url, -body)")
	fs.StringVar(&c.url, "url", "", "target URL (default for mnist: http://127.0.0.1:8000/v2/models/MODEL/infer)")
	fs.StringVar(&c.model, "model", "mnist", "mnist: the model to infer on (in the default -url; with -grpc, the model_name)")
	fs.StringVar(&c.method, "method", "", "HTTP method for custom (default GET, POST with -body)")
	fs.StringVar(&c.bodyFile, "body", "", "file whose content is the request body (custom; with -grpc, a ModelInferRequest in protobuf JSON or wire format)")
	fs.Var(&c.headers, "H", "extra request header \"Name: value\" (repeatable; gRPC metadata with -grpc)")
	fs.IntVar(&c.conns, "c", 64, "connections, each with one request outstanding (with -grpc: unary calls outstanding, over -grpc-conns connections)")
	fs.StringVar(&c.grpc, "grpc", "", "call the Open Inference Protocol's ModelInfer over gRPC at this host:port (cmd/serve: 127.0.0.1:8001) instead of HTTP")
	fs.IntVar(&c.gconns, "grpc-conns", 1, "with -grpc: client connections; the -c calls (or the open loop's) take them in turn")
	fs.DurationVar(&c.duration, "d", 60*time.Second, "how long to send")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "per-request timeout")
	fs.IntVar(&c.pid, "pid", 0, "sample this process's resident memory (VmRSS) while running")
	fs.DurationVar(&c.sample, "sample", time.Second, "memory sampling interval")
	fs.BoolVar(&c.json, "json", false, "print the report as JSON")
	fs.BoolVar(&c.anyHost, "any-host", false, "allow targets other than loopback addresses")
	fs.Float64Var(&c.rate, "rate", 0, "open loop: send this many requests per second for -d, answered or not (0: closed loop)")
	fs.IntVar(&c.maxOpen, "max-open", 1024, "open loop: most requests outstanding; a request due beyond it is counted as dropped")
	c.suite.flags(fs)
	c.tail.flags(fs)
	fs.StringVar(&c.bare, "bare", "", "serve the decode-only handler on this address (the suite's ceiling; used by -suite)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if c.bare != "" {
		return serveBare(c.bare, stdout)
	}
	if c.suite.on {
		return runSuite(&c.suite, stdout, stderr)
	}
	if c.tail.on {
		return runTail(&c, stdout)
	}
	if c.conns < 1 || c.duration <= 0 || c.gconns < 1 {
		return fmt.Errorf("-c, -d and -grpc-conns must be positive")
	}
	sc, err := newScenario(&c)
	if err != nil {
		return err
	}
	if sc.grpc == nil {
		if err := checkHost(sc.url, c.anyHost); err != nil {
			return err
		}
	}
	var rep *report
	if c.rate > 0 {
		rep = openLoad(context.Background(), sc, c.rate, c.duration, c.timeout, c.maxOpen)
	} else if rep, err = load(context.Background(), &c, sc); err != nil {
		return err
	}
	if c.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.print(stdout)
	return nil
}

// scenario is one kind of request, built anew for each send: an HTTP
// request, or a gRPC call when grpc is set.
type scenario struct {
	name    string
	method  string
	url     string
	body    []byte
	headers http.Header
	grpc    *grpcTarget
}

// grpcMethod is the report's method of a gRPC scenario.
const grpcMethod = "gRPC ModelInfer"

func newScenario(c *config) (*scenario, error) {
	if c.grpc != "" {
		return newGRPCScenario(c)
	}
	sc := &scenario{name: c.scenario, headers: http.Header{}}
	switch c.scenario {
	case "mnist":
		sc.method, sc.url = http.MethodPost, "http://127.0.0.1:8000/v2/models/"+url.PathEscape(c.model)+"/infer"
		sc.body, _ = mnistInput(rand.New(rand.NewPCG(1, 2)))
		sc.headers.Set("Content-Type", "application/json")
	case "custom":
		sc.method = http.MethodGet
		if c.bodyFile != "" {
			b, err := os.ReadFile(c.bodyFile)
			if err != nil {
				return nil, err
			}
			sc.method, sc.body = http.MethodPost, b
		}
	default:
		return nil, fmt.Errorf("-scenario %q: mnist or custom", c.scenario)
	}
	if c.url != "" {
		sc.url = c.url
	}
	if sc.url == "" {
		return nil, fmt.Errorf("-scenario custom needs -url")
	}
	if c.method != "" {
		sc.method = c.method
	}
	for _, h := range c.headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			return nil, fmt.Errorf("-H %q: want \"Name: value\"", h)
		}
		sc.headers.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	// a request that cannot be built fails here, not in every worker
	if _, err := sc.request(context.Background()); err != nil {
		return nil, err
	}
	return sc, nil
}

func newGRPCScenario(c *config) (*scenario, error) {
	if c.url != "" || c.method != "" {
		return nil, fmt.Errorf("-url and -method are HTTP's: -grpc names the target")
	}
	addr, err := grpcAddr(c.grpc, c.anyHost)
	if err != nil {
		return nil, err
	}
	sc := &scenario{name: c.scenario, method: grpcMethod, url: addr, grpc: &grpcTarget{addr: addr, conns: c.gconns}}
	switch c.scenario {
	case "mnist":
		_, pixels := mnistInput(rand.New(rand.NewPCG(1, 2)))
		sc.grpc.req = grpcRequest(c.model, "input", []int{1, 784}, pixels)
	case "custom":
		if c.bodyFile == "" {
			return nil, fmt.Errorf("-scenario custom with -grpc needs -body, a ModelInferRequest")
		}
		if sc.grpc.req, err = readGRPCRequest(c.bodyFile); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("-scenario %q: mnist or custom", c.scenario)
	}
	sc.body = sc.grpc.req
	for _, h := range c.headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			return nil, fmt.Errorf("-H %q: want \"Name: value\"", h)
		}
		if sc.grpc.md == nil {
			sc.grpc.md = metadata.MD{}
		}
		sc.grpc.md.Append(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return sc, nil
}

// mnistInput is an infer request for the embedded model, 784 pixels in
// [0, 1) with 7 significant digits, and the values it holds (what the
// server decodes its text to).
func mnistInput(rng *rand.Rand) ([]byte, []float32) {
	b := []byte(`{"inputs":[{"name":"input","shape":[1,784],"datatype":"FP32","data":[`)
	pixels := make([]float32, 784)
	for i := range pixels {
		if i > 0 {
			b = append(b, ',')
		}
		n := len(b)
		b = strconv.AppendFloat(b, float64(float32(rng.Float64())), 'g', 7, 32)
		v, err := strconv.ParseFloat(string(b[n:]), 32)
		if err != nil {
			panic(err) // a number just formatted always parses
		}
		pixels[i] = float32(v)
	}
	return append(b, "]}]}"...), pixels
}

func (sc *scenario) request(ctx context.Context) (*http.Request, error) {
	var body io.Reader
	if sc.body != nil {
		body = bytes.NewReader(sc.body)
	}
	req, err := http.NewRequestWithContext(ctx, sc.method, sc.url, body)
	if err != nil {
		return nil, err
	}
	for k, v := range sc.headers {
		req.Header[k] = v
	}
	return req, nil
}

// A caller sends one request and waits for its whole answer. It returns
// the answer's status ("200"), or the kind of error that left it without
// one.
type caller interface {
	call(ctx context.Context) (status, kind string)
}

// callers returns n callers for the closed loop's n workers, one
// connection each (gRPC: one call each, over sc.grpc.conns connections),
// and the function that closes them.
func (sc *scenario) callers(n int, timeout time.Duration) ([]caller, func(), error) {
	if sc.grpc != nil {
		return sc.grpc.callers(n, timeout)
	}
	var trs []*http.Transport
	cs := make([]caller, n)
	for i := range cs {
		// a transport of its own, one idle conn
		tr := &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1, DisableCompression: true}
		trs = append(trs, tr)
		cs[i] = &httpCaller{sc: sc, client: &http.Client{Transport: tr, Timeout: timeout}}
	}
	return cs, func() {
		for _, tr := range trs {
			tr.CloseIdleConnections()
		}
	}, nil
}

// pool returns one caller the open loop shares among up to maxOpen
// requests outstanding, and the function that closes it.
func (sc *scenario) pool(maxOpen int, timeout time.Duration) (caller, func(), error) {
	if sc.grpc != nil {
		return sc.grpc.pool(timeout)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: maxOpen, MaxConnsPerHost: maxOpen, DisableCompression: true}
	return &httpCaller{sc: sc, client: &http.Client{Transport: tr, Timeout: timeout}}, tr.CloseIdleConnections, nil
}

type httpCaller struct {
	sc     *scenario
	client *http.Client
}

func (h *httpCaller) call(ctx context.Context) (string, string) {
	req, err := h.sc.request(ctx)
	if err != nil {
		return "", err.Error()
	}
	resp, err := h.client.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if err != nil {
		return "", errorKind(err)
	}
	return strconv.Itoa(resp.StatusCode), ""
}

// checkHost refuses targets off this machine unless allowed.
func checkHost(raw string, anyHost bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if anyHost {
		return nil
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%s is not a loopback address (use -any-host to allow it)", host)
}

// report is what a run measured.
type report struct {
	Scenario    string         `json:"scenario"`
	Method      string         `json:"method"`
	URL         string         `json:"url"`
	BodyBytes   int            `json:"body_bytes"`
	Connections int            `json:"connections"`                // gRPC: calls outstanding
	GRPCConns   int            `json:"grpc_connections,omitempty"` // gRPC: the connections they share
	Rate        float64        `json:"rate,omitempty"`             // open loop: requests per second sent
	Dropped     int            `json:"dropped,omitempty"`          // open loop: due beyond -max-open outstanding
	Seconds     float64        `json:"seconds"`
	Requests    int            `json:"requests"`
	PerSecond   float64        `json:"requests_per_second"`
	Status      map[string]int `json:"status"`
	Errors      map[string]int `json:"errors"`
	LatencyMS   latencies      `json:"latency_ms"`
	Memory      *memory        `json:"memory,omitempty"`

	lat []time.Duration // every answer's latency, sorted (closed loop)
}

type latencies struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// memory is the resident memory of -pid: before the load, after it, the
// largest sample, and the kernel's peak (VmHWM) at the end.
type memory struct {
	PID       int   `json:"pid"`
	BeforeMiB int64 `json:"before_mib"`
	AfterMiB  int64 `json:"after_mib"`
	MaxMiB    int64 `json:"max_sampled_mib"`
	PeakMiB   int64 `json:"peak_mib"`
	Samples   int   `json:"samples"`
}

type worker struct {
	lat    []time.Duration
	status map[string]int
	errs   map[string]int
}

func load(ctx context.Context, c *config, sc *scenario) (*report, error) {
	rep := &report{Scenario: sc.name, Method: sc.method, URL: sc.url, BodyBytes: len(sc.body), Connections: c.conns,
		Status: map[string]int{}, Errors: map[string]int{}}
	if sc.grpc != nil {
		rep.GRPCConns = min(sc.grpc.conns, c.conns)
	}
	var mem *memory
	if c.pid > 0 {
		before, err := procStatus(c.pid, "VmRSS")
		if err != nil {
			return nil, err
		}
		mem = &memory{PID: c.pid, BeforeMiB: before >> 20, MaxMiB: before >> 20, Samples: 1}
	}
	callers, closeAll, err := sc.callers(c.conns, c.timeout)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	ctx, cancel := context.WithTimeout(ctx, c.duration)
	defer cancel()
	end, _ := ctx.Deadline()
	callCtx := ctx
	if c.finish {
		callCtx = context.WithoutCancel(ctx) // each call still has -timeout
	}
	workers := make([]*worker, c.conns)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range workers {
		w := &worker{status: map[string]int{}, errs: map[string]int{}}
		workers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The run ends at its deadline by the clock: a client (gRPC's)
			// can fail a call for it before the context's timer fires.
			over := func() bool { return ctx.Err() != nil || !time.Now().Before(end) }
			for !over() {
				t0 := time.Now()
				status, kind := callers[i].call(callCtx)
				if over() {
					return // cut by the end of the run: not counted
				}
				if kind != "" {
					w.errs[kind]++
					continue
				}
				w.lat = append(w.lat, time.Since(t0))
				w.status[status]++
			}
		}()
	}
	if mem != nil {
		tick := time.NewTicker(c.sample)
	sampling:
		for {
			select {
			case <-ctx.Done():
				break sampling
			case <-tick.C:
				if rss, err := procStatus(c.pid, "VmRSS"); err == nil {
					mem.MaxMiB = max(mem.MaxMiB, rss>>20)
					mem.Samples++
				}
			}
		}
		tick.Stop()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, w := range workers {
		all = append(all, w.lat...)
		for status, n := range w.status {
			rep.Status[status] += n
		}
		for kind, n := range w.errs {
			rep.Errors[kind] += n
		}
	}
	slices.Sort(all)
	rep.lat = all
	rep.Requests = len(all)
	rep.Seconds = elapsed.Seconds()
	rep.PerSecond = float64(len(all)) / elapsed.Seconds()
	rep.LatencyMS = latencies{P50: ms(quantile(all, 0.50)), P90: ms(quantile(all, 0.90)), P99: ms(quantile(all, 0.99)), Max: ms(quantile(all, 1))}
	if mem != nil {
		if rss, err := procStatus(c.pid, "VmRSS"); err == nil {
			mem.AfterMiB = rss >> 20
			mem.MaxMiB = max(mem.MaxMiB, mem.AfterMiB)
			mem.Samples++
		}
		if hwm, err := procStatus(c.pid, "VmHWM"); err == nil {
			// The kernel updates its high-water mark lazily: it can lag
			// behind a resident size sampled a moment before.
			mem.PeakMiB = max(hwm>>20, mem.MaxMiB)
		}
		rep.Memory = mem
	}
	return rep, nil
}

// quantile returns the q-quantile of sorted durations (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// errorKind names an error by what happened to the connection.
func errorKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EPIPE):
		return "broken pipe"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed early"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "other: " + err.Error()
}

// procStatus reads a field of /proc/<pid>/status in bytes.
func procStatus(pid int, field string) (int64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			n, err := strconv.ParseInt(f[0], 10, 64)
			return n << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

func (r *report) print(w io.Writer) {
	switch {
	case r.Rate > 0:
		fmt.Fprintf(w, "%s %s (%s, %d-byte body), open loop at %.0f/s, %.1f s, %d dropped\n", r.Method, r.URL, r.Scenario, r.BodyBytes, r.Rate, r.Seconds, r.Dropped)
	case r.GRPCConns > 0:
		conns := fmt.Sprintf("%d connections", r.GRPCConns)
		if r.GRPCConns == 1 {
			conns = "one connection"
		}
		fmt.Fprintf(w, "%s %s (%s, %d-byte request), %d calls outstanding on %s, %.1f s\n", r.Method, r.URL, r.Scenario, r.BodyBytes, r.Connections, conns, r.Seconds)
	default:
		fmt.Fprintf(w, "%s %s (%s, %d-byte body), %d connections, %.1f s\n", r.Method, r.URL, r.Scenario, r.BodyBytes, r.Connections, r.Seconds)
	}
	fmt.Fprintf(w, "requests   %d answered, %.0f/s\n", r.Requests, r.PerSecond)
	fmt.Fprintf(w, "latency    p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms\n", r.LatencyMS.P50, r.LatencyMS.P90, r.LatencyMS.P99, r.LatencyMS.Max)
	fmt.Fprintf(w, "status     %s\n", counts(r.Status))
	errs := 0
	for _, n := range r.Errors {
		errs += n
	}
	fmt.Fprintf(w, "errors     %d %s\n", errs, counts(r.Errors))
	if m := r.Memory; m != nil {
		fmt.Fprintf(w, "memory     pid %d resident: before %d MiB, after %d MiB, max sampled %d MiB (%d samples), peak %d MiB\n",
			m.PID, m.BeforeMiB, m.AfterMiB, m.MaxMiB, m.Samples, m.PeakMiB)
	}
}

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	if len(parts) == 0 {
		return ""
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
