// Package api serves the Open Inference Protocol (KServe V2) over HTTP/JSON.
//
// NewRouter builds every route on a chi router. Handlers return errors;
// one adapter renders them as {"error": "..."} with the status of the
// code CodeOf gives the error, the one place errors are mapped
// (errors.go). Work routes run behind one middleware (limits.go) that
// receives the body under a deadline and a memory budget before it takes
// a work slot, and gives the slot back when the answer starts.
package api
