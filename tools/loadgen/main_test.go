package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	_ "image/png"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quantserve/quantserve/oip"
)

// TestLoadReportsWhatTheServerSaw runs a short load against a real HTTP
// server and checks the report against the server's own count.
func TestLoadReportsWhatTheServerSaw(t *testing.T) {
	var served atomic.Int64
	var bodies atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if string(b) == "ping" {
			bodies.Add(1)
		}
		if served.Add(1)%10 == 0 {
			w.WriteHeader(503)
		}
	}))
	defer srv.Close()
	body := filepath.Join(t.TempDir(), "body")
	os.WriteFile(body, []byte("ping"), 0o644)
	var out bytes.Buffer
	err := run([]string{"-scenario", "custom", "-url", srv.URL, "-body", body, "-c", "4", "-d", "300ms", "-pid", strconv.Itoa(os.Getpid()), "-sample", "50ms", "-json"}, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	total := rep.Status["200"] + rep.Status["503"]
	if rep.Requests == 0 || total != rep.Requests || rep.Method != "POST" || rep.BodyBytes != 4 {
		t.Errorf("report %+v", rep)
	}
	// the server may have answered a last request the run's end cut
	if int64(rep.Requests) > served.Load() || served.Load() > int64(rep.Requests+4) || bodies.Load() != served.Load() {
		t.Errorf("reported %d, server answered %d (%d with the body)", rep.Requests, served.Load(), bodies.Load())
	}
	if l := rep.LatencyMS; !(0 < l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max) {
		t.Errorf("latencies %+v", l)
	}
	if m := rep.Memory; m == nil || m.BeforeMiB <= 0 || m.AfterMiB <= 0 || m.Samples < 2 || m.PeakMiB < m.MaxMiB {
		t.Errorf("memory %+v", rep.Memory)
	}
	if len(rep.Errors) != 0 {
		t.Errorf("errors %v", rep.Errors)
	}
	out.Reset()
	if err := run([]string{"-scenario", "custom", "-url", srv.URL, "-c", "1", "-d", "50ms"}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "GET "+srv.URL) || !strings.Contains(out.String(), "p99") {
		t.Errorf("text report: %v\n%s", err, out.String())
	}
}

func TestOnlyLoopbackTargets(t *testing.T) {
	for _, u := range []string{"http://10.0.0.1/", "http://example.com/"} {
		if err := run([]string{"-scenario", "custom", "-url", u, "-d", "1ms"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("%s: %v", u, err)
		}
	}
	body, pixels := mnistInput(rand.New(rand.NewPCG(1, 2)))
	if !bytes.HasPrefix(body, []byte(`{"inputs":[{"name":"input","shape":[1,784]`)) || bytes.Count(body, []byte(",")) < 783 {
		t.Errorf("mnist body %.100s", body)
	}
	// the gRPC request's raw values are the ones the JSON body's text decodes to
	req, err := oip.DecodeInferRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	if got := req.Inputs[0].Tensor.Data.([]float32); !slices.Equal(got, pixels) {
		t.Errorf("mnist values differ from the body's: %v... != %v...", got[:4], pixels[:4])
	}
}

// TestOpenLoopSendsAtTheRate runs an open loop against a real HTTP server:
// every request due is either answered or counted as dropped, and the
// server saw each one sent.
func TestOpenLoopSendsAtTheRate(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served.Add(1) }))
	defer srv.Close()
	sc := &scenario{name: "custom", method: http.MethodGet, url: srv.URL, headers: http.Header{}}
	rep := openLoad(context.Background(), sc, 200, 500*time.Millisecond, 10*time.Second, 64)
	if rep.Requests+rep.Dropped != 100 || len(rep.Errors) != 0 || rep.Status["200"] != rep.Requests || int64(rep.Requests) != served.Load() {
		t.Errorf("report %+v; server saw %d", rep, served.Load())
	}
	if rep.Rate != 200 || rep.LatencyMS.P50 <= 0 || rep.LatencyMS.P99 < rep.LatencyMS.P50 {
		t.Errorf("rate %v, latencies %+v", rep.Rate, rep.LatencyMS)
	}
}

