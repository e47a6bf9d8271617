package main

// The serving benchmark (-suite): one run that builds cmd/serve, lays out
// a model repository, starts the server and a decode-only net/http server
// on 127.0.0.1, measures every scenario at every concurrency, interleaved
// round by round so the ratios compare runs made under the same
// neighbours, and writes BENCHMARKS.md with its tables and PNG charts.
//
// Scenarios: the embedded MNIST model (8 KB JSON bodies, the binary
// tensor extension, or gRPC ModelInfer calls with raw_input_contents), a
// wide model (two 4096×4096 int8 layers with generated weights, batch-1
// requests of 4096 floats, the same three ways), the PaddleOCR
// text-direction CNN from ../shared/models (when this build's operators
// run it), each with dynamic batching off and on (max_batch_size 64, no
// queue delay but the wide model's 1 ms), and the decode-only handler with the MNIST bodies. The
// gRPC variants make their calls over one connection, as a client's one
// channel would.

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"

	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/tools/internal/servermod"
)

type suiteConfig struct {
	on       bool
	out      string
	charts   string
	point    time.Duration
	rounds   int
	concs    string
	shared   string
	serveBin string
	rateFrac float64
	only     string
	from     string
	delays   groupDelays
}

// groups are the suite's scenario groups, in the report's order.
var groups = []string{"mnist", "wide", "cnn"}

// groupDelays is -batch-delay: the batched models' max_queue_delay by
// scenario group ("wide=1ms,cnn=500us"); a group not named waits 0.
type groupDelays map[string]time.Duration

func (g *groupDelays) String() string {
	var parts []string
	for _, k := range groups {
		if d, ok := (*g)[k]; ok {
			parts = append(parts, k+"="+d.String())
		}
	}
	return strings.Join(parts, ",")
}

func (g *groupDelays) Set(v string) error {
	m := groupDelays{}
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		k, dv, ok := strings.Cut(part, "=")
		d, err := time.ParseDuration(dv)
		if !ok || err != nil || d < 0 || !slices.Contains(groups, k) {
			return fmt.Errorf("%q: want group=duration (groups mnist, wide, cnn), e.g. wide=1ms", part)
		}
		m[k] = d
	}
	*g = m
	return nil
}

func (s *suiteConfig) flags(fs *flag.FlagSet) {
	fs.BoolVar(&s.on, "suite", false, "run the serving benchmark and write -out and its charts")
	fs.StringVar(&s.out, "out", "../BENCHMARKS.md", "suite: the report to write (the default is the repository's, relative to tools/)")
	fs.StringVar(&s.charts, "charts", "benchmarks", "suite: directory of the PNG charts (relative paths are taken from -out's directory)")
	fs.DurationVar(&s.point, "point", 3*time.Second, "suite: how long each measurement runs")
	fs.IntVar(&s.rounds, "rounds", 2, "suite: interleaved rounds; each point reports its best round")
	fs.StringVar(&s.concs, "conc", "1,8,64", "suite: closed-loop concurrencies")
	fs.StringVar(&s.shared, "shared", "../../shared", "suite: the conformance data directory holding models/paddleocr_cls_mobile_v2 (the default is the one beside the checkout, relative to tools/)")
	fs.StringVar(&s.serveBin, "serve", "", "suite: a built serve binary (default: go build ./cmd/serve)")
	fs.Float64Var(&s.rateFrac, "open-fraction", 0.5, "suite: open-loop rate as a fraction of the batching-off throughput at the highest concurrency")
	fs.StringVar(&s.only, "models", strings.Join(groups, ","), "suite: which scenario groups to run")
	fs.StringVar(&s.from, "from", "", "suite: rewrite the report and charts from a results.json a run wrote, measuring nothing")
	s.delays = groupDelays{"wide": time.Millisecond}
	fs.Var(&s.delays, "batch-delay", "suite: the batched models' max_queue_delay by scenario group (group=duration,...; groups not named wait 0)")
}

