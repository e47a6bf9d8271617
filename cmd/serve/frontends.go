package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/quantserve/quantserve/api"
)

// newLogger returns the server's logger: text (logfmt-like key=value) or
// JSON lines, written to w through a logBuffer; flush writes what the
// buffer holds (run does before it returns).
func newLogger(format string, level slog.Level, w io.Writer) (log *slog.Logger, flush func() error, err error) {
	buf := newLogBuffer(w)
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch format {
	case "text":
		h = slog.NewTextHandler(buf, opts)
	case "json":
		h = slog.NewJSONHandler(buf, opts)
	default:
		return nil, nil, fmt.Errorf("--log-format %q: json or text", format)
	}
	return slog.New(flushingHandler{h, buf}), buf.Flush, nil
}

// grpcDisabled tells whether --grpc-addr turns gRPC off.
func grpcDisabled(addr string) bool { return addr == "" || addr == "off" }

// certReloader serves the certificate in --tls-cert/--tls-key, read again
// when either file changes (as cert-manager and other rotators replace
// them), so a rotated certificate needs no restart. A pair that fails to
// load keeps the previous one serving, and is logged.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	modCert time.Time
	modKey  time.Time
}

func newCertReloader(certFile, keyFile string, log *slog.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, log: log}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

func modTime(path string) time.Time {
	st, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return st.ModTime()
}

func (r *certReloader) load() error {
	mc, mk := modTime(r.certFile), modTime(r.keyFile)
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("--tls-cert %s, --tls-key %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert, r.modCert, r.modKey = &cert, mc, mk
	return nil
}

// getCertificate is tls.Config.GetCertificate: two stats a handshake.
func (r *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !modTime(r.certFile).Equal(r.modCert) || !modTime(r.keyFile).Equal(r.modKey) {
		if err := r.load(); err != nil {
			r.log.Warn("TLS certificate changed on disk but does not load: serving the previous one", "err", err)
		} else {
			r.log.Info("TLS certificate reloaded", "cert", r.certFile)
		}
	}
	return r.cert, nil
}

// tlsConfig returns the TLS configuration of HTTPS and gRPC, nil when
// --tls-cert and --tls-key are not given.
func tlsConfig(certFile, keyFile string, log *slog.Logger) (*tls.Config, error) {
	if certFile == "" && keyFile == "" {
		return nil, nil
	}
	if certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("--tls-cert and --tls-key go together")
	}
	r, err := newCertReloader(certFile, keyFile, log)
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.getCertificate}, nil
}

// newGRPC returns the gRPC server of srv, with TLS when tlsCfg is set and
// at most maxStreams calls open on a connection.
func newGRPC(srv *api.Server, tlsCfg *tls.Config, maxStreams int) *grpc.Server {
	opts := []grpc.ServerOption{grpc.MaxConcurrentStreams(uint32(min(int64(maxStreams), math.MaxUint32)))}
	if tlsCfg != nil {
		opts = append(opts, api.GRPCTLS(tlsCfg))
	}
	return srv.GRPCServer(opts...)
}

// stopGRPC stops g gracefully (no new calls; those in flight finish)
// within ctx, then at once.
func stopGRPC(ctx context.Context, g *grpc.Server) error {
	if g == nil {
		return nil
	}
	stopped := make(chan struct{})
	go func() {
		g.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
		return nil
	case <-ctx.Done():
		g.Stop()
		<-stopped
		return ctx.Err()
	}
}

// listenGRPC opens the gRPC listener, nil when gRPC is off.
func listenGRPC(addr string) (net.Listener, error) {
	if grpcDisabled(addr) {
		return nil, nil
	}
	ln, err := listenTCP(addr)
	if err != nil {
		return nil, fmt.Errorf("--grpc-addr: %w", err)
	}
	return ln, nil
}
