package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"

	"github.com/quantserve/quantserve/api"
	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/oip/grpcpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/repository"
)

// grpcServer serves the embedded model over gRPC from a real quantserve
// server on 127.0.0.1, and returns its address and the count of
// ModelInfer calls it answered OK.
func grpcServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	repo := repository.New(repository.Options{Log: quiet, Model: model.Options{Quantize: true, Scheme: quant.PerChannel}},
		repository.Source{Name: defaultmodel.Name, Version: 1, ONNX: defaultmodel.ONNX})
	var ok atomic.Int64
	count := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		if err == nil && info.FullMethod == grpcpb.GRPCInferenceService_ModelInfer_FullMethodName {
			ok.Add(1)
		}
		return resp, err
	}
	g := api.New(api.Options{Repository: repo, Logger: quiet}).GRPCServer(grpc.ChainUnaryInterceptor(count))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	return ln.Addr().String(), &ok
}

func runJSON(t *testing.T, args ...string) report {
	t.Helper()
	var out bytes.Buffer
	if err := run(append(args, "-json"), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	return rep
}

// TestGRPCClosedLoop runs the mnist scenario over gRPC, four calls on two
// connections, against a real server: every answer is OK and the report
// counts what the server answered.
func TestGRPCClosedLoop(t *testing.T) {
	addr, served := grpcServer(t)
	rep := runJSON(t, "-grpc", addr, "-c", "4", "-grpc-conns", "2", "-d", "300ms")
	if rep.Requests == 0 || rep.Status["OK"] != rep.Requests || len(rep.Status) != 1 || len(rep.Errors) != 0 {
		t.Errorf("report %+v", rep)
	}
	// the server may have answered a last call the run's end cut
	if n := served.Load(); int64(rep.Requests) > n || n > int64(rep.Requests+4) {
		t.Errorf("reported %d, server answered %d", rep.Requests, n)
	}
	if rep.Method != grpcMethod || rep.URL != addr || rep.Connections != 4 || rep.GRPCConns != 2 || rep.BodyBytes < 4*784 {
		t.Errorf("report %+v", rep)
	}
	if l := rep.LatencyMS; !(0 < l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max) {
		t.Errorf("latencies %+v", l)
	}
	var out bytes.Buffer
	if err := run([]string{"-grpc", addr, "-c", "1", "-d", "50ms"}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "gRPC ModelInfer "+addr) || !strings.Contains(out.String(), "1 calls outstanding on one connection") {
		t.Errorf("text report: %v\n%s", err, out.String())
	}
}

// TestGRPCOpenLoop: every call due is answered OK or counted as dropped,
// and the server answered each one reported.
func TestGRPCOpenLoop(t *testing.T) {
	addr, served := grpcServer(t)
	rep := runJSON(t, "-grpc", addr, "-rate", "100", "-d", "500ms")
	if rep.Requests+rep.Dropped != 50 || rep.Status["OK"] != rep.Requests || len(rep.Errors) != 0 || int64(rep.Requests) != served.Load() {
		t.Errorf("report %+v; server answered %d", rep, served.Load())
	}
	if rep.Rate != 100 || rep.LatencyMS.P50 <= 0 || rep.LatencyMS.P99 < rep.LatencyMS.P50 {
		t.Errorf("rate %v, latencies %+v", rep.Rate, rep.LatencyMS)
	}
}

// TestGRPCErrorsByCode: a model the server does not have is NotFound in
// the errors, and nothing is reported answered; a custom request file
// in protobuf JSON is sent as written; nothing listening is Unavailable.
func TestGRPCErrorsByCode(t *testing.T) {
	addr, served := grpcServer(t)
	rep := runJSON(t, "-grpc", addr, "-model", "nope", "-c", "2", "-d", "100ms")
	if rep.Errors["NotFound"] == 0 || len(rep.Errors) != 1 || rep.Requests != 0 || len(rep.Status) != 0 || served.Load() != 0 {
		t.Errorf("report %+v", rep)
	}
	// the same, open loop, from a ModelInferRequest in protobuf JSON
	body := filepath.Join(t.TempDir(), "req.json")
	os.WriteFile(body, []byte(`{"model_name":"nope","inputs":[{"name":"input","datatype":"FP32","shape":[1,784]}],"raw_input_contents":[""]}`), 0o644)
	rep = runJSON(t, "-grpc", addr, "-scenario", "custom", "-body", body, "-rate", "40", "-d", "250ms")
	if rep.Errors["NotFound"] != 10 || rep.Requests != 0 {
		t.Errorf("report %+v", rep)
	}
	// the README's example request is answered
	rep = runJSON(t, "-grpc", addr, "-scenario", "custom", "-body", "../../examples/mnist-digit-grpc.json", "-c", "1", "-d", "100ms")
	if rep.Requests == 0 || rep.Status["OK"] != rep.Requests || len(rep.Errors) != 0 {
		t.Errorf("report %+v", rep)
	}
	// nothing listening: the calls fail Unavailable
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	rep = runJSON(t, "-grpc", closed, "-c", "1", "-d", "50ms")
	if rep.Errors["Unavailable"] == 0 || rep.Requests != 0 {
		t.Errorf("report %+v", rep)
	}
	for _, args := range [][]string{{"-grpc", "10.0.0.1:8001"}, {"-grpc", "8001"}, {"-grpc", addr, "-url", "http://127.0.0.1/"}, {"-grpc", addr, "-scenario", "custom"}} {
		if err := run(append(args, "-d", "1ms"), io.Discard, io.Discard); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