// variant is one kind of request in the suite.
type variant struct {
	id      string // group/body/batching
	group   string // mnist, wide, cnn
	label   string
	model   string // served model name; "" for the bare handler
	batched bool
	binary  bool
	grpc    bool // gRPC ModelInfer, raw_input_contents
	sc      *scenario
}

// body names how a variant sends its requests.
func (v *variant) body() string {
	switch {
	case v.grpc:
		return "grpc"
	case v.binary:
		return "binary"
	}
	return "json"
}

// point is one measurement.
type point struct {
	Variant   string  `json:"variant"`
	Conc      int     `json:"concurrency,omitempty"`
	Rate      float64 `json:"rate,omitempty"`
	Round     int     `json:"round"`
	Report    *report `json:"report"`
	MeanBatch float64 `json:"mean_batch,omitempty"` // requests per execution, batched variants
}

type suiteRun struct {
	cfg                   *suiteConfig
	log                   io.Writer
	tmp                   string
	serveURL              string
	grpcAddr              string
	bareURL               string
	kernels               string
	variants              []*variant
	concs                 []int
	points                []point
	notes                 []string
	started               time.Time
	loadBefore, loadAfter string
	cmds                  []*exec.Cmd
	machine               machine
	bound                 *kernelBound
}

// machine describes where a run measured.
type machine struct {
	CPU        string `json:"cpu"`
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Go         string `json:"go"`
}

// savedRun is what a suite run measured, written beside the charts
// (results.json), so -from rewrites the report and charts without
// measuring again.
type savedRun struct {
	Started    time.Time      `json:"started"`
	Machine    machine        `json:"machine"`
	Kernels    string         `json:"kernels"`
	LoadBefore string         `json:"load_before"`
	LoadAfter  string         `json:"load_after"`
	Point      time.Duration  `json:"point_ns"`
	BatchDelay groupDelays    `json:"batch_delays_ns,omitempty"`
	Rounds     int            `json:"rounds"`
	Concs      []int          `json:"concurrencies"`
	Notes      []string       `json:"notes"`
	Bound      *kernelBound   `json:"wide_in_process,omitempty"`
	Variants   []savedVariant `json:"variants"`
	Points     []point        `json:"points"`
}

type savedVariant struct {
	ID      string `json:"id"`
	Group   string `json:"group"`
	Label   string `json:"label"`
	Model   string `json:"model"`
	Batched bool   `json:"batched"`
	Binary  bool   `json:"binary"`
	GRPC    bool   `json:"grpc,omitempty"`
}

