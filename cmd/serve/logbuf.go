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
// at most logFlushEvery after the first one waiting, as soon as
// logBufferSize bytes wait, and at once after a line at warn level or
// above, so warnings and errors (a panic's stack) are never held back.
//
// A request's goroutine only appends its line: the write of a full buffer
// runs on a goroutine of its own while new lines go to a second buffer,
// so a slow or descheduled write (a busy terminal, a pipe, a loaded
// machine) holds no request, nor the logger's lock that every request
// takes. Only when logBufferMax bytes wait (the output has fallen far
// behind) does a line wait for the write, which bounds the memory held.

const (
	logFlushEvery = 50 * time.Millisecond
	logBufferSize = 32 << 10
	logBufferMax  = 8 * logBufferSize
)

type logBuffer struct {
	mu     sync.Mutex // guards buf, timer and kicked
	buf    []byte
	timer  *time.Timer // pending flush, nil when buf is empty
	kicked bool        // a flush of a full buffer is on its way

	wmu   sync.Mutex // held while writing: the writes go out in order
	w     io.Writer
	spare []byte // the buffer last written, reused for the next lines
}

func newLogBuffer(w io.Writer) *logBuffer { return &logBuffer{w: w} }

// Write takes one log line (slog handlers write each record whole).
func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.buf = append(b.buf, p...)
	switch n := len(b.buf); {
	case n >= logBufferMax:
		b.mu.Unlock()
		return len(p), b.Flush()
	case n >= logBufferSize:
		if !b.kicked {
			b.kicked = true
			go b.Flush()
		}
	case b.timer == nil:
		b.timer = time.AfterFunc(logFlushEvery, func() { b.Flush() })
	}
	b.mu.Unlock()
	return len(p), nil
}

// Flush writes what waits, after any write already under way.
func (b *logBuffer) Flush() error {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	b.mu.Lock()
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	b.kicked = false
	out := b.buf
	b.buf = b.spare[:0]
	b.mu.Unlock()
	b.spare = nil
	if len(out) == 0 {
		b.spare = out
		return nil
	}
	_, err := b.w.Write(out)
	if cap(out) <= 4*logBufferSize {
		b.spare = out[:0] // one long line (a stack) does not stay held
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
