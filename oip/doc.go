// Package oip holds the Open Inference Protocol (KServe V2) REST message
// types and their JSON codec, and the conversion of the protocol's gRPC
// messages (grpcpb) to and from the same types (grpc.go).
//
// DecodeInferRequest is a single-pass scanner written for infer bodies,
// where number parsing dominates: it decodes each tensor's data straight
// into the typed slice its datatype calls for (no []any), checks the element
// count against the shape before allocating (never more than the body can
// hold), and parses numbers with an exact fast path (Clinger's: a mantissa
// below 2^53 scaled by an exactly representable power of ten, digits read
// up to eight at a time; rounded on to float32 except where the float64
// lands exactly on a float32 midpoint, which strconv decides) before
// falling back to strconv. The run of a flat float array written as
// encoders write it is taken in one loop with no loop per element
// (tightRun); FP32 mantissas below 2^24 divide in float32 there. It was
// chosen by measurement over encoding/json, goccy/go-json,
// bytedance/sonic and minio/simdjson-go: see
// the benchmark in tools/decodebench (in the tools module, so those
// libraries stay out of the server's go.mod) and the README.
package oip
