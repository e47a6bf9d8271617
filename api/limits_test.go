package api

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/repository"
)

func TestRequestTimeoutIs504(t *testing.T) {
	url := newTestHTTPServer(t, Options{Repository: repository.New(serverOptions(), repository.Source{Name: "mnist", Version: 1, ONNX: defaultmodel.ONNX}),
		RequestTimeout: time.Nanosecond, IOTimeout: time.Minute, Logger: quietLog()})
	r := do(t, "POST", url+"/v2/models/mnist/infer", inferBody("input", "FP32", []int{1, 784}, make([]float32, 784)))
	wantError(t, r, 504, "--request-timeout")
}

// TestBusyServerAnswers503 holds one request at work (its handler waits)
// with --max-inflight 1: the next is refused at once with 503 and
// Retry-After, and the held one still completes.
func TestBusyServerAnswers503(t *testing.T) {
	s := newServer(Options{MaxInFlight: 1, Logger: quietLog()})
	entered, proceed := make(chan struct{}), make(chan struct{})
	blocking := s.work(func(w http.ResponseWriter, r *http.Request, in *workInput) error {
		if string(in.body) == "hold" {
			close(entered)
			<-proceed
		}
		writeJSON(w, 200, map[string]string{"body": string(in.body)})
		return nil
	})
	srv := httptest.NewServer(blocking)
	t.Cleanup(srv.Close)
	held := make(chan response)
	go func() { held <- do(t, "POST", srv.URL, "hold") }()
	<-entered
	busy := do(t, "POST", srv.URL, "next")
	wantError(t, busy, 503, "busy", "--max-inflight")
	if busy.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	close(proceed)
	if r := <-held; r.status != 200 || !strings.Contains(string(r.body), `"hold"`) {
		t.Errorf("the held request finished with %d %s", r.status, r.body)
	}
	if r := do(t, "POST", srv.URL, "after"); r.status != 200 {
		t.Errorf("after the held request: %d %s", r.status, r.body)
	}
}

// TestBodyIsReadBeforeTheWorkSlot: a request whose body is still arriving
// holds no slot, so with --max-inflight 1 another request is served.
func TestBodyIsReadBeforeTheWorkSlot(t *testing.T) {
	url := newTestHTTPServer(t, Options{Repository: repository.New(serverOptions(), repository.Source{Name: "mnist", Version: 1, ONNX: defaultmodel.ONNX}),
		MaxInFlight: 1, Logger: quietLog()})
	body := inferBody("input", "FP32", []int{1, 784}, make([]float32, 784))
	pr, pw := io.Pipe()
	held := make(chan int)
	go func() {
		req, _ := http.NewRequest("POST", url+"/v2/models/mnist/infer", pr)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			held <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		held <- resp.StatusCode
	}()
	pw.Write([]byte(body[:10])) // the server now waits for the rest
	waitMetric(t, url, func(m metrics) bool { return m["quantserve_receiving"]+m["quantserve_inflight"] >= 1 })
	if r := do(t, "POST", url+"/v2/models/mnist/infer", body); r.status != 200 {
		t.Errorf("with one body still arriving: %d %s", r.status, r.body)
	}
	io.Copy(pw, strings.NewReader(body[10:]))
	pw.Close()
	if status := <-held; status != 200 {
		t.Errorf("the slow request finished with %d", status)
	}
}

// TestEncodedBodyIs415: a work request whose body is in a content coding
// (gzip, or any other) is answered 415 naming the coding, with
// Accept-Encoding: identity, on every work route; the same request sent
// as is (no Content-Encoding, or identity) is answered.
func TestEncodedBodyIs415(t *testing.T) {
	url := newTestHTTPServer(t, Options{Repository: repository.New(serverOptions(), repository.Source{Name: "mnist", Version: 1, ONNX: defaultmodel.ONNX}), Logger: quietLog()})
	infer := inferBody("input", "FP32", []int{1, 784}, make([]float32, 784))
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write([]byte(infer))
	zw.Close()
	for _, c := range []struct{ coding, named string }{{"gzip", `"gzip"`}, {"GZIP", `"GZIP"`}, {"br, gzip", `"br, gzip"`}, {"identity, deflate", `"deflate"`}} {
		r := doWith(t, "POST", url+"/v2/models/mnist/infer", zipped.String(), map[string]string{"Content-Encoding": c.coding})
		wantError(t, r, http.StatusUnsupportedMediaType, "Content-Encoding "+c.named, "does not decode")
		if got := r.header.Get("Accept-Encoding"); got != "identity" {
			t.Errorf("Content-Encoding %s: Accept-Encoding %q, want identity", c.coding, got)
		}
	}
	r := doWith(t, "POST", url+"/v1/ops/quantize", `{"tensor":{"shape":[1],"datatype":"FP32","data":[1]}}`, map[string]string{"Content-Encoding": "zstd"})
	wantError(t, r, http.StatusUnsupportedMediaType, `"zstd"`)
	for _, headers := range []map[string]string{nil, {"Content-Encoding": "identity"}} {
		if r := doWith(t, "POST", url+"/v2/models/mnist/infer", infer, headers); r.status != 200 {
			t.Errorf("headers %v: %d %s", headers, r.status, r.body)
		}
	}
}
