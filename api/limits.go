package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quantserve/quantserve/tensor"
)

// The work routes (infer, grad, train, tensor operations) run behind the
// work middleware, in this order:
//
//  0. A body in a content coding (Content-Encoding: gzip, ...) is refused
//     with 415 before it is read: bodies are taken as sent.
//  1. The body is received under a read deadline (--request-timeout from
//     the end of the headers) into a buffer that grows as bytes arrive, never
//     ahead of them, up to --max-body-bytes. Its bytes count against a
//     server-wide budget (--max-inflight-bytes); past it the answer is 503
//     with Retry-After. A client that trickles its body holds a buffer and
//     a goroutine, but no work slot.
//  2. Only then is a work slot taken: past --max-inflight requests in
//     flight the answer is 503 with Retry-After at once, not a queue.
//  3. The handler looks the model up, decodes (decoded tensors count
//     against the budget too) and runs under a deadline of
//     --request-timeout (long kernels check it as they go; the answer is
//     504). Every value the model makes for the request is charged to
//     its share too (model.WithBudget), by the operators whose outputs'
//     size follows from their inputs before they allocate, and so is the
//     answer, before it is encoded: past --max-request-bytes (or the
//     whole budget) the answer is 413 naming the node, past what other
//     requests leave it is 503 with Retry-After.
//  4. When the handler starts writing its answer it gives its work slot
//     back, and the answer is written under a write deadline, so a client
//     that does not read its response holds no slot either.
//
// An early refusal (413, 503 while the body is still arriving) is followed
// by a lingering close: the rest of the body is read and discarded for a
// bounded time and size, so a client that writes its whole body before
// reading (most simple clients) reads the error instead of a reset.

// DefaultMaxInFlight bounds concurrent work requests by default.
const DefaultMaxInFlight = 64

// DefaultRequestTimeout is the default deadline of a work request.
const DefaultRequestTimeout = 60 * time.Second

// DefaultMaxInflightBytes is the default budget of bytes held by work
// requests in flight (bodies and decoded tensors).
const DefaultMaxInflightBytes = 1 << 30

// Lingering close after an early refusal: at most this long and this many
// bytes are read and discarded.
const (
	lingerTime  = 10 * time.Second
	lingerBytes = 256 << 20
)

// firstChunk is the first buffer a body gets; buffers double from there
// as bytes arrive.
const firstChunk = 16 << 10

// reserveAfter is the size past which a body of announced length takes its
// whole length from the budget.
const reserveAfter = 1 << 20

// budget is the server-wide count of bytes held by work requests, each
// of which may hold at most perRequest of it.
type budget struct {
	limit, perRequest int64
	used              atomic.Int64
}

func (b *budget) take(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// account is one request's share of the budget. It is the budget of the
// model runs the request makes (model.Budget), which may charge it from
// another goroutine (a batch's).
type account struct {
	s    *server
	ctx  context.Context
	mu   sync.Mutex
	held int64
}

// grow takes n more bytes from the budget for the request.
func (a *account) grow(n int64) error {
	if n <= 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.s.budget
	if a.held+n > b.perRequest {
		if b.perRequest < b.limit {
			return &Error{Code: CodeTooLarge, Msg: fmt.Sprintf("the request needs more than the memory one request may hold (--max-request-bytes, %s)", formatBytes(b.perRequest))}
		}
		return &Error{Code: CodeTooLarge, Msg: fmt.Sprintf("the request needs more than the server's memory budget for requests in flight (--max-inflight-bytes, %s)", formatBytes(b.limit))}
	}
	if !b.take(n) {
		a.s.tel.Rejected(a.ctx, "memory")
		return &Error{Code: CodeUnavailable, RetryAfter: 1, Msg: fmt.Sprintf("the server is busy: requests in flight hold its memory budget (--max-inflight-bytes, %s); retry shortly", formatBytes(b.limit))}
	}
	a.held += n
	a.s.tel.Memory(n)
	return nil
}

// shrink gives n bytes back.
func (a *account) shrink(n int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n = min(n, a.held)
	if n <= 0 {
		return
	}
	a.held -= n
	a.s.budget.used.Add(-n)
	a.s.tel.Memory(-n)
}

// release gives back everything the request holds.
func (a *account) release() {
	a.mu.Lock()
	n := a.held
	a.mu.Unlock()
	a.shrink(n)
}

// holding returns the bytes the request holds.
func (a *account) holding() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.held
}

// handOver stops counting n bytes the request holds, without giving them
// back: another account (its answer's) holds them from here.
func (a *account) handOver(n int64) {
	a.mu.Lock()
	a.held -= min(n, a.held)
	a.mu.Unlock()
}

