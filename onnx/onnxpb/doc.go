// Package onnxpb reads and writes the ONNX protobuf wire format (onnx.proto,
// IR version 3 and later) for the subset of messages a model server needs:
// ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto,
// ValueInfoProto and TypeProto.
//
// It is written against google.golang.org/protobuf/encoding/protowire, so no
// generated code or protoc run is needed. Field numbers follow onnx.proto;
// unknown fields are skipped, as protobuf requires. Decoding never panics on
// malformed input: it returns an error naming the message being decoded.
package onnxpb
