package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestConnCounterFollowsServer serves on 127.0.0.1 with the counter as the
// server's ConnState and checks its counts at each step of a connection's
// life: new before its first request, active while served, idle between
// keep-alive requests, gone once closed; and waitRequests returns only
// once no connection is new.
func TestConnCounterFollowsServer(t *testing.T) {
	var conns connCounter
	inHandler := make(chan struct{})
	release := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Each change reaches the test once counted: net/http reports idle
	// after the client may have read the answer.
	events := make(chan http.ConnState, 64)
	srv := &http.Server{
		ConnState: func(c net.Conn, st http.ConnState) {
			conns.track(c, st)
			events <- st
		},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/block" {
				inHandler <- struct{}{}
				<-release
			}
			io.WriteString(w, "ok")
		}),
	}
	go srv.Serve(ln)
	defer srv.Close()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	next(t, events, http.StateNew)
	if n := conns.count(http.StateNew); n != 1 {
		t.Fatalf("accepted, no request yet: %d new", n)
	}

	// A waiter for new connections waits while one is new, and gives up
	// when its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	err = conns.waitRequests(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waitRequests with a new connection: %v", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- conns.waitRequests(context.Background()) }()

	rd := bufio.NewReader(c)
	fmt.Fprintf(c, "GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
	<-inHandler
	next(t, events, http.StateActive)
	if err := <-waited; err != nil {
		t.Fatalf("waitRequests once the request came: %v", err)
	}
	if n, a := conns.count(http.StateNew), conns.active(); n != 0 || a != 1 {
		t.Fatalf("while serving: %d new, %d active; want 0, 1", n, a)
	}
	release <- struct{}{}
	readAnswer(t, rd)
	next(t, events, http.StateIdle)
	if i, a := conns.count(http.StateIdle), conns.active(); i != 1 || a != 0 {
		t.Fatalf("between requests: %d idle, %d active; want 1, 0", i, a)
	}
	for range 3 { // keep-alive requests: active, then idle again
		fmt.Fprintf(c, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
		readAnswer(t, rd)
		next(t, events, http.StateActive)
		next(t, events, http.StateIdle)
		if i := conns.count(http.StateIdle); i != 1 {
			t.Fatalf("after a keep-alive request: %d idle", i)
		}
	}
	c.Close()
	next(t, events, http.StateClosed)
	for _, st := range []http.ConnState{http.StateNew, http.StateActive, http.StateIdle} {
		if n := conns.count(st); n != 0 {
			t.Errorf("after close: %d connections %v", n, st)
		}
	}
}

func readAnswer(t *testing.T, rd *bufio.Reader) {
	t.Helper()
	resp, err := http.ReadResponse(rd, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// next returns once the server has reported (and counted) the change to
// want; no other change may come first.
func next(t *testing.T, events <-chan http.ConnState, want http.ConnState) {
	t.Helper()
	if st := <-events; st != want {
		t.Fatalf("connection went %v, want %v", st, want)
	}
}

// TestConnCounterConcurrent drives many connections through every state
// sequence net/http produces, concurrently with each other and with a
// waiter, and checks every count comes back to zero and the waiter
// returns.
func TestConnCounterConcurrent(t *testing.T) {
	var conns connCounter
	const workers, perWorker = 8, 200
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range perWorker {
				c, _ := net.Pipe()
				conns.track(c, http.StateNew)
				switch (w + i) % 4 {
				case 0: // closed before its first request
					conns.track(c, http.StateClosed)
				case 1: // keep-alive, closed while idle
					for range 3 {
						conns.track(c, http.StateActive)
						conns.track(c, http.StateIdle)
					}
					conns.track(c, http.StateClosed)
				case 2: // closed while active
					conns.track(c, http.StateActive)
					conns.track(c, http.StateClosed)
				default: // hijacked
					conns.track(c, http.StateActive)
					conns.track(c, http.StateHijacked)
				}
				// After its end a late change of a closed connection
				// counts nothing.
				conns.track(c, http.StateIdle)
			}
		}()
	}
	waited := make(chan error, 1)
	go func() {
		<-start
		waited <- conns.waitRequests(context.Background())
	}()
	close(start)
	wg.Wait()
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	for _, st := range []http.ConnState{http.StateNew, http.StateActive, http.StateIdle} {
		if n := conns.count(st); n != 0 {
			t.Errorf("%d connections left %v", n, st)
		}
	}
}

// BenchmarkConnCounterRequest is the tracker's cost per keep-alive
// request (active, then idle), from parallel connections.
func BenchmarkConnCounterRequest(b *testing.B) {
	var conns connCounter
	b.RunParallel(func(pb *testing.PB) {
		c, _ := net.Pipe()
		conns.track(c, http.StateNew)
		for pb.Next() {
			conns.track(c, http.StateActive)
			conns.track(c, http.StateIdle)
		}
		conns.track(c, http.StateClosed)
	})
}