// Grow and Shrink make the account the budget of the model runs it
// charges (model.WithBudget).
func (a *account) Grow(n int64) error { return a.grow(n) }
func (a *account) Shrink(n int64)     { a.shrink(n) }

// workHandler is a work route's handler. The work middleware hands it the
// request's input explicitly; it returns an error instead of writing one.
type workHandler func(w http.ResponseWriter, r *http.Request, in *workInput) error

// workInput is what the work middleware hands its handler: the body,
// received whole before the work slot was taken, when it was in, and the
// request's share of the memory budget.
type workInput struct {
	body     []byte
	bodyHeld int64 // the budget the body holds
	acct     *account
	received time.Time // when the body was in
}

func tensorBytes(ts []*tensor.Tensor) int64 {
	var n int64
	for _, t := range ts {
		if t != nil {
			n += int64(t.Len()) * int64(t.DType.Size())
		}
	}
	return n
}

// reserve counts decoded tensors against the memory budget for the rest of
// the request.
func (in *workInput) reserve(ts ...*tensor.Tensor) error {
	return in.acct.grow(tensorBytes(ts))
}

// settle replaces the body in the memory budget by the tensors decoded
// from it, for a handler done with the body: a request whose tensors are
// no larger than its body is never refused once its body is in, however
// busy the server. The handler must not use the body afterwards.
func (in *workInput) settle(ts ...*tensor.Tensor) error {
	body := in.bodyHeld
	in.body, in.bodyHeld = nil, 0
	need := tensorBytes(ts)
	if need <= body {
		in.acct.shrink(body - need)
		return nil
	}
	return in.acct.grow(need - body)
}

// work serves a work route with h (see the top of this file): it receives
// the body, takes a work slot and hands h the body and when it was in.
func (s *server) work(h workHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The account, the answer's writer and the handler's input in one
		// allocation.
		ws := &workState{acct: account{s: s, ctx: r.Context()}}
		rc, acct := http.NewResponseController(w), &ws.acct
		defer acct.release()
		if coding := contentCoding(r.Header); coding != "" {
			w.Header().Set("Accept-Encoding", "identity")
			s.refuse(w, r, rc, errorf(CodeUnsupportedMedia, fmt.Sprintf("the request body has Content-Encoding %q, which the server does not decode: send it uncompressed", coding)), false)
			return
		}
		if r.ContentLength > s.maxBody {
			s.refuse(w, r, rc, &http.MaxBytesError{Limit: s.maxBody}, false)
			return
		}
		setDeadline(rc.SetReadDeadline(time.Now().Add(s.ioTimeout)))
		s.tel.Receiving(1)
		body, err := s.readBody(r, acct)
		s.tel.Receiving(-1)
		if err != nil {
			switch CodeOf(err) {
			case CodeTooLarge, CodeUnavailable:
				s.refuse(w, r, rc, err, true)
			default: // a timeout or a broken body: the connection is of no further use
				w.Header().Set("Connection", "close")
				s.writeError(w, r, err)
			}
			return
		}
		// The body is in. No read deadline while the request computes: one
		// passing would cancel the request's context.
		received := time.Now()
		setDeadline(rc.SetReadDeadline(time.Time{}))
		ctx, release, err := s.admit(r.Context())
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		defer release()
		defer ctx.cancel()
		sw := &ws.sw
		*sw = slotWriter{ResponseWriter: w, release: release, rc: rc, ioTimeout: s.ioTimeout}
		r = r.WithContext(ctx)
		ws.in = workInput{body: body, bodyHeld: acct.holding(), acct: acct, received: received}
		if err := h(sw, r, &ws.in); err != nil {
			s.writeError(sw, r, err)
		}
		// The answer is written: nothing holds the body any more (decoders
		// copy out of it).
		putBody(body)
	})
}

// Body buffers up to maxPooledBody are reused, in power-of-two classes
// from firstChunk: a body's buffer is garbage once its request is
// answered, and at thousands of small requests a second reusing them
// spares the collector most of the server's allocation.
const maxPooledBody = 1 << 20

var bodyPools [bodyClasses]sync.Pool

const bodyClasses = 7 // firstChunk << 6 == maxPooledBody

// bodyClass returns the class whose buffers hold n bytes, or -1.
func bodyClass(n int64) int {
	for c, size := 0, int64(firstChunk); c < bodyClasses; c, size = c+1, size*2 {
		if n <= size {
			return c
		}
	}
	return -1
}

// bodyCap returns the capacity of the buffer getBody returns for n.
func bodyCap(n int64) int64 {
	if c := bodyClass(n); c >= 0 {
		return firstChunk << c
	}
	return n
}

// bodyHolders are the empty *[]byte the pools' buffers travel in, kept
// apart from them so that a buffer going back allocates no holder.
var bodyHolders sync.Pool

