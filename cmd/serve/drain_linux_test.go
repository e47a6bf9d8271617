package main

import (
	"bufio"
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// TestRefuseConnections: with the filter on, the kernel completes no new
// handshake (a dial times out), connections already established carry
// data both ways, and once the socket is closed a dial is refused.
func TestRefuseConnections(t *testing.T) {
	ln, err := listenTCP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	client, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	raw, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var refuseErr error
	if err := raw.Control(func(fd uintptr) { refuseErr = refuseConnections(fd) }); err != nil || refuseErr != nil {
		t.Fatal(err, refuseErr)
	}
	var timeout net.Error
	if c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond); !errors.As(err, &timeout) || !timeout.Timeout() {
		if c != nil {
			c.Close()
		}
		t.Fatalf("a dial after the filter: %v, want a timeout (the handshake never completes)", err)
	}
	if _, err := client.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(server).ReadString('\n'); line != "ping\n" || err != nil {
		t.Fatalf("established connection: read %q, %v", line, err)
	}
	if _, err := server.Write([]byte("pong\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(client).ReadString('\n'); line != "pong\n" || err != nil {
		t.Fatalf("established connection: read %q, %v", line, err)
	}
	ln.Close()
	if c, err := net.Dial("tcp", addr); !isRefused(err) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("a dial after close: %v, want connection refused", err)
	}
}

// TestStopServesTheAcceptQueue: connections the kernel accepted before
// stop, and nobody took, wait in the accept queue; stop takes them all,
// closes the socket and hands them to Accept, each is answered, and a
// dial afterwards is refused. Closing the socket with them queued would
// have reset them.
func TestStopServesTheAcceptQueue(t *testing.T) {
	ln, err := listenTCP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newDrainListener(ln)
	addr := l.Addr().String()
	const n = 8
	clients := make([]net.Conn, n)
	for i := range clients {
		if clients[i], err = net.Dial("tcp", addr); err != nil {
			t.Fatal(err)
		}
		defer clients[i].Close()
		if _, err := clients[i].Write([]byte("ping\n")); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type result struct {
		queued int
		err    error
	}
	stopped := make(chan result, 1)
	go func() {
		q, err := l.stop(ctx)
		stopped <- result{q, err}
	}()
	<-l.stopped // the socket is closed: what was queued comes through Accept
	served := make(chan error, n)
	go func() { // a server's accept loop
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, err := bufio.NewReader(c).ReadString('\n')
				if err == nil && line != "ping\n" {
					err = errors.New("read " + line)
				}
				if err == nil {
					_, err = c.Write([]byte("pong\n"))
				}
				served <- err
			}()
		}
	}()
	r := <-stopped
	if r.err != nil || r.queued != n {
		t.Fatalf("stop: %d queued connections, %v; want %d", r.queued, r.err, n)
	}
	for range n {
		if err := <-served; err != nil {
			t.Error(err)
		}
	}
	for i, c := range clients {
		if line, err := bufio.NewReader(c).ReadString('\n'); line != "pong\n" || err != nil {
			t.Errorf("client %d: read %q, %v", i, line, err)
		}
	}
	if c, err := net.Dial("tcp", addr); !isRefused(err) {
		if c != nil {
			c.Close()
		}
		t.Errorf("a dial after stop: %v, want connection refused", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close after stop: %v", err)
	}
}
