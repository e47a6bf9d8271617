package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/quantserve/quantserve/repository"
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

// maxLoadBody bounds a load request's body: a config, not a model.
const maxLoadBody = 4 << 20

// loadOverride reads a load request's optional body, Triton's
// {"parameters": {"config": "<ModelConfig as JSON>"}}: the config used
// for this load in place of the model's config file (nil without one).
func loadOverride(r *http.Request, name string) (*repository.Config, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxLoadBody+1))
	if err != nil {
		return nil, errorf(CodeInvalid, fmt.Sprintf("reading the load request: %v", err))
	}
	if len(body) > maxLoadBody {
		return nil, errorf(CodeInvalid, fmt.Sprintf("the load request is larger than %d bytes", maxLoadBody))
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	var req struct {
		Parameters map[string]json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, errorf(CodeInvalid, fmt.Sprintf("the load request: %v (want {\"parameters\": {\"config\": \"<ModelConfig as JSON>\"}})", err))
	}
	var config *string
	for k, v := range req.Parameters {
		if k != "config" {
			return nil, errorf(CodeInvalid, fmt.Sprintf("load parameter %q is not supported: quantserve takes \"config\" (model files are read from the repository)", k))
		}
		if err := json.Unmarshal(v, &config); err != nil || config == nil {
			return nil, errorf(CodeInvalid, "load parameter \"config\" must be a string holding a ModelConfig as JSON")
		}
	}
	if config == nil {
		return nil, nil
	}
	cfg, err := repository.ParseConfigJSON([]byte(*config), name)
	if err != nil {
		return nil, errorf(CodeInvalid, err.Error())
	}
	return cfg, nil
}

// POST /v2/repository/models/{model}/load, optionally with a config
// override (loadOverride)
func (s *server) repositoryLoad(w http.ResponseWriter, r *http.Request) error {
	name := chi.URLParam(r, "model")
	cfg, err := loadOverride(r, name)
	if err != nil {
		return err
	}
	ctx, cancel := s.controlContext(r)
	defer cancel()
	if err := s.repo.LoadWith(ctx, name, cfg); err != nil {
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
