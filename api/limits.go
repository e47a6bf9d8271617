package api

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// The work routes (infer, grad, train, tensor operations) run behind two
// limits: a bound on requests in flight, beyond which the server answers
// 503 with Retry-After at once instead of queueing without bound, and a
// deadline after which the request's context is cancelled (the executor
// checks it between nodes) and the answer is 504.

// DefaultMaxInFlight bounds concurrent work requests by default.
const DefaultMaxInFlight = 64

// DefaultRequestTimeout is the default deadline of a work request.
const DefaultRequestTimeout = 60 * time.Second

func (s *server) limitWork(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.inflight <- struct{}{}:
		default:
			w.Header().Set("Retry-After", "1")
			writeError(w, r, errorf(http.StatusServiceUnavailable, fmt.Sprintf("the server is busy: %d requests are in flight (--max-inflight); retry shortly", cap(s.inflight))))
			return
		}
		if s.tel != nil {
			s.tel.InFlight(r.Context(), 1)
			defer s.tel.InFlight(r.Context(), -1)
		}
		defer func() { <-s.inflight }()
		ctx, cancel := context.WithTimeout(r.Context(), s.timeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
