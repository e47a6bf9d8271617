package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
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
	body := mnistBody(rand.New(rand.NewPCG(1, 2)))
	if !bytes.HasPrefix(body, []byte(`{"inputs":[{"name":"input","shape":[1,784]`)) || bytes.Count(body, []byte(",")) < 783 {
		t.Errorf("mnist body %.100s", body)
	}
}