// TestSuiteBodiesDecode: the suite's JSON and binary bodies decode, through
// the decode-only handler, to the tensor they were made from; a broken
// body is a 400.
func TestSuiteBodiesDecode(t *testing.T) {
	x := []float32{0.5, -1.25, 3, 1e-7, 123456.7, 0}
	js := jsonBody("x", []int{2, 3}, x)
	bin, headers := binaryBody("x", []int{2, 3}, x)
	for name, body := range map[string][]byte{"json": js, "binary": bin} {
		var req *oip.InferRequest
		var err error
		if name == "json" {
			req, err = oip.DecodeInferRequest(body)
		} else {
			n, _ := strconv.Atoi(headers["Inference-Header-Content-Length"])
			req, err = oip.DecodeBinaryInferRequest(body[:n], body[n:])
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := req.Inputs[0].Tensor
		if got.Shape[0] != 2 || got.Shape[1] != 3 {
			t.Fatalf("%s: shape %v", name, got.Shape)
		}
		for i, v := range got.Data.([]float32) {
			want := x[i]
			if name == "json" { // 7 significant digits
				want = float32(mustParse(t, strconv.FormatFloat(float64(x[i]), 'g', 7, 32)))
			}
			if v != want {
				t.Errorf("%s: x[%d] = %v, want %v", name, i, v, want)
			}
		}
		rec := httptest.NewRecorder()
		req2 := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		for k, v := range headers {
			if name == "binary" {
				req2.Header.Set(k, v)
			}
		}
		bareHandler(rec, req2)
		if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), bareAnswer) {
			t.Errorf("%s: decode-only handler answered %d %s", name, rec.Code, rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	bareHandler(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"inputs":[{"name":"x"`)))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("broken body: %d", rec.Code)
	}
}

func mustParse(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 32)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestSuiteReportFromResults writes a report and its charts from saved
// results: the targets are computed from the points, the tables list
// them, and the charts are PNG images.
func TestSuiteReportFromResults(t *testing.T) {
	dir := t.TempDir()
	pt := func(id string, conc int, rps, p50, p99 float64) point {
		return point{Variant: id, Conc: conc, Round: 1, Report: &report{PerSecond: rps, Status: map[string]int{"200": 10}, Errors: map[string]int{},
			LatencyMS: latencies{P50: p50, P90: p50, P99: p99, Max: p99}}}
	}
	saved := savedRun{Started: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), Machine: machine{CPU: "test CPU", CPUs: 2, GOMAXPROCS: 2, Go: "go"},
		Kernels: "avx2", Point: time.Second, Rounds: 1, Concs: []int{8, 64},
		Variants: []savedVariant{{"wide/binary/off", "wide", "binary, batching off", "wide", false, true, false}, {"wide/binary/on", "wide", "binary, batching on", "wide_batched", true, true, false},
			{"wide/grpc/off", "wide", "gRPC, batching off", "wide", false, false, true}},
		Points: []point{pt("wide/binary/off", 8, 100, 10, 20), pt("wide/binary/on", 8, 150, 8, 16), pt("wide/binary/off", 64, 200, 30, 90), pt("wide/binary/on", 64, 700, 20, 40),
			pt("wide/grpc/off", 8, 120, 9, 18), pt("wide/grpc/off", 64, 300, 25, 80)}}
	b, _ := json.Marshal(saved)
	results := filepath.Join(dir, "results.json")
	os.WriteFile(results, b, 0o644)
	out := filepath.Join(dir, "B.md")
	if err := run([]string{"-suite", "-from", results, "-out", out, "-charts", "charts"}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| wide model, 64 concurrent batch-1 clients, binary: batching on / off | ≥ 3× | 3.50× | met | 700 / 200 req/s |",
		"| binary, batching on | 64 | 700 | 20.00 | 20.00 | 40.00 |",
		"| gRPC, batching off | 64 | 300 | 25.00 | 25.00 | 80.00 |",
		"| (reference) Wide model (2 × 4096×4096 int8), 64 clients, batching off: gRPC / HTTP binary bodies | — | 1.50× |  | 300 / 200 req/s |",
		"batch-1 requests of 4,096 floats" + grpcTitle, "calls outstanding on it",
		"test CPU", "charts/wide-throughput.png",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	for _, name := range []string{"wide-throughput.png", "wide-p99.png"} {
		f, err := os.Open(filepath.Join(dir, "charts", name))
		if err != nil {
			t.Fatal(err)
		}
		cfg, format, err := image.DecodeConfig(f)
		f.Close()
		if err != nil || format != "png" || cfg.Width < 300 {
			t.Errorf("%s: %v %s %+v", name, err, format, cfg)
		}
	}
}
