package api

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/quantserve/quantserve"
	"github.com/quantserve/quantserve/api/reference"
)

// GET /openapi.yaml: the description the server was built with.
func (s *server) openapiDocument(w http.ResponseWriter, r *http.Request) error {
	writeAsset(w, "application/yaml", quantserve.OpenAPI)
	return nil
}

// GET /docs: the reference page, rendered in the browser from
// /openapi.yaml by the embedded Redoc.
func (s *server) apiReference(w http.ResponseWriter, r *http.Request) error {
	if strings.HasSuffix(r.URL.Path, "/") {
		// the page's links are relative to /docs
		http.Redirect(w, r, strings.TrimRight(r.URL.Path, "/"), http.StatusMovedPermanently)
		return nil
	}
	writeAsset(w, "text/html; charset=utf-8", reference.Page)
	return nil
}

// GET /docs/redoc.standalone.js
func (s *server) apiReferenceScript(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "public, max-age=3600")
	writeAsset(w, "text/javascript; charset=utf-8", reference.Script)
	return nil
}

func writeAsset(w http.ResponseWriter, contentType string, b []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}
