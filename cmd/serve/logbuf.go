package main

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Under load the server logs a line per request; written one at a time,
// each is a system call. logBuffer gathers lines and writes them together:
// at most logFlushEvery after the first one waiting, at once when
// logBufferSize bytes wait, and at once after a line at warn level or
// above, so warnings and errors (a panic's stack) are never held back.

const (
	logFlushEvery = 50 * time.Millisecond
	logBufferSize = 32 << 10
)

type logBuffer struct {
	mu    sync.Mutex
	w     io.Writer
	buf   []byte
	timer *time.Timer // pending flush, nil when buf is empty
}

func newLogBuffer(w io.Writer) *logBuffer { return &logBuffer{w: w} }

// Write takes one log line (slog handlers write each record whole).
func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) >= logBufferSize {
		return len(p), b.flushLocked()
	}
	if b.timer == nil {
		b.timer = time.AfterFunc(logFlushEvery, func() { b.Flush() })
	}
	return len(p), nil
}

// Flush writes what waits.
func (b *logBuffer) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.flushLocked()
}

func (b *logBuffer) flushLocked() error {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.w.Write(b.buf)
	if cap(b.buf) > 4*logBufferSize {
		b.buf = nil // one long line (a stack) does not stay held
	} else {
		b.buf = b.buf[:0]
	}
	return err
}

// flushingHandler flushes its buffer after each record at warn level or
// above.
type flushingHandler struct {
	slog.Handler
	buf *logBuffer
}

func (h flushingHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		if ferr := h.buf.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

func (h flushingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushingHandler{h.Handler.WithAttrs(attrs), h.buf}
}

func (h flushingHandler) WithGroup(name string) slog.Handler {
	return flushingHandler{h.Handler.WithGroup(name), h.buf}
}
