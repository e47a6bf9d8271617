package api

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/repository"
)

// TestLineRate: at most limit lines a second go through, the first ones
// of each second; the first line through after some were held back says
// how many; limit 0 lets every line through.
func TestLineRate(t *testing.T) {
	l := newLineRate(2)
	t0 := time.Unix(1_700_000_000, 0)
	for i, want := range []bool{true, true, false, false, false} {
		if skipped, ok := l.allow(t0.Add(time.Duration(i) * time.Millisecond)); ok != want || skipped != 0 {
			t.Errorf("line %d of the first second: %v (skipped %d), want %v", i, ok, skipped, want)
		}
	}
	if skipped, ok := l.allow(t0.Add(time.Second)); !ok || skipped != 3 {
		t.Errorf("first line of the next second: %v, skipped %d; want true, 3", ok, skipped)
	}
	if skipped, ok := l.allow(t0.Add(1500 * time.Millisecond)); !ok || skipped != 0 {
		t.Errorf("second line of the next second: %v, skipped %d; want true, 0", ok, skipped)
	}
	if _, ok := l.allow(t0.Add(1900 * time.Millisecond)); ok {
		t.Error("third line of the next second went through")
	}
	every := newLineRate(-1)
	for i := range 1000 {
		if skipped, ok := every.allow(t0); !ok || skipped != 0 {
			t.Fatalf("line %d held back without a limit", i)
		}
	}
	if newLineRate(0).limit != DefaultRequestLogRate {
		t.Errorf("rate 0 gives limit %d, want DefaultRequestLogRate", newLineRate(0).limit)
	}
}

// TestLineRateConcurrent: lines from many goroutines in one second, exactly
// limit go through, and every line held back is counted once, in a later
// line's skipped or still waiting.
func TestLineRateConcurrent(t *testing.T) {
	const limit, workers, each = 100, 8, 1000
	l := newLineRate(limit)
	now := time.Unix(1_700_000_000, 0)
	var through, reported atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				if skipped, ok := l.allow(now); ok {
					through.Add(1)
					reported.Add(skipped)
				}
			}
		})
	}
	wg.Wait()
	if through.Load() != limit {
		t.Errorf("%d lines went through, want %d", through.Load(), limit)
	}
	if held := reported.Load() + l.skipped.Load(); held != workers*each-limit {
		t.Errorf("%d lines counted as held back, want %d", held, workers*each-limit)
	}
}

// TestRequestLogRate serves requests over real HTTP one after another on
// one connection (each request's line is written before the next request
// is served): with a rate of 1, at most one line of a successful request
// is written per second the requests spanned, while every failed request
// and every probe (debug level) has its line; with a negative rate,
// every request has its line.
func TestRequestLogRate(t *testing.T) {
	body := inferBody("input", "FP32", []int{1, 784}, make([]float32, 784))
	for _, rate := range []int{1, -1} {
		var logs syncBuffer
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		repo := repository.New(serverOptions(), repository.Source{Name: "mnist", Version: 1, ONNX: defaultmodel.ONNX})
		srv := httptest.NewServer(NewRouter(Options{Repository: repo, Logger: log, RequestLogRate: rate}))
		client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
		send := func(method, path, body string) int {
			req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode
		}
		const n = 6
		first := time.Now().Unix()
		for range n {
			if code := send("POST", "/v2/models/mnist/infer", body); code != 200 {
				t.Fatalf("infer: %d", code)
			}
		}
		seconds := int(time.Now().Unix()-first) + 1
		for range 3 {
			send("GET", "/v2/health/live", "")
		}
		if code := send("POST", "/v2/models/nope/infer", body); code != 404 {
			t.Fatalf("unknown model: %d", code)
		}
		got := waitLog(t, &logs, 1, "level=INFO msg=request method=POST route=/v2/models/{model}/infer path=/v2/models/nope/infer", "status=404")
		srv.Close()
		client.CloseIdleConnections()
		lines := strings.Count(got, "path=/v2/models/mnist/infer model=mnist version=1 status=200")
		switch {
		case rate < 0 && lines != n:
			t.Errorf("rate %d: %d lines of %d successful requests, want all\n%s", rate, lines, n, got)
		case rate > 0 && (lines < 1 || lines > seconds):
			t.Errorf("rate %d: %d lines of %d successful requests over %d seconds, want 1 to %d\n%s", rate, lines, n, seconds, seconds, got)
		}
		if probes := strings.Count(got, "level=DEBUG msg=request method=GET route=/v2/health/live"); probes != 3 {
			t.Errorf("rate %d: %d probe lines, want 3\n%s", rate, probes, got)
		}
	}
}
