package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// listenTCP listens on addr for a drainListener. The socket is plain TCP:
// Go listens with multipath TCP where the kernel has it, and a multipath
// socket takes no socket filter, which stopping without resets needs.
func listenTCP(addr string) (net.Listener, error) {
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	return lc.Listen(context.Background(), "tcp", addr)
}

// handshakeGrace is how long a stopping listener goes on accepting after
// it has started to turn new connections away: the handshakes the kernel
// answered just before complete within a round trip, and are served.
const handshakeGrace = 200 * time.Millisecond

// drainListener is a listener that stops without resetting a connection.
//
// Closing a listening socket resets every connection waiting in its
// accept queue: connections the kernel has completed, whose clients have
// often sent their request already and then read a reset. stop closes it
// in order instead: new connection requests are dropped first (a client
// retries and is refused once the socket is closed, before it has sent
// anything), the handshakes already answered get handshakeGrace to
// complete, every connection left in the queue is taken and handed to
// the server through Accept, and only then is the socket closed, with
// nothing in its queue. Turning connections away and emptying the queue
// need Linux; elsewhere stop closes the socket after the grace.
type drainListener struct {
	net.Listener
	raw syscall.RawConn // the socket, nil if the listener has none

	stopped   chan struct{} // closed by stop once the socket is closed
	queued    chan net.Conn // then stop hands what it took from the queue to Accept
	taken     chan struct{} // closed by Accept once it has handed out all of queued
	takenOnce sync.Once
	closed    chan struct{} // closed by Close
	closeOnce sync.Once
}

func newDrainListener(ln net.Listener) *drainListener {
	l := &drainListener{Listener: ln, stopped: make(chan struct{}), queued: make(chan net.Conn), taken: make(chan struct{}), closed: make(chan struct{})}
	if sc, ok := ln.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			l.raw = raw
		}
	}
	return l
}

// Accept returns the listener's connections, then those stop took from
// the accept queue, then net.ErrClosed once Close is called.
func (l *drainListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil || !l.isStopped() {
		return c, err
	}
	select {
	case c, ok := <-l.queued:
		if ok {
			return c, nil
		}
		// The server calls Accept again only once it has taken the
		// previous connection in: it knows them all.
		l.takenOnce.Do(func() { close(l.taken) })
		<-l.closed
	case <-l.closed:
	}
	return nil, net.ErrClosed
}

// Close ends Accept. After stop the socket is already closed.
func (l *drainListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	if l.isStopped() {
		return nil
	}
	return l.Listener.Close()
}

func (l *drainListener) isStopped() bool {
	select {
	case <-l.stopped:
		return true
	default:
		return false
	}
}

// stop stops accepting (see drainListener) and returns once the server
// has taken in every connection the kernel had accepted, and how many
// were still waiting in the queue. When ctx ends first, the connections
// not yet handed over are closed. The server must be serving l.
func (l *drainListener) stop(ctx context.Context) (int, error) {
	var refuseErr error
	if l.raw != nil {
		if err := l.raw.Control(func(fd uintptr) { refuseErr = refuseConnections(fd) }); err != nil {
			refuseErr = err
		}
	}
	grace := time.NewTimer(handshakeGrace)
	select {
	case <-grace.C:
	case <-ctx.Done():
		grace.Stop()
	}
	var queued []net.Conn
	var queueErr error
	if l.raw != nil {
		if err := l.raw.Control(func(fd uintptr) { queued, queueErr = acceptQueued(fd) }); err != nil {
			queueErr = err
		}
	}
	close(l.stopped)
	l.Listener.Close()
	for i, c := range queued {
		select {
		case l.queued <- c:
		case <-ctx.Done():
			closeAll(queued[i:])
			return len(queued), ctx.Err()
		case <-l.closed:
			closeAll(queued[i:])
			return len(queued), net.ErrClosed
		}
	}
	close(l.queued)
	select {
	case <-l.taken:
	case <-ctx.Done():
		return len(queued), ctx.Err()
	case <-l.closed:
	}
	if refuseErr != nil {
		return len(queued), refuseErr
	}
	return len(queued), queueErr
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

// stopListener stops l (see drainListener.stop), logging what it did.
func stopListener(ctx context.Context, name string, l *drainListener, log *slog.Logger) {
	n, err := l.stop(ctx)
	if err != nil && ctx.Err() == nil {
		log.Warn("listener closed: connections arriving as it closed may have been reset", "listener", name, "err", err)
	}
	log.Debug("listener closed", "listener", name, "queued_connections", n)
}

// stopHTTP stops srv, served on l, within ctx without dropping a request
// it has accepted a connection for. http.Server.Shutdown drops a request
// it reads after it has begun (it closes the connection instead), so
// first the listener stops and hands over its queue, keep-alives end
// (idle connections close, and each other after its answer), and every
// new connection is waited for until its request has been read; then
// Shutdown waits for the answers.
func stopHTTP(ctx context.Context, srv *http.Server, l *drainListener, conns *connCounter, log *slog.Logger) error {
	stopListener(ctx, "http", l, log)
	srv.SetKeepAlivesEnabled(false)
	if err := conns.waitRequests(ctx); err != nil {
		log.Warn("connections still waiting for their request", "err", err)
	}
	return srv.Shutdown(ctx)
}

// connCounter tracks connections by state (http.Server.ConnState) with no
// shared write on the request path: a keep-alive connection goes Active
// and Idle once per request, and each change is one lock-free sync.Map
// load and an atomic store into the connection's own state. Accepting and
// closing a connection add and delete its entry; counting ranges over
// them (at shutdown only). Only while waitRequests waits does a change
// also take the lock that wakes it.
type connCounter struct {
	conns sync.Map // net.Conn -> *atomic.Int32: its http.ConnState

	waiting atomic.Bool // set by waitRequests: changes wake it
	mu      sync.Mutex
	changed chan struct{} // closed at the next change, when someone waits
}

func (c *connCounter) track(conn net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		e := new(atomic.Int32)
		e.Store(int32(st))
		c.conns.Store(conn, e)
	case http.StateClosed, http.StateHijacked: // no longer the server's
		c.conns.Delete(conn)
	default:
		if v, ok := c.conns.Load(conn); ok {
			v.(*atomic.Int32).Store(int32(st))
		}
	}
	if c.waiting.Load() {
		c.mu.Lock()
		if c.changed != nil {
			close(c.changed)
			c.changed = nil
		}
		c.mu.Unlock()
	}
}

// count returns the number of connections in state st.
func (c *connCounter) count(st http.ConnState) int {
	n := 0
	c.conns.Range(func(_, v any) bool {
		if v.(*atomic.Int32).Load() == int32(st) {
			n++
		}
		return true
	})
	return n
}

// active returns the number of connections serving a request.
func (c *connCounter) active() int {
	return c.count(http.StateActive)
}

// waitRequests waits until no connection is new (accepted, its first
// request not yet read), or until ctx ends. A new connection is closed by
// the server if its request does not come within ReadHeaderTimeout.
func (c *connCounter) waitRequests(ctx context.Context) error {
	for {
		c.mu.Lock()
		if c.changed == nil {
			c.changed = make(chan struct{})
		}
		changed := c.changed
		c.mu.Unlock()
		// Announced before the count is read: a change after the read
		// sees waiting and closes changed (or one closed it already).
		c.waiting.Store(true)
		n := c.count(http.StateNew)
		if n == 0 {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%d new connections: %w", n, ctx.Err())
		}
	}
}
