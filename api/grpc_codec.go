package api

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/quantserve/quantserve/oip/grpcpb"
)

// grpcCodec is the gRPC server's codec: protobuf, with three kinds of
// message of its own. ModelInfer's request arrives as an inferMessage, its
// bytes kept as received, so the handler measures it against the memory
// budget before decoding it (oip.MeasureGRPCInferRequest); its answer
// leaves as a grpcAnswer, bytes the handler encoded and charged, given
// back when the transport has written them (in a stream, a streamAnswer
// wrapping one). Any other message arrives
// through a decodeTarget, which keeps a decoding error for the call to
// answer with InvalidArgument: gRPC itself answers Internal for a message
// its codec cannot decode.
type grpcCodec struct{ proto encoding.CodecV2 }

func newGRPCCodec() grpcCodec { return grpcCodec{proto: encoding.GetCodecV2("proto")} }

func (c grpcCodec) Name() string { return "proto" }

func (c grpcCodec) Marshal(v any) (mem.BufferSlice, error) {
	switch a := v.(type) {
	case *grpcAnswer:
		return a.buffers(), nil
	case *streamAnswer:
		return a.buffers(), nil
	}
	return c.proto.Marshal(v)
}

func (c grpcCodec) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *inferMessage:
		m.keep(data)
		return nil
	case *decodeTarget:
		if err := c.proto.Unmarshal(data, m.msg); err != nil {
			m.err = status.Errorf(codes.InvalidArgument, "the request is not a valid %s message: %v", messageName(m.msg), err)
		}
		return nil
	}
	return c.proto.Unmarshal(data, v)
}

func messageName(v any) string {
	if m, ok := v.(proto.Message); ok {
		return string(proto.MessageName(m))
	}
	return fmt.Sprintf("%T", v)
}

// inferMessage is a ModelInfer request as received: its bytes, still
// the transport's buffers, and its connection.
type inferMessage struct {
	data mem.BufferSlice
	conn *grpcConn
}

func (m *inferMessage) keep(data mem.BufferSlice) {
	m.data.Free()
	data.Ref()
	m.data = data
}

// free gives the buffers back to the transport.
func (m *inferMessage) free() {
	m.data.Free()
	m.data = nil
}

// decodeTarget is a message to decode, with the error decoding it gave.
type decodeTarget struct {
	msg any
	err error
}

// decodeInto decodes a call's request into v with dec, answering a
// message that does not decode with InvalidArgument.
func decodeInto(dec func(any) error, v any) error {
	t := &decodeTarget{msg: v}
	if err := dec(t); err != nil {
		return err
	}
	return t.err
}

// withDecodeErrors returns desc with its unary methods decoding their
// requests through decodeInto (its streams decode through the stream
// interceptor's observedStream).
func withDecodeErrors(desc grpc.ServiceDesc) *grpc.ServiceDesc {
	methods := make([]grpc.MethodDesc, len(desc.Methods))
	for i, m := range desc.Methods {
		h := m.Handler
		methods[i] = grpc.MethodDesc{MethodName: m.MethodName, Handler: func(srv any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
			return h(srv, ctx, func(v any) error { return decodeInto(dec, v) }, in)
		}}
	}
	desc.Methods = methods
	return &desc
}

// inferenceDesc is GRPCInferenceService's descriptor with ModelInfer
// served by modelInferHandler.
func inferenceDesc() *grpc.ServiceDesc {
	desc := withDecodeErrors(grpcpb.GRPCInferenceService_ServiceDesc)
	for i, m := range desc.Methods {
		if m.MethodName == "ModelInfer" {
			desc.Methods[i].Handler = modelInferHandler
		}
	}
	return desc
}

// modelInferHandler receives a ModelInfer message, within the receive
// deadline (--request-timeout, as an HTTP body; past it the connection is
// dropped, the only way to stop waiting for a client's bytes), and has
// the interceptors run modelInfer on it.
func modelInferHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	g := srv.(*inferenceService)
	in := &inferMessage{conn: g.conns.of(ctx)}
	stop := in.conn.deadline(g.s, "its ModelInfer message did not arrive within --request-timeout")
	err := dec(in)
	stop()
	if err != nil {
		in.free()
		return nil, err
	}
	handler := func(ctx context.Context, req any) (any, error) { return g.modelInfer(ctx, req.(*inferMessage)) }
	if interceptor == nil {
		return handler(ctx, in)
	}
	return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: grpcpb.GRPCInferenceService_ModelInfer_FullMethodName}, handler)
}
