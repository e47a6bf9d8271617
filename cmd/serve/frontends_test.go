package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/quantserve/quantserve/oip/grpcpb"
)

// grpcAddr returns the gRPC address a server logged.
func grpcAddr(t *testing.T, logs string) string {
	t.Helper()
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, `msg="grpc listening"`) {
			if i := strings.Index(line, "addr="); i >= 0 {
				return strings.Fields(line[i+len("addr="):])[0]
			}
		}
	}
	t.Fatalf("no gRPC address in the log:\n%s", logs)
	return ""
}

func dialGRPC(t *testing.T, addr string, creds credentials.TransportCredentials) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func mnistInfer() *grpcpb.ModelInferRequest {
	return &grpcpb.ModelInferRequest{ModelName: "mnist", Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{{
		Name: "input", Datatype: "FP32", Shape: []int64{1, 784}, Contents: &grpcpb.InferTensorContents{Fp32Contents: make([]float32, 784)}}}}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and localhost
// with the given common name into dir, and returns the files and a pool
// that trusts it.
func selfSigned(t *testing.T, dir, name string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// peerName returns the common name of the certificate the server shows.
func peerName(t *testing.T, addr string, pool *x509.CertPool) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// TestTLS serves HTTPS and gRPC over TLS with a certificate made here:
// clients that trust it are served, plain HTTP and plain gRPC are not,
// and a certificate replaced on disk is served without a restart.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir, "first")
	url, logs := start(t, []string{"--addr", "127.0.0.1:0", "--tls-cert", certFile, "--tls-key", keyFile}, nil)
	addr := strings.TrimPrefix(url, "http://")
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	resp, err := client.Get("https://" + addr + "/v2/health/ready")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil || resp.ProtoMajor != 2 {
		t.Errorf("HTTPS ready: %d, TLS %v, HTTP/%d", resp.StatusCode, resp.TLS != nil, resp.ProtoMajor)
	}
	resp, err = client.Post("https://"+addr+"/v2/models/mnist/infer", "application/json", strings.NewReader(mnistBody(1, "0.5")))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"name":"scores"`) {
		t.Errorf("infer over HTTPS: %d %s", resp.StatusCode, b)
	}
	if resp, err := http.Get("http://" + addr + "/v2/health/ready"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the TLS port: %d", resp.StatusCode)
		}
	}

	gaddr := grpcAddr(t, logs.String())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	secure := grpcpb.NewGRPCInferenceServiceClient(dialGRPC(t, gaddr, credentials.NewTLS(&tls.Config{RootCAs: pool})))
	if r, err := secure.ModelInfer(ctx, mnistInfer()); err != nil || len(r.Outputs) != 1 {
		t.Errorf("gRPC over TLS: %v %v", r, err)
	}
	plain := grpcpb.NewGRPCInferenceServiceClient(dialGRPC(t, gaddr, insecure.NewCredentials()))
	if _, err := plain.ServerLive(ctx, &grpcpb.ServerLiveRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("plain gRPC to the TLS port: %v", err)
	}

	if got := peerName(t, addr, pool); got != "first" {
		t.Errorf("certificate %q", got)
	}
	_, _, pool2 := selfSigned(t, dir, "second") // same files, new pair
	later := time.Now().Add(time.Minute)        // a modification time the first files cannot have
	os.Chtimes(certFile, later, later)
	os.Chtimes(keyFile, later, later)
	if got := peerName(t, addr, pool2); got != "second" {
		t.Errorf("after rotation the certificate is %q", got)
	}
	if got := peerName(t, gaddr, pool2); got != "second" {
		t.Errorf("after rotation gRPC's certificate is %q", got)
	}
	logs.waitFor(t, "TLS certificate reloaded")
}

// TestFrontendFlags: the new flags and their environment twins, and the
// refusal of bad values.
func TestFrontendFlags(t *testing.T) {
	env := map[string]string{"QUANTSERVE_GRPC_ADDR": "off", "QUANTSERVE_LOG_FORMAT": "json", "QUANTSERVE_CORS_ORIGINS": "https://a.example, http://b.example:8080",
		"QUANTSERVE_TLS_CERT": "c.pem", "QUANTSERVE_TLS_KEY": "k.pem"}
	c, err := parseConfig(nil, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.grpcAddr != "off" || c.logFormat != "json" || c.corsOrigins != env["QUANTSERVE_CORS_ORIGINS"] || c.tlsCert != "c.pem" || c.tlsKey != "k.pem" {
		t.Errorf("config %+v", c)
	}
	if c, err := parseConfig(nil, func(string) string { return "" }, io.Discard); err != nil || c.grpcAddr != ":8001" || c.logFormat != "text" || c.corsOrigins != "" {
		t.Errorf("defaults: %+v %v", c, err)
	}
	for _, bad := range [][]string{{"--log-format", "xml"}, {"--cors-origins", "ftp://x.example"}, {"--cors-origins", "https://x.example/path"},
		{"--tls-cert", "c.pem"}, {"--tls-key", "k.pem"}} {
		if _, err := parseConfig(bad, func(string) string { return "" }, io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	err = run(context.Background(), []string{"--addr", "127.0.0.1:0", "--tls-cert", "/nonexistent/c.pem", "--tls-key", "/nonexistent/k.pem"}, func(string) string { return "" }, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "--tls-cert") {
		t.Errorf("missing certificate files: %v", err)
	}
}

func TestGRPCOff(t *testing.T) {
	url, logs := start(t, []string{"--addr", "127.0.0.1:0", "--grpc-addr", "off"}, nil)
	resp, err := http.Get(url + "/v2/health/live")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if strings.Contains(logs.String(), "grpc listening") {
		t.Errorf("--grpc-addr off still listens:\n%s", logs.String())
	}
}

// TestJSONRequestLog: with --log-format json each request, HTTP or gRPC,
// is one JSON line at info level with its method, route, model, version,
// status, duration, request id and trace id (the client's traceparent).
func TestJSONRequestLog(t *testing.T) {
	url, logs := start(t, []string{"--addr", "127.0.0.1:0", "--log-format", "json", "--cors-origins", "https://app.example"}, nil)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, _ := http.NewRequest("POST", url+"/v2/models/mnist/infer", strings.NewReader(mnistBody(1, "0")))
	req.Header.Set("X-Request-Id", "req-from-client")
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	req.Header.Set("Origin", "https://app.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Request-Id") != "req-from-client" || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Fatalf("infer: %d, headers %v", resp.StatusCode, resp.Header)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "x-request-id", "grpc-req", "traceparent", "00-"+traceID+"-00f067aa0ba902b8-01")
	c := grpcpb.NewGRPCInferenceServiceClient(dialGRPC(t, grpcAddrJSON(t, logs.String()), insecure.NewCredentials()))
	if _, err := c.ModelInfer(ctx, mnistInfer()); err != nil {
		t.Fatal(err)
	}
	// the server logs a request after answering it: find both lines
	want := map[string]map[string]any{
		"req-from-client": {"method": "POST", "route": "/v2/models/{model}/infer", "path": "/v2/models/mnist/infer", "status": 200.0},
		"grpc-req":        {"method": "grpc", "route": "/inference.GRPCInferenceService/ModelInfer", "status": "OK"},
	}
	found := map[string]bool{}
	for len(found) < len(want) && ctx.Err() == nil {
		sc := bufio.NewScanner(strings.NewReader(logs.String()))
		for sc.Scan() {
			var line map[string]any
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatalf("not a JSON line: %s", sc.Text())
			}
			id, _ := line["request_id"].(string)
			fields, ok := want[id]
			if !ok || line["msg"] != "request" || found[id] {
				continue
			}
			found[id] = true
			for k, v := range fields {
				if line[k] != v {
					t.Errorf("%s: %s = %v, want %v (%s)", id, k, line[k], v, sc.Text())
				}
			}
			for k, v := range map[string]any{"level": "INFO", "model": "mnist", "version": "1", "trace_id": traceID} {
				if line[k] != v {
					t.Errorf("%s: %s = %v, want %v (%s)", id, k, line[k], v, sc.Text())
				}
			}
			if d, ok := line["duration"].(float64); !ok || d <= 0 {
				t.Errorf("%s: duration %v", id, line["duration"])
			}
		}
	}
}

// grpcAddrJSON returns the gRPC address from a JSON log.
func grpcAddrJSON(t *testing.T, logs string) string {
	t.Helper()
	for _, l := range strings.Split(logs, "\n") {
		var line map[string]any
		if json.Unmarshal([]byte(l), &line) == nil && line["msg"] == "grpc listening" {
			return line["addr"].(string)
		}
	}
	t.Fatalf("no gRPC address in the log:\n%s", logs)
	return ""
}

// TestGRPCDrainOnSIGTERM: gRPC clients call ModelInfer steadily while a
// health watch runs; on SIGTERM the watch sees NOT_SERVING and ends,
// calls are still served through the drain delay, then the server stops
// gracefully: no call fails but with Unavailable once the server is gone,
// and the process exits 0.
func TestGRPCDrainOnSIGTERM(t *testing.T) {
	c := startChild(t, "--drain-delay", "2s", "--shutdown-timeout", "20s")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn := dialGRPC(t, grpcAddr(t, c.logs.String()), insecure.NewCredentials())
	client := grpcpb.NewGRPCInferenceServiceClient(conn)
	watch, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := watch.Recv(); err != nil || r.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("watch: %v %v", r, err)
	}
	var notServing atomic.Bool
	var ok, okDraining, failed atomic.Int64
	var firstFailure atomic.Value
	var clients, warm sync.WaitGroup
	const n = 8
	warm.Add(n)
	for i := 0; i < n; i++ {
		clients.Add(1)
		go func() {
			defer clients.Done()
			done := 0
			for ctx.Err() == nil {
				draining := notServing.Load()
				_, err := client.ModelInfer(ctx, mnistInfer())
				if err != nil {
					if status.Code(err) != codes.Unavailable {
						failed.Add(1)
						firstFailure.CompareAndSwap(nil, err.Error())
					}
					break
				}
				ok.Add(1)
				if draining {
					okDraining.Add(1)
				}
				if done++; done == 10 {
					warm.Done()
				}
			}
			if done < 10 {
				warm.Done()
			}
		}()
	}
	warm.Wait()
	c.signal(t, syscall.SIGTERM)
	r, err := watch.Recv()
	if err != nil || r.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("watch after SIGTERM: %v %v", r, err)
	}
	notServing.Store(true)
	if _, err := watch.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("the watch did not end with Unavailable: %v", err)
	}
	clients.Wait()
	if code := c.wait(t, ctx); code != 0 {
		t.Errorf("exit code %d after a clean drain:\n%s", code, c.logs.String())
	}
	if failed.Load() != 0 {
		t.Errorf("%d calls failed (first: %v)", failed.Load(), firstFailure.Load())
	}
	if okDraining.Load() == 0 {
		t.Error("no call was served while draining")
	}
	if logs := c.logs.String(); !strings.Contains(logs, "drained: every request finished") {
		t.Errorf("log:\n%s", logs)
	}
	t.Logf("%d calls, %d of them while draining", ok.Load(), okDraining.Load())
}
