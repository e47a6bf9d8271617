// Package api serves the Open Inference Protocol (KServe V2) over HTTP/JSON
// and over gRPC.
//
// NewRouter builds every HTTP route on a chi router; New returns a Server
// whose Handler and GRPCServer share one set of limits. Handlers return
// errors; one adapter renders them as {"error": "..."} with the status of
// the code CodeOf gives the error, the one place errors are mapped
// (errors.go), and gRPC answers the same code's GRPCCode. Work routes run
// behind one middleware (limits.go) that receives the body under a
// deadline and a memory budget before it takes a work slot, and gives the
// slot back when the answer starts; gRPC's ModelInfer takes the same steps
// (service.go, grpc.go). Every request gets a request id, a server span and
// one log line (observe.go; successful requests' lines rate-limited,
// reqlog.go); CORS is in cors.go.
package api
