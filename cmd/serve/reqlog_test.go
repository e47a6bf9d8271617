package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quantserve/quantserve/api"
)

// TestRequestLogRateFlag: --request-log-rate (and its environment twin)
// sets how many lines of successful requests are logged a second, 0
// every one (api's negative rate); a negative flag is refused.
func TestRequestLogRateFlag(t *testing.T) {
	c, err := parseConfig(nil, func(string) string { return "" }, io.Discard)
	if err != nil || c.requestLogRate != api.DefaultRequestLogRate {
		t.Fatalf("default: %+v %v", c, err)
	}
	c, err = parseConfig(nil, func(k string) string { return map[string]string{"QUANTSERVE_REQUEST_LOG_RATE": "7"}[k] }, io.Discard)
	if err != nil || c.requestLogRate != 7 {
		t.Fatalf("from the environment: %+v %v", c, err)
	}
	if _, err := parseConfig([]string{"--request-log-rate", "-1"}, func(string) string { return "" }, io.Discard); err == nil {
		t.Error("--request-log-rate -1 accepted")
	}
	for flag, want := range map[int]int{0: -1, 1: 1, 100: 100} {
		if got := requestLogRate(flag); got != want {
			t.Errorf("requestLogRate(%d) = %d, want %d", flag, got, want)
		}
	}
}

// TestRequestLogRateServed: a server started with --request-log-rate 1
// writes at most one line of a successful request per second, and the
// line of a failed one; with 0 it writes every request's line. Requests go
// one after another on one connection, so each line is written before the
// next request is served.
func TestRequestLogRateServed(t *testing.T) {
	body := `{"inputs":[{"name":"input","shape":[1,784],"datatype":"FP32","data":[` + strings.Repeat("0,", 783) + `0]}]}`
	for _, rate := range []string{"1", "0"} {
		url, logs := start(t, []string{"--addr", "127.0.0.1:0", "--request-log-rate", rate}, nil)
		client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
		post := func(path string) int {
			resp, err := client.Post(url+path, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode
		}
		const n = 5
		first := time.Now().Unix()
		for range n {
			if code := post("/v2/models/mnist/infer"); code != 200 {
				t.Fatalf("infer: %d", code)
			}
		}
		seconds := int(time.Now().Unix()-first) + 1
		if code := post("/v2/models/nope/infer"); code != 404 {
			t.Fatalf("unknown model: %d", code)
		}
		got := logs.waitFor(t, "path=/v2/models/nope/infer")
		client.CloseIdleConnections()
		lines := strings.Count(got, "path=/v2/models/mnist/infer model=mnist version=1 status=200")
		if rate == "0" && lines != n || rate == "1" && (lines < 1 || lines > seconds) {
			t.Errorf("--request-log-rate %s: %d lines of %d successful requests over %d seconds\n%s", rate, lines, n, seconds, got)
		}
	}
}
