package api

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// Request lines are rate-limited: formatting and writing a line costs a
// request more than its metrics do, and at thousands of requests a second
// nobody reads them one by one (/metrics counts them all). A request that
// failed (HTTP status 400 and up, a gRPC code other than OK) is always
// logged; of the others at most Options.RequestLogRate lines a second are,
// the first ones of each second, so a server under light traffic logs
// every request. The next of those logged after some were left out says
// how many with unlogged=N. Probes log at debug level, unlimited.

// DefaultRequestLogRate is how many lines of requests that succeed are
// logged a second at most, by default.
const DefaultRequestLogRate = 100

// lineRate lets at most limit lines through each second of the clock
// (every line when limit is 0) and counts those it holds back. It takes
// no lock: one atomic word holds the second and the lines let through in
// it.
type lineRate struct {
	limit   uint64
	state   atomic.Uint64 // second (low 32 bits of Unix time) << 32 | lines let through in it
	skipped atomic.Int64  // lines held back since the last one let through
}

// allow reports whether a line of the second at now may be logged, and
// if so how many were held back before it.
func (l *lineRate) allow(now time.Time) (skipped int64, ok bool) {
	if l.limit == 0 {
		return 0, true
	}
	sec := uint64(now.Unix()) & 0xffffffff
	for {
		s := l.state.Load()
		n := s & 0xffffffff
		if s>>32 != sec {
			n = 0
		}
		if n >= l.limit {
			l.skipped.Add(1)
			return 0, false
		}
		if l.state.CompareAndSwap(s, sec<<32|(n+1)) {
			if l.skipped.Load() == 0 {
				return 0, true
			}
			return l.skipped.Swap(0), true
		}
	}
}

// newLineRate returns the limit of Options.RequestLogRate: 0 means
// DefaultRequestLogRate, negative means every line.
func newLineRate(rate int) *lineRate {
	switch {
	case rate == 0:
		rate = DefaultRequestLogRate
	case rate < 0:
		rate = 0
	}
	return &lineRate{limit: uint64(rate)}
}

// logLine tells whether a request's line is to be written: its level is
// enabled, and it is a probe's, a failed request's, or within the rate.
// skipped is the lines held back before it.
func (s *server) logLine(ctx context.Context, probe, failed bool, now time.Time) (skipped int64, ok bool) {
	if !s.log.Enabled(ctx, logLevel(probe)) {
		return 0, false
	}
	if probe || failed {
		return 0, true
	}
	return s.logRate.allow(now)
}

// unlogged is the attribute of a line that follows lines held back.
func unlogged(n int64) slog.Attr { return slog.Int64("unlogged", n) }
