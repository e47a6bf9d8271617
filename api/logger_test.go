package api

import (
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/repository"
	"github.com/quantserve/quantserve/telemetry"
)

// newTestHTTPServerOf serves s over real HTTP on 127.0.0.1 and returns
// its URL.
func newTestHTTPServerOf(t *testing.T, s *server) string {
	t.Helper()
	srv := httptest.NewServer(s.routes())
	t.Cleanup(srv.Close)
	return srv.URL
}

func brokenTelemetry(version, kernels string) (*telemetry.Telemetry, error) {
	return nil, errors.New("no meter today")
}

// TestServerLogsToItsLogger: what the server logs goes to Options.Logger,
// from its construction on (telemetry that cannot be built is reported
// there, and the server serves without metrics), and so do the lines of
// failed requests. Without a Logger, slog's default logs.
func TestServerLogsToItsLogger(t *testing.T) {
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := buildServer(Options{Repository: repository.New(serverOptions(), repository.Source{Name: "mnist", Version: 1, ONNX: defaultmodel.ONNX}),
		Logger: log, RequestTimeout: time.Nanosecond, IOTimeout: time.Minute}, brokenTelemetry)
	if got := logs.String(); !strings.Contains(got, "metrics disabled") || !strings.Contains(got, "no meter today") {
		t.Errorf("the telemetry failure is not in the server's log:\n%s", got)
	}
	url := newTestHTTPServerOf(t, s)
	wantError(t, do(t, "GET", url+"/metrics", ""), 503, "metrics are unavailable")
	wantError(t, do(t, "POST", url+"/v2/models/mnist/infer", inferBody("input", "FP32", []int{1, 784}, make([]float32, 784))), 504, "--request-timeout")
	do(t, "GET", url+"/v2/health/live", "") // after the 504's log lines, on the same connection
	got := logs.String()
	if !strings.Contains(got, `level=DEBUG msg="request failed" method=POST path=/v2/models/mnist/infer status=504`) {
		t.Errorf("the failed request is not in the server's log:\n%s", got)
	}
	if !strings.Contains(got, "msg=request method=POST route=/v2/models/{model}/infer") {
		t.Errorf("the request line is not in the server's log:\n%s", got)
	}

	var defaults syncBuffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&defaults, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	if s := buildServer(Options{}, brokenTelemetry); s.log != slog.Default() {
		t.Error("a server without a Logger does not log to slog's default")
	}
	if got := defaults.String(); !strings.Contains(got, "metrics disabled") {
		t.Errorf("the telemetry failure of a server without a Logger is not in slog's default log:\n%s", got)
	}
}
