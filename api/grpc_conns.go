package api

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/peer"
)

// gRPC sends a unary call's answer after its handler has returned: the
// transport queues it whole and writes it as the client's flow-control
// window opens, so a client that never reads would hold it (and its
// stream) for as long as the connection lives. An answer here is bytes
// the handler encoded and charged to the memory budget: they go back to
// the budget when the transport has written them (the buffer's last
// reference is dropped), and if that has not happened within the send
// deadline (--request-timeout, as for an HTTP answer) the connection is
// closed, which frees what it held. Closing the connection is the only way
// grpc-go gives to stop a call it is sending, so connections are tracked
// from their handshake (trackingCreds) and found from a call by their
// addresses.

// grpcConns are a gRPC server's connections over TCP, by their addresses.
type grpcConns struct {
	mu    sync.Mutex
	conns map[connKey]*grpcConn
}

type connKey struct{ local, remote string }

// of returns the connection of the call ctx belongs to, nil when it is
// not tracked.
func (cs *grpcConns) of(ctx context.Context) *grpcConn {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil || p.LocalAddr == nil {
		return nil
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.conns[connKey{p.LocalAddr.String(), p.Addr.String()}]
}

func (cs *grpcConns) add(c *grpcConn) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.conns == nil {
		cs.conns = map[connKey]*grpcConn{}
	}
	cs.conns[c.key] = c
}

func (cs *grpcConns) remove(c *grpcConn) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.conns[c.key] == c {
		delete(cs.conns, c.key)
	}
}

// grpcConn is a tracked connection: the answers waiting on it go back to
// the budget when it closes.
type grpcConn struct {
	net.Conn
	set *grpcConns
	key connKey

	mu      sync.Mutex
	closed  bool
	answers map[*grpcAnswer]struct{}
}

// hold adds a to the answers waiting on c; false when c is closed.
func (c *grpcConn) hold(a *grpcAnswer) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	if c.answers == nil {
		c.answers = map[*grpcAnswer]struct{}{}
	}
	c.answers[a] = struct{}{}
	return true
}

func (c *grpcConn) forget(a *grpcAnswer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.answers, a)
}

// Close closes the connection and gives back the answers waiting on it.
func (c *grpcConn) Close() error {
	c.mu.Lock()
	answers := c.answers
	c.answers, c.closed = nil, true
	c.mu.Unlock()
	c.set.remove(c)
	for a := range answers {
		a.release()
	}
	return c.Conn.Close()
}

// drop closes c for a client that did not keep to a deadline.
func (c *grpcConn) drop(s *server, why string) {
	s.log.Debug("gRPC connection dropped", "remote", c.key.remote, "why", why)
	c.Close()
}

// deadline drops c (when tracked) unless the returned stop is called
// within the server's I/O deadline.
func (c *grpcConn) deadline(s *server, why string) (stop func()) {
	if c == nil {
		return func() {}
	}
	t := time.AfterFunc(s.ioTimeout, func() { c.drop(s, why) })
	return func() { t.Stop() }
}

// trackingCreds are the server's transport credentials with each TCP
// connection tracked from its handshake until it closes.
type trackingCreds struct {
	credentials.TransportCredentials
	conns *grpcConns
}

func (tc trackingCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	if _, ok := raw.RemoteAddr().(*net.TCPAddr); !ok {
		return tc.TransportCredentials.ServerHandshake(raw)
	}
	c := &grpcConn{Conn: raw, set: tc.conns, key: connKey{raw.LocalAddr().String(), raw.RemoteAddr().String()}}
	conn, info, err := tc.TransportCredentials.ServerHandshake(c)
	if err != nil {
		return nil, nil, err
	}
	tc.conns.add(c)
	return conn, info, nil
}

func (tc trackingCreds) Clone() credentials.TransportCredentials {
	return trackingCreds{TransportCredentials: tc.TransportCredentials.Clone(), conns: tc.conns}
}

// GRPCTLS is the option of GRPCServer that serves TLS with cfg.
func GRPCTLS(cfg *tls.Config) grpc.ServerOption { return grpcTLS{cfg: cfg} }

type grpcTLS struct {
	grpc.EmptyServerOption
	cfg *tls.Config
}

// grpcAnswer is an encoded ModelInferResponse on its way to the client,
// holding its bytes of the memory budget until the transport has written
// it, the connection closes or the send deadline passes.
type grpcAnswer struct {
	s     *server
	data  []byte
	acct  *account
	conn  *grpcConn
	timer *time.Timer
	done  atomic.Bool
}

// newGRPCAnswer makes data, whose bytes acct holds, the answer of the
// call of ctx, sent uncompressed: a compressed copy would be what the
// transport queues, and its writing could not be seen.
func (s *server) newGRPCAnswer(ctx context.Context, data []byte, acct *account, conn *grpcConn) *grpcAnswer {
	if st, ok := grpc.ServerTransportStreamFromContext(ctx).(interface{ RecvCompress() string }); ok {
		if rc := st.RecvCompress(); rc != "" && rc != encoding.Identity {
			grpc.SetSendCompressor(ctx, encoding.Identity)
		}
	}
	a := &grpcAnswer{s: s, data: data, acct: acct, conn: conn}
	if mem.IsBelowBufferPoolingThreshold(len(data)) {
		// gRPC copies a buffer this small: nothing tells when it is sent,
		// and it is too small to matter.
		a.release()
		return a
	}
	a.timer = time.AfterFunc(s.ioTimeout, a.expire)
	if conn != nil && !conn.hold(a) {
		a.release()
	}
	return a
}

// buffers are the answer's bytes for the transport; their last release
// gives them back to the budget.
func (a *grpcAnswer) buffers() mem.BufferSlice {
	if a.done.Load() {
		return mem.BufferSlice{mem.SliceBuffer(a.data)}
	}
	return mem.BufferSlice{mem.NewBuffer(&a.data, answerWritten{a})}
}

// answerWritten is the pool of an answer's buffer: the transport's last
// release of the buffer puts it back, once written (or dropped).
type answerWritten struct{ a *grpcAnswer }

func (p answerWritten) Get(n int) *[]byte {
	b := make([]byte, n)
	return &b
}

func (p answerWritten) Put(*[]byte) { p.a.release() }

// release gives the answer's bytes back to the budget, once.
func (a *grpcAnswer) release() {
	if a.done.Swap(true) {
		return
	}
	if a.timer != nil {
		a.timer.Stop()
	}
	a.acct.release()
	if a.conn != nil {
		a.conn.forget(a)
	}
}

// expire gives the answer's bytes back at the send deadline and drops the
// connection that did not take them.
func (a *grpcAnswer) expire() {
	if a.done.Swap(true) {
		return
	}
	a.acct.release()
	if a.conn != nil {
		a.conn.forget(a)
		a.conn.drop(a.s, "an answer was not read within --request-timeout")
	}
}
