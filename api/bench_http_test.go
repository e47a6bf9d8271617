//go:build unix

package api

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http/httptest"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/repository"
	"github.com/quantserve/quantserve/telemetry"
)

// BenchmarkInferJSON measures the server's cost per request over real
// HTTP on 127.0.0.1: a keep-alive connection sends MNIST JSON infer
// requests one after another ("infer"), or GET /v2/health/live, the
// server's cheapest answer ("live"), through the whole server as cmd/serve
// builds it (observe with the IDs-only tracer provider, limits, the
// model, the answer, telemetry and the request log lines the default
// RequestLogRate lets through, formatted at info level and discarded);
// "infer-log-every" logs every request's line. The client writes prepared
// bytes and reads the answer without allocating, so allocs/op is the
// server's (and net/http's) per request; cpu-µs/op is the process's
// user and system CPU time per request, wakeups and system calls
// included, which the latency of one connection at a time (ns/op) hides
// behind idle time.
func BenchmarkInferJSON(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	body := []byte(`{"inputs":[{"name":"input","shape":[1,784],"datatype":"FP32","data":[`)
	for i := 0; i < 784; i++ {
		if i > 0 {
			body = append(body, ',')
		}
		body = strconv.AppendFloat(body, float64(float32(rng.Float64())), 'g', 7, 32)
	}
	body = append(body, "]}]}"...)
	repo := repository.New(serverOptions(), repository.Source{Name: "mnist", Version: 1, ONNX: defaultmodel.ONNX})
	// The server's default request log rate, and one logging every request.
	hosts := map[bool]string{}
	for _, every := range []bool{false, true} {
		// The tracer provider cmd/serve passes when no exporter is set.
		opts := Options{Repository: repo, Logger: quietLog(), TracerProvider: telemetry.IDsOnlyTracerProvider()}
		if every {
			opts.RequestLogRate = -1
		}
		srv := httptest.NewServer(NewRouter(opts))
		b.Cleanup(srv.Close)
		hosts[every] = srv.Listener.Addr().String()
	}
	infer := func(host string) []byte {
		return fmt.Appendf(nil, "POST /v2/models/mnist/infer HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", host, len(body), body)
	}
	live := fmt.Appendf(nil, "GET /v2/health/live HTTP/1.1\r\nHost: %s\r\n\r\n", hosts[false])
	for _, bc := range []struct {
		name, host string
		req        []byte
	}{{"infer", hosts[false], infer(hosts[false])}, {"infer-log-every", hosts[true], infer(hosts[true])}, {"live", hosts[false], live}} {
		b.Run(bc.name, func(b *testing.B) {
			c := dialRaw(b, bc.host)
			c.roundTrip(b, bc.req) // the connection's first answer
			b.ReportAllocs()
			cpu0 := processCPU()
			n := 0
			for b.Loop() {
				c.roundTrip(b, bc.req)
				n++
			}
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(n), "cpu-µs/op")
		})
	}
}

// rawConn is a keep-alive HTTP/1.1 client that allocates nothing per
// request.
type rawConn struct {
	conn net.Conn
	r    *bufio.Reader
	body []byte
}

func dialRaw(b *testing.B, addr string) *rawConn {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return &rawConn{conn: conn, r: bufio.NewReaderSize(conn, 64<<10), body: make([]byte, 64<<10)}
}

var contentLength = []byte("content-length:")

// roundTrip sends req and reads its answer, which must be a 200 with a
// Content-Length.
func (c *rawConn) roundTrip(b *testing.B, req []byte) {
	if _, err := c.conn.Write(req); err != nil {
		b.Fatal(err)
	}
	n, status := -1, true
	for first := true; ; first = false {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			b.Fatal(err)
		}
		if first {
			status = bytes.HasPrefix(line, []byte("HTTP/1.1 200 "))
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		if len(line) > len(contentLength) && bytes.EqualFold(line[:len(contentLength)], contentLength) {
			n = 0
			for _, d := range bytes.TrimSpace(line[len(contentLength):]) {
				if d < '0' || d > '9' {
					b.Fatalf("Content-Length %q", line)
				}
				n = 10*n + int(d-'0')
			}
		}
	}
	if n < 0 || n > len(c.body) {
		b.Fatalf("an answer of length %d", n)
	}
	if _, err := readFull(c.r, c.body[:n]); err != nil {
		b.Fatal(err)
	}
	if !status {
		b.Fatalf("not 200: %s", c.body[:n])
	}
}

func readFull(r *bufio.Reader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := r.Read(p[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// processCPU returns the user and system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
