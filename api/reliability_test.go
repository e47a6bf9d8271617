package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"

	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/repository"
	"github.com/quantserve/quantserve/tensor"
)

// metrics maps a metric family to the sum of its samples.
type metrics map[string]float64

func scrape(t *testing.T, url string) metrics {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(pmodel.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	m := metrics{}
	for name, f := range families {
		for _, s := range f.Metric {
			switch {
			case s.Gauge != nil:
				m[name] += s.Gauge.GetValue()
			case s.Counter != nil:
				m[name] += s.Counter.GetValue()
			}
		}
	}
	return m
}

// waitMetric scrapes /metrics until cond holds; the test's deadline is the
// failure condition.
func waitMetric(t *testing.T, url string, cond func(metrics) bool) metrics {
	t.Helper()
	for {
		if m := scrape(t, url); cond(m) {
			return m
		}
	}
}

// trickle opens a connection, sends the headers of a request announcing a
// body of n bytes and the first part of that body, and leaves it there.
func trickle(t *testing.T, url, path string, n int, first string) net.Conn {
	t.Helper()
	u, _ := neturl.Parse(url)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, u.Host, n, first)
	return c
}

// TestSlowClientsDoNotLockOutInference: 70 clients send the headers of an
// infer and then nothing more of their bodies, more than --max-inflight
// (64). A normal infer is still answered 200, and so are a model unload and
// a load of another model (the slow clients hold no model).
func TestSlowClientsDoNotLockOutInference(t *testing.T) {
	id := onnxbuild.Identity(tensor.Float32, []int{-1})
	dir := writeRepo(t, map[string]map[int][]byte{"mnist": {1: defaultmodel.ONNX}, "a": {1: id}, "b": {1: id}}, nil)
	url := newTestHTTPServer(t, Options{Repository: openRepo(t, dir), AdminToken: adminToken, Logger: quietLog()})
	body := inferBody("input", "FP32", []int{1, 784}, make([]float32, 784))
	for i := 0; i < 70; i++ {
		trickle(t, url, "/v2/models/mnist/infer", len(body), body[:1])
	}
	slow := trickle(t, url, "/v2/models/a/infer", 100, "{")
	waitMetric(t, url, func(m metrics) bool { return m["quantserve_receiving"]+m["quantserve_inflight"] >= 64 })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	post := func(path, body string, header ...string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, "POST", url+path, strings.NewReader(body))
		for i := 0; i < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, b := post("/v2/models/mnist/infer", body); status != 200 {
		t.Errorf("infer beside 70 slow clients: %d %s", status, b)
	}
	auth := []string{"Authorization", "Bearer " + adminToken}
	if status, b := post("/v2/repository/models/a/unload", "", auth...); status != 200 {
		t.Errorf("unload of a model a slow client is sending to: %d %s", status, b)
	}
	if status, b := post("/v2/repository/models/b/load", "", auth...); status != 200 {
		t.Errorf("load of another model: %d %s", status, b)
	}
	// the slow client's request, once whole, finds its model gone
	rest := `"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}]}`
	io.WriteString(slow, rest+strings.Repeat(" ", 99-len(rest)))
	resp, err := http.ReadResponse(bufio.NewReader(slow), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 404 {
		t.Errorf("the slow request on the unloaded model: %d", resp.StatusCode)
	}
}

// TestBodyDeadline: a body that stops arriving is answered 408 once the
// body deadline passes, and the client reads the answer.
func TestBodyDeadline(t *testing.T) {
	url := newTestHTTPServer(t, Options{Repository: repository.New(serverOptions(), repository.Source{Name: "mnist", Version: 1, ONNX: defaultmodel.ONNX}),
		IOTimeout: 200 * time.Millisecond, Logger: quietLog()})
	c := trickle(t, url, "/v2/models/mnist/infer", 1000, `{"inputs"`)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	wantError(t, response{resp.StatusCode, resp.Header, b, resp.Close}, 408, "--request-timeout")
}

// TestUnreadResponseHoldsNoSlot: with --max-inflight 1, a client that
// never reads its (large) answer does not keep the next request out.
func TestUnreadResponseHoldsNoSlot(t *testing.T) {
	url := newTestHTTPServer(t, Options{Repository: repository.New(serverOptions(), repository.Source{Name: "mnist", Version: 1, ONNX: defaultmodel.ONNX}),
		MaxInFlight: 1, Logger: quietLog()})
	// a [2000,1]·[1,2000] product: 4M elements of answer (tens of MB of
	// JSON), more than the socket buffers hold; the body is padded so the
	// answer is within its size bound
	ones := func(n int) string { return strings.TrimSuffix(strings.Repeat("1.2345678,", n), ",") }
	body := fmt.Sprintf(`{"a":{"shape":[2000,1],"datatype":"FP32","data":[%s]},"b":{"shape":[1,2000],"datatype":"FP32","data":[%s]}}`, ones(2000), ones(2000))
	body += strings.Repeat(" ", 4_000_000-len(body))
	c := trickle(t, url, "/v1/ops/matmul", len(body), body)
	br := bufio.NewReader(c)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("status line %q, %v", line, err)
	}
	// the answer is being written and nobody reads it
	if r := do(t, "POST", url+"/v2/models/mnist/infer", inferBody("input", "FP32", []int{1, 784}, make([]float32, 784))); r.status != 200 {
		t.Errorf("beside a client not reading its answer: %d %s", r.status, r.body)
	}
}

