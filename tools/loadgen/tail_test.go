package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/quantserve/quantserve/oip"
)

// tailServer is a real HTTP server on 127.0.0.1 with the two routes -tail
// uses; it records the order in which the endpoints were hit and checks
// every infer body.
type tailServer struct {
	mu       sync.Mutex
	segments []string // runs of consecutive requests to one path
	count    map[string]int
	badBody  int
	name     string      // with shared: this server's name in it
	shared   *tailServer // also record there, as name + path
}

func (s *tailServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.Path
	switch key {
	case "GET /v2/health/live":
	case "POST /v2/models/mnist/infer":
		body, _ := io.ReadAll(r.Body)
		req, err := oip.DecodeInferRequest(body)
		if err != nil || len(req.Inputs) != 1 || req.Inputs[0].Tensor.Len() != 784 {
			s.mu.Lock()
			s.badBody++
			s.mu.Unlock()
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Write([]byte(`{"outputs":[]}`))
	default:
		w.WriteHeader(http.StatusNotFound)
	}
	s.record(key)
	if s.shared != nil {
		s.shared.record(s.name + " " + key)
	}
}

func (s *tailServer) record(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.segments); n == 0 || s.segments[n-1] != key {
		s.segments = append(s.segments, key)
	}
	s.count[key]++
}

// TestTailTwoServers: with -tail-b the rounds go health, infer on the
// first server, then on the second, and each server has its own pooled
// report.
func TestTailTwoServers(t *testing.T) {
	all := &tailServer{count: map[string]int{}}
	a := &tailServer{count: map[string]int{}, name: "a", shared: all}
	b := &tailServer{count: map[string]int{}, name: "b", shared: all}
	sa, sb := httptest.NewServer(a), httptest.NewServer(b)
	defer sa.Close()
	defer sb.Close()
	var out bytes.Buffer
	err := run([]string{"-tail", "-c", "2", "-d", "400ms", "-tail-rounds", "2", "-tail-warm", "0s",
		"-url", sa.URL + "/v2/models/mnist/infer", "-tail-b", sb.URL + "/v2/models/mnist/infer", "-json"}, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var rep tailReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	round := []string{"a GET /v2/health/live", "a POST /v2/models/mnist/infer", "b GET /v2/health/live", "b POST /v2/models/mnist/infer"}
	if want := append(slices.Clone(round), round...); !slices.Equal(all.segments, want) {
		t.Errorf("the servers were loaded in the order %v, want %v", all.segments, want)
	}
	if rep.B == nil || rep.B.Infer.URL != sb.URL+"/v2/models/mnist/infer" || rep.B.Health.URL != sb.URL+"/v2/health/live" ||
		rep.Infer.URL != sa.URL+"/v2/models/mnist/infer" || rep.B.Infer.Requests == 0 || rep.B.Health.Requests == 0 ||
		rep.B.Infer.Requests > b.count["POST /v2/models/mnist/infer"] || rep.Infer.Requests > a.count["POST /v2/models/mnist/infer"] {
		t.Fatalf("report %s", out.String())
	}
	if want := rep.B.Infer.LatencyMS.P99 / rep.B.Health.LatencyMS.P99; rep.B.Ratio != want {
		t.Errorf("b's ratio %v, want %v", rep.B.Ratio, want)
	}
}

// TestTailAlternatesAndPools runs -tail against a real server: the two
// endpoints are loaded in turn, never together, round by round; every
// answer the server gave is in its endpoint's pooled report; the ratio is
// the two p99s'.
func TestTailAlternatesAndPools(t *testing.T) {
	for _, warm := range []string{"0s", "100ms"} {
		ts := &tailServer{count: map[string]int{}}
		srv := httptest.NewServer(ts)
		var out bytes.Buffer
		args := []string{"-tail", "-c", "3", "-d", "600ms", "-tail-rounds", "3", "-tail-warm", warm,
			"-url", srv.URL + "/v2/models/mnist/infer", "-json"}
		if err := run(args, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		srv.Close()
		var rep tailReport
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("%v: %s", err, out.String())
		}
		phases := 2 * 3
		if warm != "0s" {
			phases += 2
		}
		if len(ts.segments) != phases {
			t.Errorf("warm %s: the server saw %d runs of one endpoint (%v), want %d", warm, len(ts.segments), ts.segments, phases)
		}
		for i, s := range ts.segments {
			want := "GET /v2/health/live"
			if i%2 == 1 {
				want = "POST /v2/models/mnist/infer"
			}
			if s != want {
				t.Errorf("warm %s: run %d is %s, want %s", warm, i, s, want)
			}
		}
		if ts.badBody != 0 {
			t.Errorf("%d infer bodies did not decode to 784 values", ts.badBody)
		}
		in, h := rep.Infer, rep.Health
		if rep.Rounds != 3 || rep.Connections != 3 || rep.PhaseSeconds != 0.1 || rep.Bar != 2 {
			t.Errorf("report %+v", rep)
		}
		// Warm-up answers are not counted, nor those of the requests in
		// flight when a phase ended (at most -c a phase); every other is.
		if served := ts.count["POST /v2/models/mnist/infer"] + ts.count["GET /v2/health/live"]; warm == "0s" &&
			(in.Requests > ts.count["POST /v2/models/mnist/infer"] || h.Requests > ts.count["GET /v2/health/live"] || served > in.Requests+h.Requests+3*phases) {
			t.Errorf("reported %d infer, %d health; the server answered %v", in.Requests, h.Requests, ts.count)
		}
		if in.Requests == 0 || h.Requests == 0 || in.Status["200"] != in.Requests || h.Status["200"] != h.Requests || len(in.Errors)+len(h.Errors) != 0 {
			t.Errorf("infer %+v, health %+v", in, h)
		}
		if in.Method != "POST" || h.Method != "GET" || h.URL != srv.URL+"/v2/health/live" {
			t.Errorf("infer %s %s, health %s %s", in.Method, in.URL, h.Method, h.URL)
		}
		for _, l := range []latencies{in.LatencyMS, h.LatencyMS} {
			if !(0 < l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max) {
				t.Errorf("latencies %+v", l)
			}
		}
		if want := in.LatencyMS.P99 / h.LatencyMS.P99; rep.Ratio != want {
			t.Errorf("ratio %v, want %v / %v", rep.Ratio, in.LatencyMS.P99, h.LatencyMS.P99)
		}
	}
}

func TestTailText(t *testing.T) {
	ts := &tailServer{count: map[string]int{}}
	srv := httptest.NewServer(ts)
	defer srv.Close()
	var out bytes.Buffer
	if err := run([]string{"-tail", "-c", "2", "-d", "200ms", "-tail-rounds", "2", "-tail-warm", "0s", "-url", srv.URL + "/v2/models/mnist/infer"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 rounds", "infer   POST " + srv.URL, "health  GET " + srv.URL + "/v2/health/live", "p99", "infer p99 / health p99 = ", "2x bar"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
}

func TestTailRefuses(t *testing.T) {
	for _, args := range [][]string{
		{"-tail", "-grpc", "127.0.0.1:1"},
		{"-tail", "-rate", "10"},
		{"-tail", "-tail-rounds", "0"},
		{"-tail", "-d", "1ns", "-tail-rounds", "2"},
		{"-tail", "-tail-health", "http://10.0.0.1/v2/health/live"},
		{"-tail", "-url", "http://example.com/v2/models/mnist/infer"},
		{"-tail", "-tail-b", "http://example.com/v2/models/mnist/infer"},
	} {
		if err := run(args, io.Discard, io.Discard); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
