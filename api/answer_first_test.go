package api

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/repository"
)

// stalledLog is a log output whose request lines do not return until the
// test lets them: a terminal or a pipe nobody reads.
type stalledLog struct {
	entered chan struct{}
	gate    chan struct{}
	written chan struct{} // closed once a request line is written
	once    sync.Once
	wrote   sync.Once
	syncBuffer
}

func (l *stalledLog) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("msg=request ")) {
		select {
		case l.entered <- struct{}{}:
		default:
		}
		<-l.gate
		defer l.wrote.Do(func() { close(l.written) })
	}
	return l.syncBuffer.Write(p)
}

// TestAnswerBeforeLogLine: a complete answer reaches the client before the
// request's log line is written, so a log output that stalls does not
// hold the answer back; the line is written once the output takes it.
func TestAnswerBeforeLogLine(t *testing.T) {
	out := &stalledLog{entered: make(chan struct{}, 1), gate: make(chan struct{}), written: make(chan struct{})}
	release := func() { out.once.Do(func() { close(out.gate) }) }
	defer release()
	log := slog.New(slog.NewTextHandler(out, nil))
	url := newTestHTTPServer(t, Options{Logger: log,
		Repository: repository.New(serverOptions(), repository.Source{Name: "mnist", Version: 1, ONNX: defaultmodel.ONNX})})

	type answer struct {
		status int
		length string
		body   []byte
		err    error
	}
	got := make(chan answer, 1)
	go func() {
		body := inferBody("input", "FP32", []int{1, 784}, make([]float32, 784))
		resp, err := http.Post(url+"/v2/models/mnist/infer", "application/json", strings.NewReader(body))
		if err != nil {
			got <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- answer{resp.StatusCode, resp.Header.Get("Content-Length"), b, err}
	}()
	var a answer
	select {
	case a = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("no answer while the request's log line is stalled")
	}
	if a.err != nil || a.status != 200 || a.length == "" {
		t.Fatalf("answer: %d, Content-Length %q, %v: %s", a.status, a.length, a.err, a.body)
	}
	var resp struct {
		Outputs []struct {
			Name string    `json:"name"`
			Data []float32 `json:"data"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(a.body, &resp); err != nil || len(resp.Outputs) != 1 || len(resp.Outputs[0].Data) != 10 {
		t.Fatalf("answer %s: %v", a.body, err)
	}
	select {
	case <-out.entered: // the line was on its way while the client read
	case <-time.After(30 * time.Second):
		t.Fatal("the request's log line was never written")
	}
	release()
	select {
	case <-out.written:
	case <-time.After(30 * time.Second):
		t.Fatal("the request's log line was never written")
	}
	if !strings.Contains(out.String(), "msg=request method=POST route=/v2/models/{model}/infer") {
		t.Fatalf("the request line is not in the log:\n%s", out.String())
	}
}
