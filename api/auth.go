package api

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// requireAdmin refuses requests without "Authorization: Bearer <token>":
// 403 when the server has no admin token (model control is off), 401 when
// the token is missing or wrong.
func (s *server) requireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.adminToken == "" {
			s.writeError(w, r, errorf(CodePermissionDenied, "model control is disabled: start serve with --admin-token (or QUANTSERVE_ADMIN_TOKEN) and send \"Authorization: Bearer <token>\""))
			return
		}
		got, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.adminToken)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="quantserve"`)
			s.writeError(w, r, errorf(CodeUnauthenticated, "this endpoint needs \"Authorization: Bearer <admin token>\" with the server's --admin-token"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearerToken returns the token of an Authorization header's Bearer
// credentials. The scheme is case-insensitive ("bearer", "BEARER") and
// may be followed by more than one space (RFC 7235, 2.1; RFC 6750, 2.1).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimLeft(token, " "), true
}
