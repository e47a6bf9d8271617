package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the buffer's timer goroutine.
type lockedBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{}
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.wrote != nil {
		select {
		case l.wrote <- struct{}{}:
		default:
		}
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestLogBuffer(t *testing.T) {
	out := &lockedBuffer{wrote: make(chan struct{}, 1)}
	log, flush, err := newLogger("text", slog.LevelInfo, out)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("request", "n", 1)
	log.Info("request", "n", 2)
	if got := out.String(); got != "" {
		// The timer may have fired already on a slow machine: then both
		// lines are out, in order.
		if !strings.Contains(got, "n=1") || !strings.Contains(got, "n=2") {
			t.Fatalf("partial flush: %q", got)
		}
	}
	log.Warn("trouble", "n", 3)
	got := out.String()
	if i, j, k := strings.Index(got, "n=1"), strings.Index(got, "n=2"), strings.Index(got, "msg=trouble n=3"); i < 0 || j < i || k < j {
		t.Fatalf("after a warning the lines are out in order; got %q", got)
	}

	// Info lines left alone are written by the timer.
	select {
	case <-out.wrote: // the warning's write
	default:
	}
	log.Info("request", "n", 4)
	select {
	case <-out.wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("an info line was never flushed")
	}
	if !strings.Contains(out.String(), "n=4") {
		t.Fatalf("n=4 missing: %q", out.String())
	}

	// A full buffer is written.
	before := len(out.String())
	for i := 0; len(out.String()) == before; i++ {
		if i > logBufferMax/40 {
			t.Fatalf("%d lines and nothing written", i)
		}
		log.Info("request", "padding", strings.Repeat("x", 20))
		if i > logBufferSize/40 {
			select {
			case <-out.wrote:
			case <-time.After(10 * time.Second):
				t.Fatal("a full buffer was never written")
			}
		}
	}
	log.Info("last", "n", 5)
	if err := flush(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "msg=last n=5\n") {
		t.Fatalf("flush left the last line behind: %q", out.String()[max(0, len(out.String())-80):])
	}
}

// gatedWriter blocks each write until the test opens its gate.
type gatedWriter struct {
	lockedBuffer
	entered chan struct{}
	gate    chan struct{}
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	g.entered <- struct{}{}
	<-g.gate
	return g.lockedBuffer.Write(p)
}

// TestLogBufferNeverWaitsForAWrite: while a full buffer is being written
// (here, a write that does not return), requests go on logging into the
// second buffer; nothing is lost or reordered once the write returns.
func TestLogBufferNeverWaitsForAWrite(t *testing.T) {
	g := &gatedWriter{entered: make(chan struct{}), gate: make(chan struct{})}
	log, flush, err := newLogger("text", slog.LevelInfo, g)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("x", 100)
	n := 0
	for ; n*len(line) < logBufferSize; n++ {
		log.Info("request", "n", n, "pad", line)
	}
	select {
	case <-g.entered: // the full buffer's write, blocked
	case <-time.After(10 * time.Second):
		t.Fatal("a full buffer was never written")
	}
	// Well under logBufferMax: none of these lines may wait for the write.
	done := make(chan int)
	go func() {
		m := n
		for ; m < n+logBufferSize/len(line); m++ {
			log.Info("request", "n", m, "pad", line)
		}
		done <- m
	}()
	select {
	case n = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("logging waited for a write under way")
	}
	close(g.gate) // every write from here on returns
	go func() {
		for range g.entered {
		}
	}()
	if err := flush(); err != nil {
		t.Fatal(err)
	}
	close(g.entered)
	got := g.String()
	at := 0
	for i := range n {
		j := strings.Index(got[at:], fmt.Sprintf(" n=%d ", i))
		if j < 0 {
			t.Fatalf("line n=%d missing or out of order", i)
		}
		at += j
	}
}
