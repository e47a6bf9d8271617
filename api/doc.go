// Package api serves the Open Inference Protocol (KServe V2) over HTTP/JSON.
//
// NewRouter builds every route on a chi router. Handlers return errors;
// one adapter renders them as {"error": "..."} with the status chosen in
// one place (errors.go).
package api
