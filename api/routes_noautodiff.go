//go:build !autodiff

package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/quantserve/quantserve/dispatch"
)

// mountAutodiff answers the gradient routes with 501 naming the build tag
// that serves them. Nothing panics; the server keeps serving.
func (s *server) mountAutodiff(r chi.Router) {
	unavailable := s.handle(func(w http.ResponseWriter, r *http.Request) error {
		return dispatch.CheckAutodiff(dispatch.Enabled)
	})
	for _, prefix := range modelPrefixes {
		r.Method(http.MethodPost, prefix+"/grad", unavailable)
	}
	r.Method(http.MethodPost, "/v2/models/{model}/train", unavailable)
}

func autodiffExtensions() []string { return nil }