func (s *suiteRun) save(path string) error {
	r := savedRun{Started: s.started, Machine: s.machine, Kernels: s.kernels, LoadBefore: s.loadBefore, LoadAfter: s.loadAfter,
		Point: s.cfg.point, BatchDelay: s.cfg.delays, Rounds: s.cfg.rounds, Concs: s.concs, Notes: s.notes, Bound: s.bound, Points: s.points}
	for _, v := range s.variants {
		r.Variants = append(r.Variants, savedVariant{v.id, v.group, v.label, v.model, v.batched, v.binary, v.grpc})
	}
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func (s *suiteRun) load(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var r savedRun
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	s.started, s.machine, s.kernels, s.loadBefore, s.loadAfter = r.Started, r.Machine, r.Kernels, r.LoadBefore, r.LoadAfter
	s.cfg.point, s.cfg.delays, s.cfg.rounds, s.concs, s.notes, s.points = r.Point, r.BatchDelay, r.Rounds, r.Concs, r.Notes, r.Points
	s.bound = r.Bound
	for _, v := range r.Variants {
		s.variants = append(s.variants, &variant{id: v.ID, group: v.Group, label: v.Label, model: v.Model, batched: v.Batched, binary: v.Binary, grpc: v.GRPC})
	}
	return nil
}

func runSuite(c *suiteConfig, stdout, stderr io.Writer) error {
	s := &suiteRun{cfg: c, log: stderr, started: time.Now(),
		machine: machine{CPU: dispatch.CPU(), CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version()}}
	if c.from != "" {
		if err := s.load(c.from); err != nil {
			return err
		}
		if err := s.write(); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s and charts in %s from %s\n", c.out, s.chartDir(), c.from)
		return nil
	}
	for _, f := range strings.Split(c.concs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("-conc %q: positive integers", c.concs)
		}
		s.concs = append(s.concs, n)
	}
	var err error
	if s.tmp, err = os.MkdirTemp("", "quantserve-bench-"); err != nil {
		return err
	}
	defer os.RemoveAll(s.tmp)
	defer s.stop()
	if err := s.setup(); err != nil {
		return err
	}
	s.loadBefore = loadAvg()
	s.measure()
	s.loadAfter = loadAvg()
	if err := s.write(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s and charts in %s\n", c.out, s.chartDir())
	return nil
}

func (s *suiteRun) logf(format string, args ...any) {
	fmt.Fprintf(s.log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func (s *suiteRun) want(group string) bool {
	for _, g := range strings.Split(s.cfg.only, ",") {
		if strings.TrimSpace(g) == group {
			return true
		}
	}
	return false
}

// openMax bounds the suite's open-loop requests outstanding: a server that
// falls behind sees its arrivals dropped (and counted) rather than a
// growing pile of connections.
const openMax = 256

// batchedConfig is the config.yaml of a batched model, with a queue delay
// of delay.
func batchedConfig(delay time.Duration) string {
	return fmt.Sprintf("max_batch_size: 64\ndynamic_batching: {max_queue_delay_microseconds: %d}\n", delay.Microseconds())
}

// wideSizes are the wide model's layers: two 4096×4096 Gemms.
var wideSizes = []int{4096, 4096, 4096}

func (s *suiteRun) setup() error {
	repo := filepath.Join(s.tmp, "models")
	put := func(name string, onnx []byte, config string) error {
		dir := filepath.Join(repo, name, "1")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "model.onnx"), onnx, 0o644); err != nil {
			return err
		}
		if config != "" {
			return os.WriteFile(filepath.Join(repo, name, "config.yaml"), []byte(config), 0o644)
		}
		return nil
	}
	rng := rand.New(rand.NewPCG(1, 2))
	if s.want("mnist") {
		if err := put("mnist", defaultmodel.ONNX, ""); err != nil {
			return err
		}
		if err := put("mnist_batched", defaultmodel.ONNX, batchedConfig(s.cfg.delays["mnist"])); err != nil {
			return err
		}
	}
	if s.want("wide") {
		s.logf("generating the wide model (%v)", wideSizes)
		onnx := onnxbuild.MLP(wideSizes, 1).Bytes()
		if err := put("wide", onnx, ""); err != nil {
			return err
		}
		if err := put("wide_batched", onnx, batchedConfig(s.cfg.delays["wide"])); err != nil {
			return err
		}
		s.logf("the wide model in process, batch 1 and batch 64 (%v each)", 2*s.cfg.point)
		b, err := measureBound(onnx, wideSizes[0], 2*s.cfg.point)
		if err != nil {
			return fmt.Errorf("wide model in process: %w", err)
		}
		s.bound = b
	}
	cnnPath := filepath.Join(s.cfg.shared, "models", "paddleocr_cls_mobile_v2", "model.onnx")
	cnnOK := false
	if s.want("cnn") {
		onnx, err := os.ReadFile(cnnPath)
		if err == nil {
			_, err = model.LoadWith(onnx, model.Options{Quantize: true})
		}
		if err != nil {
			s.notes = append(s.notes, fmt.Sprintf("The CNN scenario (`%s`) could not run: %v.", cnnPath, err))
			s.logf("CNN scenario skipped: %v", err)
		} else {
			cnnOK = true
			if err := put("cnn", onnx, ""); err != nil {
				return err
			}
			if err := put("cnn_batched", onnx, batchedConfig(s.cfg.delays["cnn"])); err != nil {
				return err
			}
		}
	}
	if err := s.startServe(repo); err != nil {
		return err
	}
	if err := s.startBare(); err != nil {
		return err
	}
	add := func(group, model, label string, batched, bin bool, body []byte, headers map[string]string) {
		id := group + "/" + map[bool]string{false: "json", true: "binary"}[bin]
		url := s.serveURL + "/v2/models/" + model + "/infer"
		if model == "" {
			id = "bare/" + strings.TrimPrefix(id, group+"/")
			url = s.bareURL + "/v2/models/mnist/infer"
		} else {
			id += "/" + map[bool]string{false: "off", true: "on"}[batched]
		}
		sc := &scenario{name: id, method: http.MethodPost, url: url, body: body, headers: http.Header{}}
		sc.headers.Set("Content-Type", "application/json")
		for k, v := range headers {
			sc.headers.Set(k, v)
		}
		s.variants = append(s.variants, &variant{id: id, group: group, label: label, model: model, batched: batched, binary: bin, sc: sc})
	}
	addGRPC := func(group, model, label string, batched bool, req []byte) {
		id := group + "/grpc/" + map[bool]string{false: "off", true: "on"}[batched]
		sc := &scenario{name: id, method: grpcMethod, url: s.grpcAddr, body: req, grpc: &grpcTarget{addr: s.grpcAddr, conns: 1, req: req}}
		s.variants = append(s.variants, &variant{id: id, group: group, label: label, model: model, batched: batched, grpc: true, sc: sc})
	}
	if s.want("mnist") {
		pixels := make([]float32, 784)
		for i := range pixels {
			pixels[i] = float32(rng.Float64())
		}
		js := jsonBody("input", []int{1, 784}, pixels)
		bin, binH := binaryBody("input", []int{1, 784}, pixels)
		add("mnist", "", "decode-only net/http handler, JSON", false, false, js, nil)
		add("mnist", "", "decode-only net/http handler, binary", false, true, bin, binH)
		add("mnist", "mnist", "JSON, batching off", false, false, js, nil)
		add("mnist", "mnist_batched", "JSON, batching on", true, false, js, nil)
		add("mnist", "mnist", "binary, batching off", false, true, bin, binH)
		add("mnist", "mnist_batched", "binary, batching on", true, true, bin, binH)
		addGRPC("mnist", "mnist", "gRPC, batching off", false, grpcRequest("mnist", "input", []int{1, 784}, pixels))
		addGRPC("mnist", "mnist_batched", "gRPC, batching on", true, grpcRequest("mnist_batched", "input", []int{1, 784}, pixels))
	}
	if s.want("wide") {
		x := make([]float32, wideSizes[0])
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		js := jsonBody("x", []int{1, len(x)}, x)
		bin, binH := binaryBody("x", []int{1, len(x)}, x)
		add("wide", "wide", "JSON, batching off", false, false, js, nil)
		add("wide", "wide_batched", "JSON, batching on", true, false, js, nil)
		add("wide", "wide", "binary, batching off", false, true, bin, binH)
		add("wide", "wide_batched", "binary, batching on", true, true, bin, binH)
		addGRPC("wide", "wide", "gRPC, batching off", false, grpcRequest("wide", "x", []int{1, len(x)}, x))
		addGRPC("wide", "wide_batched", "gRPC, batching on", true, grpcRequest("wide_batched", "x", []int{1, len(x)}, x))
	}
	if cnnOK {
		// A text line: 3×48×192 values in [-1, 1] ((pixel/255-0.5)/0.5).
		x := make([]float32, 3*48*192)
		for i := range x {
			x[i] = float32(rng.Float64()*2 - 1)
		}
		bin, binH := binaryBody("x", []int{1, 3, 48, 192}, x)
		add("cnn", "cnn", "binary, batching off", false, true, bin, binH)
		add("cnn", "cnn_batched", "binary, batching on", true, true, bin, binH)
	}
	// Every variant must answer 200 (gRPC: OK) before anything is measured.
	for _, v := range s.variants {
		cs, closeAll, err := v.sc.callers(1, time.Minute)
		if err != nil {
			return fmt.Errorf("%s: %w", v.id, err)
		}
		status, kind := cs[0].call(context.Background())
		closeAll()
		if status != "200" && status != "OK" {
			return fmt.Errorf("%s: %s%s", v.id, status, kind)
		}
	}
	return nil
}

// jsonBody is an infer request whose values are written with 7
// significant digits, as clients serializing float32 do.
func jsonBody(name string, shape []int, x []float32) []byte {
	b := fmt.Appendf(nil, `{"inputs":[{"name":%q,"shape":%s,"datatype":"FP32","data":[`, name, shapeJSON(shape))
	for i, v := range x {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(v), 'g', 7, 32)
	}
	return append(b, "]}]}"...)
}