// TestBodyBufferGrowsWithTheBytes: bodies that announce 60 MiB and send a
// few bytes hold a few KiB each, not what they announced.
func TestBodyBufferGrowsWithTheBytes(t *testing.T) {
	url := newTestHTTPServer(t, Options{Repository: repository.New(serverOptions(), repository.Source{Name: "mnist", Version: 1, ONNX: defaultmodel.ONNX}),
		MaxInflightBytes: 4 << 20, Logger: quietLog()})
	for i := 0; i < 16; i++ {
		trickle(t, url, "/v2/models/mnist/infer", 60<<20, `{"inputs":`)
	}
	m := waitMetric(t, url, func(m metrics) bool { return m["quantserve_receiving"]+m["quantserve_inflight"] >= 16 })
	if held := m["quantserve_inflight_bytes"]; held > 16*firstChunk {
		t.Errorf("16 bodies of 10 bytes hold %v bytes", held)
	}
	if r := do(t, "POST", url+"/v2/models/mnist/infer", inferBody("input", "FP32", []int{1, 784}, make([]float32, 784))); r.status != 200 {
		t.Errorf("beside them: %d %s", r.status, r.body)
	}
}

// writeAllThenRead writes a whole request before reading anything, as
// simple clients (Python's http.client) do, and returns the response.
func writeAllThenRead(t *testing.T, url, head string, body []byte) response {
	t.Helper()
	u, _ := neturl.Parse(url)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(body); err != nil {
		t.Fatalf("writing the body: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return response{resp.StatusCode, resp.Header, b, resp.Close}
}

// TestOversizedBodyWrittenWholeReadsThe413: a client that writes its
// whole oversized body before reading gets the 413, announced or chunked.
func TestOversizedBodyWrittenWholeReadsThe413(t *testing.T) {
	url := newTestHTTPServer(t, Options{Repository: repository.New(serverOptions(), repository.Source{Name: "mnist", Version: 1, ONNX: defaultmodel.ONNX}),
		MaxBodyBytes: 1 << 20, Logger: quietLog()})
	body := bytes.Repeat([]byte(" "), 8<<20)
	r := writeAllThenRead(t, url, fmt.Sprintf("POST /v2/models/mnist/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", len(body)), body)
	wantError(t, r, 413, "--max-body-bytes")
	var chunked bytes.Buffer
	for i := 0; i < 8; i++ {
		fmt.Fprintf(&chunked, "%x\r\n%s\r\n", 1<<20, body[:1<<20])
	}
	chunked.WriteString("0\r\n\r\n")
	r = writeAllThenRead(t, url, "POST /v2/models/mnist/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", chunked.Bytes())
	wantError(t, r, 413, "--max-body-bytes")
}

// TestMemoryBudget: bodies and decoded tensors count against
// --max-inflight-bytes. A request that does not fit beside those in flight
// gets 503 with Retry-After (read by a client that writes its whole body
// first); once they finish it is served; one that can never fit gets 413.
func TestMemoryBudget(t *testing.T) {
	url := newTestHTTPServer(t, Options{Repository: repository.New(serverOptions(), repository.Source{Name: "mnist", Version: 1, ONNX: defaultmodel.ONNX}),
		MaxInflightBytes: 1 << 20, MaxBodyBytes: 4 << 20, Logger: quietLog()})
	pad := func(s string, n int) string { return s + strings.Repeat(" ", n-len(s)) }
	good := inferBody("input", "FP32", []int{1, 784}, make([]float32, 784))
	// holds a 400 KiB buffer while the rest of its body is awaited
	held := trickle(t, url, "/v2/models/mnist/infer", 400<<10, pad(good, 300<<10))
	waitMetric(t, url, func(m metrics) bool { return m["quantserve_inflight_bytes"] >= 400<<10 })
	big := pad(good, 700<<10)
	head := fmt.Sprintf("POST /v2/models/mnist/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(big))
	r := writeAllThenRead(t, url, head, []byte(big))
	wantError(t, r, 503, "--max-inflight-bytes")
	if r.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	if _, err := io.WriteString(held, strings.Repeat(" ", 100<<10)); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(bufio.NewReader(held), nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the held request: %v %v", resp, err)
	}
	if r := writeAllThenRead(t, url, head, []byte(big)); r.status != 200 {
		t.Errorf("once the budget is free: %d %s", r.status, r.body)
	}
	m := scrape(t, url)
	if m["quantserve_rejected_total"] < 1 || m["quantserve_inflight_bytes"] != 0 {
		t.Errorf("rejected %v, bytes held after all finished %v", m["quantserve_rejected_total"], m["quantserve_inflight_bytes"])
	}
	huge := pad(good, 3<<20)
	r = doWith(t, "POST", url+"/v2/models/mnist/infer", huge, nil)
	wantError(t, r, 413, "--max-inflight-bytes")
}

// TestZeroSizeShapes: batch 0 and zero-length dimensions are answered as
// ONNX defines them (an empty output of the right shape), never 500.
func TestZeroSizeShapes(t *testing.T) {
	url := embeddedServer(t)
	r := do(t, "POST", url+"/v2/models/mnist/infer", inferBody("input", "FP32", []int{0, 784}, []float32{}))
	if r.status != 200 || !strings.Contains(string(r.body), `"name":"scores","datatype":"FP32","shape":[0,10],"data":[]`) {
		t.Errorf("batch 0: %d %s", r.status, r.body)
	}
	hdr := `{"inputs":[{"name":"input","shape":[0,784],"datatype":"FP32","parameters":{"binary_data_size":0}}],"parameters":{"binary_data_output":true}}`
	r = doWith(t, "POST", url+"/v2/models/mnist/infer", hdr, map[string]string{binaryHeader: fmt.Sprint(len(hdr))})
	if r.status != 200 || r.header.Get(binaryHeader) != fmt.Sprint(len(r.body)) || !strings.Contains(string(r.body), `"shape":[0,10],"parameters":{"binary_data_size":0}`) {
		t.Errorf("batch 0, binary: %d %q", r.status, r.body)
	}
	r = do(t, "POST", url+"/v2/models/mnist/infer", inferBody("input", "FP32", []int{}, []float32{1}))
	wantError(t, r, 400, "rank")
	tensorOf := func(shape []int) string {
		n := 1
		for _, d := range shape {
			n *= d
		}
		return mustJSON(map[string]any{"shape": shape, "datatype": "FP32", "data": make([]float32, n)})
	}
	for _, c := range []struct {
		path   string
		a, b   []int
		output string
	}{
		{"/v1/ops/matmul", []int{0, 3}, []int{3, 2}, `"shape":[0,2],"data":[]`},
		{"/v1/ops/matmul", []int{2, 0}, []int{0, 3}, `"shape":[2,3],"data":[0,0,0,0,0,0]`},
		{"/v1/ops/matmul", []int{2, 3}, []int{3, 0}, `"shape":[2,0],"data":[]`},
		{"/v1/ops/qmatmul", []int{0, 3}, []int{3, 2}, `"shape":[0,2],"data":[]`},
		{"/v1/ops/qmatmul", []int{2, 0}, []int{0, 3}, `"shape":[2,3],"data":[0,0,0,0,0,0]`},
		{"/v1/ops/qmatmul", []int{2, 3}, []int{3, 0}, `"shape":[2,0],"data":[]`},
	} {
		r := do(t, "POST", url+c.path, fmt.Sprintf(`{"a":%s,"b":%s}`, tensorOf(c.a), tensorOf(c.b)))
		if r.status != 200 || !strings.Contains(string(r.body), c.output) {
			t.Errorf("%s %v×%v: %d %s", c.path, c.a, c.b, r.status, r.body)
		}
	}
	for _, scheme := range []string{"per_channel", "per_block", "per_tensor"} {
		for _, shape := range [][]int{{0, 3}, {3, 0}, {0, 0}} {
			r := do(t, "POST", url+"/v1/ops/quantize", fmt.Sprintf(`{"tensor":%s,"scheme":%q}`, tensorOf(shape), scheme))
			if r.status != 200 || !strings.Contains(string(r.body), fmt.Sprintf(`"values":{"name":"values","datatype":"INT8","shape":[%d,%d],"data":[]`, shape[0], shape[1])) {
				t.Errorf("quantize %v %s: %d %s", shape, scheme, r.status, r.body)
			}
		}
	}
	if m := scrape(t, url); m["quantserve_panics_total"] != 0 {
		t.Errorf("%v panics", m["quantserve_panics_total"])
	}
}

// TestPanicIs500CountedAndLoggedOnce: a panic in a handler is a 500 JSON
// error, counted in /metrics by site; its stack is logged once a minute.
func TestPanicIs500CountedAndLoggedOnce(t *testing.T) {
	var logs syncBuffer
	s := newServer(Options{Repository: repository.New(serverOptions()), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.handle(s.metrics))
	mux.Handle("/boom", s.observe(s.recoverer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var xs []int
		_ = xs[len(r.URL.Query().Get("i"))+3] // index out of range
	}))))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	for i := 0; i < 3; i++ {
		wantError(t, do(t, "GET", srv.URL+"/boom", ""), 500, "internal error", "panic at", "index out of range")
	}
	m := scrape(t, srv.URL)
	if m["quantserve_panics_total"] != 3 {
		t.Errorf("quantserve_panics_total = %v, want 3", m["quantserve_panics_total"])
	}
	got := logs.String()
	if n := strings.Count(got, "panic serving request"); n != 1 {
		t.Errorf("%d stacks logged for 3 panics at one site:\n%s", n, got)
	}
	if !strings.Contains(got, "reliability_test.go") || !strings.Contains(got, "goroutine") {
		t.Errorf("the log names no site or stack:\n%s", got)
	}
}

func TestPanicLogOncePerMinutePerSite(t *testing.T) {
	var l panicLog
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		site      string
		at        time.Duration
		ok        bool
		suppresed int
	}{
		{"a", 0, true, 0}, {"a", time.Second, false, 0}, {"b", 2 * time.Second, true, 0},
		{"a", 59 * time.Second, false, 0}, {"a", 61 * time.Second, true, 2},
	} {
		n, ok := l.allow(c.site, t0.Add(c.at))
		if ok != c.ok || n != c.suppresed {
			t.Errorf("%s at %v: %d, %v; want %d, %v", c.site, c.at, n, ok, c.suppresed, c.ok)
		}
	}
}