// getBody returns a buffer of length l and capacity bodyCap(n).
func getBody(l int, n int64) []byte {
	if c := bodyClass(n); c >= 0 {
		if p, ok := bodyPools[c].Get().(*[]byte); ok {
			b := (*p)[:l]
			*p = nil
			bodyHolders.Put(p)
			return b
		}
		return make([]byte, l, firstChunk<<c)
	}
	return make([]byte, l, n)
}

// putBody gives a buffer from getBody back.
func putBody(b []byte) {
	if c := bodyClass(int64(cap(b))); c >= 0 && cap(b) == firstChunk<<c {
		p, ok := bodyHolders.Get().(*[]byte)
		if !ok {
			p = new([]byte)
		}
		*p = b[:0]
		bodyPools[c].Put(p)
	}
}

// contentCoding returns the content codings r's body is in, as the client
// named them ("gzip", "br, gzip"), or "" for a body taken as sent (no
// Content-Encoding, or identity).
func contentCoding(h http.Header) string {
	var codings []string
	for _, v := range h.Values("Content-Encoding") {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				codings = append(codings, c)
			}
		}
	}
	return strings.Join(codings, ", ")
}

// setDeadline takes the result of setting a connection deadline. It can
// only fail for a ResponseWriter without a connection (an in-memory
// recorder: http.ErrNotSupported) or a connection already closed, where
// there is nothing left to bound.
func setDeadline(error) {}

// readBody reads the request body into a buffer grown as bytes arrive (to
// at most the announced Content-Length, plus one byte to see its end),
// each growth taken from the memory budget first. acct holds nothing else
// yet.
func (s *server) readBody(r *http.Request, acct *account) ([]byte, error) {
	limit := s.maxBody
	bound := limit + 1 // one byte past the limit tells an oversized body
	if r.ContentLength >= 0 {
		bound = min(bound, r.ContentLength+1)
	}
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			n := min(bound, max(2*int64(cap(buf)), firstChunk))
			if n <= int64(cap(buf)) { // more bytes than announced
				n = min(limit+1, int64(cap(buf))+firstChunk)
			}
			// The budget counts the buffer's capacity (the old buffer,
			// garbage after the copy, is not counted twice), except that a
			// body past reserveAfter takes the whole of its announced size
			// at once: large bodies arriving together then either fit or
			// are refused early, instead of all filling the budget halfway
			// and all being refused. Memory is still only taken as bytes
			// arrive.
			want := bodyCap(n)
			if r.ContentLength >= 0 && n > reserveAfter {
				want = max(want, bound)
			}
			if err := acct.grow(want - acct.holding()); err != nil {
				return nil, err
			}
			nb := getBody(len(buf), n)
			copy(nb, buf)
			putBody(buf)
			buf = nb[:len(buf)]
		}
		m, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if int64(len(buf)) > limit {
			return nil, &http.MaxBytesError{Limit: limit}
		}
		switch {
		case err == io.EOF:
			return buf, nil
		case err == io.ErrUnexpectedEOF:
			return nil, errorf(CodeInvalid, "request body ended early")
		case err != nil:
			return nil, err
		}
	}
}

// refuse answers err before the body has been received, then reads and
// discards what is left of it for at most lingerTime and lingerBytes (as
// nginx's lingering close does), so that a client that writes its whole
// body before reading its response reads the error rather than a reset.
// started tells whether the body was being read: a client that asked for
// "100-continue" and was not told to go on sends no body.
func (s *server) refuse(w http.ResponseWriter, r *http.Request, rc *http.ResponseController, err error, started bool) {
	w.Header().Set("Connection", "close")
	s.writeError(w, r, err)
	if !started && r.Header.Get("Expect") == "100-continue" {
		return
	}
	if rc.Flush() != nil {
		return
	}
	setDeadline(rc.SetReadDeadline(time.Now().Add(lingerTime)))
	io.CopyN(io.Discard, r.Body, lingerBytes)
}

// workState is what the work middleware keeps of a request.
type workState struct {
	acct account
	sw   slotWriter
	in   workInput
}

// slotWriter gives the work slot back (release) before the first byte of
// the answer is written: the work is done; and the write gets a deadline.
type slotWriter struct {
	http.ResponseWriter
	release   func()
	rc        *http.ResponseController
	ioTimeout time.Duration
	started   bool
}

func (w *slotWriter) start() {
	if !w.started {
		w.started = true
		w.release()
		setDeadline(w.rc.SetWriteDeadline(time.Now().Add(w.ioTimeout)))
	}
}

func (w *slotWriter) WriteHeader(code int) {
	w.start()
	w.ResponseWriter.WriteHeader(code)
}

func (w *slotWriter) Write(b []byte) (int, error) {
	w.start()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *slotWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