// binaryBody is an infer request in the binary tensor data extension,
// asking for binary outputs too, and its headers.
func binaryBody(name string, shape []int, x []float32) ([]byte, map[string]string) {
	head := fmt.Appendf(nil, `{"inputs":[{"name":%q,"shape":%s,"datatype":"FP32","parameters":{"binary_data_size":%d}}],"parameters":{"binary_data_output":true}}`,
		name, shapeJSON(shape), 4*len(x))
	b := append([]byte(nil), head...)
	for _, v := range x {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b, map[string]string{"Inference-Header-Content-Length": strconv.Itoa(len(head)), "Content-Type": "application/octet-stream"}
}

func shapeJSON(shape []int) string {
	b, _ := json.Marshal(shape)
	return string(b)
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func (s *suiteRun) startServe(repo string) error {
	bin := s.cfg.serveBin
	if bin == "" {
		bin = filepath.Join(s.tmp, "serve")
		s.logf("building cmd/serve")
		out, err := servermod.Build(bin, "./cmd/serve")
		s.log.Write(out)
		if err != nil {
			return err
		}
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	if s.grpcAddr, err = freeAddr(); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(s.tmp, "serve.log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "--addr", addr, "--grpc-addr", s.grpcAddr, "--model-repository", repo, "--max-inflight", "1024", "--log-level", "warn", "--drain-delay", "0s")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmds = append(s.cmds, cmd)
	s.serveURL = "http://" + addr
	s.logf("serve on %s, gRPC on %s (loading models)", addr, s.grpcAddr)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		resp, err := http.Get(s.serveURL + "/v2/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile.Name())
			return fmt.Errorf("serve did not become ready: %s", log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	resp, err := http.Get(s.serveURL + "/v2")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var md struct {
		Kernels string `json:"kernels"`
	}
	json.NewDecoder(resp.Body).Decode(&md)
	s.kernels = md.Kernels
	return nil
}

func (s *suiteRun) startBare() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "-bare", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = s.log
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmds = append(s.cmds, cmd)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("the decode-only server: %w", err)
	}
	s.bareURL = "http://" + strings.TrimSpace(line)
	return nil
}

func (s *suiteRun) stop() {
	for _, cmd := range s.cmds {
		if cmd.Process != nil {
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
			}
		}
	}
}

// batchCounts reads a batched model's requests and executions from /metrics.
func (s *suiteRun) batchCounts(name string) (requests, executions float64) {
	resp, err := http.Get(s.serveURL + "/metrics")
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(pmodel.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, 0
	}
	sum := func(family string) float64 {
		var n float64
		f := families[family]
		if f == nil {
			return 0
		}
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if l.GetName() == "model" && l.GetValue() == name && m.Counter != nil {
					n += m.Counter.GetValue()
				}
			}
		}
		return n
	}
	return sum("quantserve_batch_requests_total"), sum("quantserve_batch_executions_total")
}

// run measures one variant closed-loop at conc connections, or open-loop
// at rate.
func (s *suiteRun) run(v *variant, conc int, rate float64, d time.Duration) (*report, float64) {
	var r0, e0 float64
	if v.batched {
		r0, e0 = s.batchCounts(v.model)
	}
	var rep *report
	if rate > 0 {
		rep = openLoad(context.Background(), v.sc, rate, d, 30*time.Second, openMax)
	} else {
		var err error
		rep, err = load(context.Background(), &config{conns: conc, duration: d, timeout: 30 * time.Second}, v.sc)
		if err != nil {
			s.logf("%s: %v", v.id, err)
			return &report{Status: map[string]int{}, Errors: map[string]int{err.Error(): 1}}, 0
		}
	}
	mean := 0.0
	if v.batched {
		r1, e1 := s.batchCounts(v.model)
		if e1 > e0 {
			mean = (r1 - r0) / (e1 - e0)
		}
	}
	return rep, mean
}

func (s *suiteRun) measure() {
	for _, v := range s.variants {
		s.logf("warm-up %s", v.id)
		s.run(v, 8, 0, time.Second)
	}
	for round := 1; round <= s.cfg.rounds; round++ {
		for _, conc := range s.concs {
			for _, v := range s.variants {
				rep, mean := s.run(v, conc, 0, s.cfg.point)
				s.points = append(s.points, point{Variant: v.id, Conc: conc, Round: round, Report: rep, MeanBatch: mean})
				s.logf("round %d  c=%-3d %-18s %8.0f/s  p50 %7.2f ms  p99 %7.2f ms  batch %.1f  %s", round, conc, v.id,
					rep.PerSecond, rep.LatencyMS.P50, rep.LatencyMS.P99, mean, nonOK(rep))
			}
		}
	}
	// Open loop, per group: a rate the server without batching can take
	// (a fraction of its closed-loop best), then the same with batching.
	top := s.concs[len(s.concs)-1]
	for _, v := range s.variants {
		if v.model == "" || v.batched {
			continue
		}
		best := s.best(v.id, top)
		if best == nil || best.PerSecond <= 0 {
			continue
		}
		rate := math.Max(1, math.Round(best.PerSecond*s.cfg.rateFrac))
		for _, w := range s.variants {
			if w.group == v.group && w.body() == v.body() && w.model != "" {
				rep, mean := s.run(w, 0, rate, 2*s.cfg.point)
				s.points = append(s.points, point{Variant: w.id, Rate: rate, Round: 1, Report: rep, MeanBatch: mean})
				s.logf("open   %-6.0f/s %-18s %8.0f/s  p50 %7.2f ms  p99 %7.2f ms  batch %.1f  dropped %d %s", rate, w.id,
					rep.PerSecond, rep.LatencyMS.P50, rep.LatencyMS.P99, mean, rep.Dropped, nonOK(rep))
			}
		}
	}
}

// nonOK describes answers other than 200 (gRPC: OK) and errors, "" if
// none.
func nonOK(r *report) string {
	var parts []string
	for code, n := range r.Status {
		if code != "200" && code != "OK" {
			parts = append(parts, fmt.Sprintf("%s×%d", code, n))
		}
	}
	for kind, n := range r.Errors {
		parts = append(parts, fmt.Sprintf("%s×%d", kind, n))
	}
	return strings.Join(parts, " ")
}

// best returns the round of a closed-loop point with the most requests per
// second.
func (s *suiteRun) best(id string, conc int) *report {
	p := s.bestPoint(id, conc)
	if p == nil {
		return nil
	}
	return p.Report
}

func (s *suiteRun) bestPoint(id string, conc int) *point {
	var b *point
	for i := range s.points {
		p := &s.points[i]
		if p.Variant == id && p.Conc == conc && p.Rate == 0 && (b == nil || p.Report.PerSecond > b.Report.PerSecond) {
			b = p
		}
	}
	return b
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], ", ")
}
