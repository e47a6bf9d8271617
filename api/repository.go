package api

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
)

// The model repository extension (Triton's): list, load and unload models.
// Load and unload change what is served, so they need the admin token.

// requireAdmin refuses requests without "Authorization: Bearer <token>":
// 403 when the server has no admin token (model control is off), 401 when
// the token is missing or wrong.
func (s *server) requireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.adminToken == "" {
			s.writeError(w, r, errorf(CodePermissionDenied, "model control is disabled: start serve with --admin-token (or QUANTSERVE_ADMIN_TOKEN) and send \"Authorization: Bearer <token>\""))
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.adminToken)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="quantserve"`)
			s.writeError(w, r, errorf(CodeUnauthenticated, "this endpoint needs \"Authorization: Bearer <admin token>\" with the server's --admin-token"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// POST /v2/repository/index -> [{"name", "version", "state", "reason"}]
func (s *server) repositoryIndex(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, s.repo.Index())
	return nil
}

// controlContext bounds a load's or unload's wait (for its model's turn,
// for requests in flight) by --request-timeout. It does not end when the
// client goes away: a model control call runs to its end.
func (s *server) controlContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(r.Context()), s.timeout)
}

// POST /v2/repository/models/{model}/load
func (s *server) repositoryLoad(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := s.controlContext(r)
	defer cancel()
	if err := s.repo.Load(ctx, chi.URLParam(r, "model")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{})
	return nil
}

// POST /v2/repository/models/{model}/unload
func (s *server) repositoryUnload(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := s.controlContext(r)
	defer cancel()
	if err := s.repo.Unload(ctx, chi.URLParam(r, "model")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{})
	return nil
}
