package api

import (
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/repository"
)

func TestRequestTimeoutIs504(t *testing.T) {
	url := newTestHTTPServer(t, Options{Repository: repository.New(serverOptions(), repository.Source{Name: "mnist", Version: 1, ONNX: defaultmodel.ONNX}),
		RequestTimeout: time.Nanosecond, Logger: quietLog()})
	r := do(t, "POST", url+"/v2/models/mnist/infer", inferBody("input", "FP32", []int{1, 784}, make([]float32, 784)))
	wantError(t, r, 504, "--request-timeout")
}

// TestBusyServerAnswers503 holds one request in flight (its body not yet
// sent) with --max-inflight 1: the next is refused at once with 503 and
// Retry-After, and the held one still completes.
func TestBusyServerAnswers503(t *testing.T) {
	url := newTestHTTPServer(t, Options{Repository: repository.New(serverOptions(), repository.Source{Name: "mnist", Version: 1, ONNX: defaultmodel.ONNX}),
		MaxInFlight: 1, Logger: quietLog()})
	body := inferBody("input", "FP32", []int{1, 784}, make([]float32, 784))
	pr, pw := io.Pipe()
	held := make(chan int)
	go func() {
		req, _ := http.NewRequest("POST", url+"/v2/models/mnist/infer", pr)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			held <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		held <- resp.StatusCode
	}()
	pw.Write([]byte(body[:10])) // the handler is now waiting for the rest
	for i := 0; ; i++ {         // until the metrics show it holding the one slot
		if strings.Contains(string(do(t, "GET", url+"/metrics", "").body), "\nquantserve_inflight 1\n") {
			break
		}
		if i == 100000 {
			t.Fatal("the held request never got in flight")
		}
		runtime.Gosched()
	}
	busy := do(t, "POST", url+"/v2/models/mnist/infer", body)
	wantError(t, busy, 503, "busy", "--max-inflight")
	if busy.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	io.Copy(pw, strings.NewReader(body[10:]))
	pw.Close()
	if status := <-held; status != 200 {
		t.Errorf("the held request finished with %d", status)
	}
	if r := do(t, "POST", url+"/v2/models/mnist/infer", body); r.status != 200 {
		t.Errorf("after the held request: %d %s", r.status, r.body)
	}
}
