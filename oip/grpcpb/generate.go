// Package grpcpb holds the Go code generated from Triton Inference
// Server's gRPC service definition: grpc_service.proto (package inference,
// service GRPCInferenceService) and model_config.proto, which it imports
// (BSD-3-Clause, see LICENSE), from
// github.com/triton-inference-server/common (protobuf/). Triton's service
// is a superset of the Open Inference Protocol's: the same package,
// service and messages, wire-compatible, plus Triton's RPCs (ModelConfig,
// ModelStatistics, the repository, ModelStreamInfer, shared memory, trace
// and log settings) and its ModelConfig message, the schema of
// config.pbtxt. The files are copied unchanged but for one field:
// ModelMetadataResponse.properties (6), which the Open Inference
// Protocol's proto has and Triton's lacks.
//
// The generated files are committed. To regenerate them, install protoc
// (Debian: protobuf-compiler) and the two plugins at the versions below,
// then run go generate ./oip/grpcpb; .ci/run checks that the committed
// files are current.
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
package grpcpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go_opt=Mgrpc_service.proto=github.com/quantserve/quantserve/oip/grpcpb --go_opt=Mmodel_config.proto=github.com/quantserve/quantserve/oip/grpcpb --go-grpc_out=. --go-grpc_opt=paths=source_relative --go-grpc_opt=Mgrpc_service.proto=github.com/quantserve/quantserve/oip/grpcpb --go-grpc_opt=Mmodel_config.proto=github.com/quantserve/quantserve/oip/grpcpb grpc_service.proto model_config.proto
