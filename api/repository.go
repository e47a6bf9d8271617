package api

import (
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
			writeError(w, r, errorf(http.StatusForbidden, "model control is disabled: start serve with --admin-token (or QUANTSERVE_ADMIN_TOKEN) and send \"Authorization: Bearer <token>\""))
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.adminToken)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="quantserve"`)
			writeError(w, r, errorf(http.StatusUnauthorized, "this endpoint needs \"Authorization: Bearer <admin token>\" with the server's --admin-token"))
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

// POST /v2/repository/models/{model}/load
func (s *server) repositoryLoad(w http.ResponseWriter, r *http.Request) error {
	if err := s.repo.Load(chi.URLParam(r, "model")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{})
	return nil
}

// POST /v2/repository/models/{model}/unload
func (s *server) repositoryUnload(w http.ResponseWriter, r *http.Request) error {
	if err := s.repo.Unload(chi.URLParam(r, "model")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{})
	return nil
}
