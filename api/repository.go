package api

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"
)

// The model repository extension (Triton's): list, load and unload models.
// Load and unload change what is served, so they need the admin token
// (requireAdmin).

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
