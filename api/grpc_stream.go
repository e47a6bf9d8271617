package api

import (
	"context"
	"errors"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/quantserve/quantserve/oip/grpcpb"
)

// streamDrainPoll is how often a ModelStreamInfer call waiting for its
// next request looks whether the server drains.
const streamDrainPoll = time.Second

// ModelStreamInfer is Triton's bidirectional inference stream: each
// request the client sends is answered in order, one at a time, through
// the path and limits of ModelInfer (the memory budget, a work slot,
// --request-timeout per request). A request that fails is answered with
// its error in error_message, and the stream goes on. The call ends when
// the client closes its side (OK), goes away, or the server drains
// (Unavailable, once the request running has been answered).
func (g *inferenceService) ModelStreamInfer(stream grpc.BidiStreamingServer[grpcpb.ModelInferRequest, grpcpb.ModelStreamInferResponse]) error {
	ctx := stream.Context()
	conn := g.conns.of(ctx)
	next, stop := receiveInOrder(stream, conn)
	defer stop()
	tick := time.NewTicker(streamDrainPoll)
	defer tick.Stop()
	for {
		var r received
		arrived := next()
	wait:
		for {
			select {
			case r = <-arrived:
				break wait
			case <-tick.C:
				if g.s.draining() {
					return errorf(CodeUnavailable, "the server is shutting down: open the stream again (on another replica)")
				}
			}
		}
		if errors.Is(r.err, io.EOF) {
			return nil
		}
		if r.err != nil {
			return r.err
		}
		if err := g.streamOne(ctx, stream, r.in); err != nil {
			return err
		}
		if g.s.draining() {
			return errorf(CodeUnavailable, "the server is shutting down: open the stream again (on another replica)")
		}
	}
}

// streamOne runs one request of a stream and sends its answer, or its
// error as error_message. Its model and version are its own (the
// per-model latency), as a ModelInfer call's.
func (g *inferenceService) streamOne(ctx context.Context, stream grpc.ServerStream, in *inferMessage) error {
	start := time.Now()
	info := &reqInfo{id: infoOf(ctx).id}
	ctx = context.WithValue(ctx, reqInfoKey{}, info)
	answer, err := g.modelInfer(ctx, in)
	if info.model != "" {
		g.s.tel.InferenceLatency(ctx, info.model, info.version, time.Since(start))
	}
	if err != nil {
		msg := status.Convert(g.s.grpcStatus(ctx, grpcpb.GRPCInferenceService_ModelStreamInfer_FullMethodName, err)).Message()
		return stream.SendMsg(&grpcpb.ModelStreamInferResponse{ErrorMessage: msg})
	}
	if err := stream.SendMsg(&streamAnswer{answer: answer}); err != nil {
		answer.release()
		return err
	}
	return nil
}

// received is a stream's request as received, or the error receiving it.
type received struct {
	in  *inferMessage
	err error
}

// receiveInOrder receives a stream's requests one at a time, each only
// when asked for: next asks for the next request and returns the channel
// it arrives on; no request is read ahead of the one being answered.
// stop ends the receiving: a request received after it is given back.
func receiveInOrder(stream grpc.ServerStream, conn *grpcConn) (next func() <-chan received, stop func()) {
	want := make(chan struct{})
	got := make(chan received, 1)
	go func() {
		defer close(got)
		for range want {
			in := &inferMessage{conn: conn}
			err := stream.RecvMsg(in)
			if err != nil {
				in.free()
				in = nil
			}
			got <- received{in: in, err: err}
			if err != nil {
				return
			}
		}
	}()
	return func() <-chan received {
			want <- struct{}{}
			return got
		}, func() {
			close(want)
			go func() {
				for r := range got {
					if r.in != nil {
						r.in.free()
					}
				}
			}()
		}
}

// streamAnswer is a ModelStreamInferResponse holding an encoded
// ModelInferResponse as its infer_response: the answer's bytes after the
// field's tag and length, sent as they are (grpcCodec.Marshal).
type streamAnswer struct{ answer *grpcAnswer }

func (a *streamAnswer) buffers() mem.BufferSlice {
	head := protowire.AppendTag(nil, 2, protowire.BytesType) // infer_response
	head = protowire.AppendVarint(head, uint64(len(a.answer.data)))
	return append(mem.BufferSlice{mem.SliceBuffer(head)}, a.answer.buffers()...)
}