// TestDrainingReadiness: while draining, readiness is 503 and responses
// close their connections; work is still served.
func TestDrainingReadiness(t *testing.T) {
	var draining bool
	var mu sync.Mutex
	url := newTestHTTPServer(t, Options{Repository: repository.New(serverOptions(), repository.Source{Name: "mnist", Version: 1, ONNX: defaultmodel.ONNX}),
		Logger: quietLog(), Draining: func() bool { mu.Lock(); defer mu.Unlock(); return draining }})
	if r := do(t, "GET", url+"/v2/health/ready", ""); r.status != 200 || r.close {
		t.Fatalf("ready before draining: %d %v", r.status, r.header)
	}
	mu.Lock()
	draining = true
	mu.Unlock()
	r := do(t, "GET", url+"/v2/health/ready", "")
	var body map[string]bool
	json.Unmarshal(r.body, &body)
	if r.status != 503 || body["ready"] || !r.close {
		t.Errorf("ready while draining: %d %s %v", r.status, r.body, r.header)
	}
	if r := do(t, "POST", url+"/v2/models/mnist/infer", inferBody("input", "FP32", []int{1, 784}, make([]float32, 784))); r.status != 200 || !r.close {
		t.Errorf("infer while draining: %d %v", r.status, r.header)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent log writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
