package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"os"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/quantserve/quantserve/oip/grpcpb"
)

// grpcTarget is what a gRPC scenario calls: ModelInfer at addr with one
// request, encoded once, over conns client connections.
type grpcTarget struct {
	addr  string
	conns int
	req   []byte // a ModelInferRequest in the protobuf wire format
	md    metadata.MD
}

// grpcRequest encodes a ModelInferRequest for one FP32 input sent in
// raw_input_contents (little-endian), as Triton's clients send it; the
// server then answers in raw_output_contents.
func grpcRequest(model, input string, shape []int, x []float32) []byte {
	raw := make([]byte, 0, 4*len(x))
	for _, v := range x {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
	}
	in := &grpcpb.ModelInferRequest_InferInputTensor{Name: input, Datatype: "FP32"}
	for _, d := range shape {
		in.Shape = append(in.Shape, int64(d))
	}
	b, err := proto.Marshal(&grpcpb.ModelInferRequest{ModelName: model, Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{in}, RawInputContents: [][]byte{raw}})
	if err != nil {
		panic(err) // a message built here always encodes
	}
	return b
}

// readGRPCRequest reads a ModelInferRequest from a file: protobuf JSON (as
// grpcurl -d takes it) when it starts with '{', else the wire format. It
// returns the request in the wire format.
func readGRPCRequest(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	req := &grpcpb.ModelInferRequest{}
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		err = protojson.Unmarshal(b, req)
	} else {
		err = proto.Unmarshal(b, req)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: not a ModelInferRequest: %w", path, err)
	}
	if req.GetModelName() == "" {
		return nil, fmt.Errorf("%s: the ModelInferRequest names no model", path)
	}
	return proto.Marshal(req)
}

// rawMsg is a message the load generator does not look into: a request
// sent as the bytes it was encoded to once, an answer read and dropped,
// as the HTTP loops send a prepared body and discard the answer's. The
// load generator's own work per call is then the transport's alone.
type rawMsg struct {
	b []byte // to send
	n int    // received
}

// rawCodec passes rawMsg through as the "proto" codec would its encoding.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(*rawMsg)
	if !ok {
		return nil, fmt.Errorf("rawCodec: %T is not a rawMsg", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(m.b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(*rawMsg)
	if !ok {
		return fmt.Errorf("rawCodec: %T is not a rawMsg", v)
	}
	m.n = data.Len()
	return nil
}

// dial opens n client connections to the target, each a ClientConn of its
// own (a connection of its own), connecting at once.
func (g *grpcTarget) dial(n int) ([]*grpc.ClientConn, func(), error) {
	var conns []*grpc.ClientConn
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	for range n {
		c, err := grpc.NewClient(g.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{}), grpc.MaxCallRecvMsgSize(math.MaxInt32)))
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		c.Connect()
		conns = append(conns, c)
	}
	return conns, closeAll, nil
}

// grpcCaller calls ModelInfer on one connection. An answer other than OK
// is an error of the kind of its status code (NotFound, Unavailable, ...).
type grpcCaller struct {
	conn    *grpc.ClientConn
	req     *rawMsg
	md      metadata.MD
	timeout time.Duration
}

func (g *grpcCaller) call(ctx context.Context) (string, string) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	if g.md != nil {
		ctx = metadata.NewOutgoingContext(ctx, g.md)
	}
	var resp rawMsg
	if err := g.conn.Invoke(ctx, grpcpb.GRPCInferenceService_ModelInfer_FullMethodName, g.req, &resp); err != nil {
		return "", status.Code(err).String()
	}
	return "OK", ""
}

// callers returns n callers, one per concurrent call, spread round-robin
// over the target's connections (no more connections than calls).
func (g *grpcTarget) callers(n int, timeout time.Duration) ([]caller, func(), error) {
	conns, closeAll, err := g.dial(min(max(g.conns, 1), n))
	if err != nil {
		return nil, nil, err
	}
	req := &rawMsg{b: g.req}
	cs := make([]caller, n)
	for i := range cs {
		cs[i] = &grpcCaller{conn: conns[i%len(conns)], req: req, md: g.md, timeout: timeout}
	}
	return cs, closeAll, nil
}

// pool returns one caller for the open loop: each call takes the next
// connection in turn.
func (g *grpcTarget) pool(timeout time.Duration) (caller, func(), error) {
	conns, closeAll, err := g.dial(max(g.conns, 1))
	if err != nil {
		return nil, nil, err
	}
	req := &rawMsg{b: g.req}
	p := &grpcPool{}
	for _, c := range conns {
		p.cs = append(p.cs, &grpcCaller{conn: c, req: req, md: g.md, timeout: timeout})
	}
	return p, closeAll, nil
}

type grpcPool struct {
	cs   []*grpcCaller
	next atomic.Uint64
}

func (p *grpcPool) call(ctx context.Context) (string, string) {
	return p.cs[p.next.Add(1)%uint64(len(p.cs))].call(ctx)
}

// grpcAddr checks a gRPC target: host:port (no host: 127.0.0.1), on this
// machine unless allowed.
func grpcAddr(addr string, anyHost bool) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("-grpc %q: want host:port", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	addr = net.JoinHostPort(host, port)
	return addr, checkHost("grpc://"+addr, anyHost)
}
