// Package grpcpb holds the Go code generated from the Open Inference
// Protocol's gRPC service definition (open_inference_grpc.proto, package
// inference, service GRPCInferenceService; Apache-2.0, see LICENSE), copied
// unchanged from github.com/kserve/open-inference-protocol at commit
// d49cc23f89d709d87b210ef9449e273ae243984e.
//
// The generated files are committed. To regenerate them, install protoc
// (Debian: protobuf-compiler) and the two plugins at the versions below,
// then run go generate ./oip/grpcpb; .ci/run checks that the committed
// files are current.
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
package grpcpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go_opt=Mopen_inference_grpc.proto=github.com/quantserve/quantserve/oip/grpcpb --go-grpc_out=. --go-grpc_opt=paths=source_relative --go-grpc_opt=Mopen_inference_grpc.proto=github.com/quantserve/quantserve/oip/grpcpb open_inference_grpc.proto
