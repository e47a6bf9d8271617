package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// CORS (--cors-origins) lets pages served from other origins call the
// API from a browser. Off by default. A request whose Origin is allowed
// gets Access-Control-Allow-Origin (the origin itself, or "*" when any is
// allowed) and the response headers a client may read; a preflight
// (OPTIONS with Access-Control-Request-Method) from an allowed origin is
// answered 204 with the methods and request headers the API takes. No
// credentials (cookies) are involved: the admin token travels in the
// Authorization header, which preflights allow.

const (
	corsMethods       = "GET, HEAD, POST"
	corsAllowHeaders  = "Authorization, Content-Type, Inference-Header-Content-Length, X-Request-Id, traceparent, tracestate"
	corsExposeHeaders = "X-Request-Id, Inference-Header-Content-Length, Retry-After, WWW-Authenticate"
	corsMaxAge        = "600"
)

type corsPolicy struct {
	any     bool
	origins map[string]bool
}

// newCORSPolicy returns the policy for origins, nil (CORS off) when empty.
func newCORSPolicy(origins []string) *corsPolicy {
	if len(origins) == 0 {
		return nil
	}
	p := &corsPolicy{origins: map[string]bool{}}
	for _, o := range origins {
		if o == "*" {
			p.any = true
		}
		p.origins[o] = true
	}
	return p
}

func (p *corsPolicy) allows(origin string) bool { return p.any || p.origins[origin] }

// ParseCORSOrigins reads --cors-origins: a comma-separated list of origins
// (scheme://host[:port], as browsers send them in Origin) or "*". Empty
// means none.
func ParseCORSOrigins(list string) ([]string, error) {
	var out []string
	for _, o := range strings.Split(list, ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		if o != "*" {
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil || u.Fragment != "" {
				return nil, fmt.Errorf("origin %q: want scheme://host[:port] (like https://app.example.com) or *", o)
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// corsHandler applies the CORS policy; without one it adds nothing.
func (s *server) corsHandler(next http.Handler) http.Handler {
	p := s.cors
	if p == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		if !p.any {
			h.Add("Vary", "Origin")
		}
		origin := r.Header.Get("Origin")
		if origin == "" || !p.allows(origin) {
			next.ServeHTTP(w, r)
			return
		}
		if p.any {
			h.Set("Access-Control-Allow-Origin", "*")
		} else {
			h.Set("Access-Control-Allow-Origin", origin)
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Add("Vary", "Access-Control-Request-Method")
			h.Add("Vary", "Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Methods", corsMethods)
			h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			h.Set("Access-Control-Max-Age", corsMaxAge)
			infoOf(r.Context()).route = "preflight"
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		next.ServeHTTP(w, r)
	})
}
