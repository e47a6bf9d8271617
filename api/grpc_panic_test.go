package api

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/quantserve/quantserve/repository"
)

// boomService is a gRPC service whose one method panics.
var boomService = grpc.ServiceDesc{
	ServiceName: "quantserve.test.Boom",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Boom",
		Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
			in := new(emptypb.Empty)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(ctx context.Context, req any) (any, error) {
				var xs []int
				_ = xs[len(in.String())+3] // index out of range
				return in, nil
			}
			return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/quantserve.test.Boom/Boom"}, h)
		},
	}},
}

// TestGRPCPanicIsInternalCountedAndLoggedOnce: a panic in a gRPC handler
// is an Internal status naming it, counted in /metrics by site, its stack
// logged once a minute, and the server goes on answering.
func TestGRPCPanicIsInternalCountedAndLoggedOnce(t *testing.T) {
	var logs syncBuffer
	_, url, _, conn := grpcTestServer(t, Options{Repository: repository.New(serverOptions()), Logger: slog.New(slog.NewTextHandler(&logs, nil))},
		func(g *grpc.Server) { g.RegisterService(&boomService, struct{}{}) })
	for i := 0; i < 3; i++ {
		err := conn.Invoke(context.Background(), "/quantserve.test.Boom/Boom", &emptypb.Empty{}, &emptypb.Empty{})
		wantCode(t, err, codes.Internal, "internal error", "panic at")
	}
	// Still answering (NOT_SERVING: the repository holds no model).
	if r, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil || r.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health after the panics: %v %v", r, err)
	}
	if m := scrape(t, url); m["quantserve_panics_total"] != 3 {
		t.Errorf("quantserve_panics_total = %v, want 3", m["quantserve_panics_total"])
	}
	got := logs.String()
	if n := strings.Count(got, "panic serving request"); n != 1 {
		t.Errorf("%d stacks logged for 3 panics at one site:\n%s", n, got)
	}
	if !strings.Contains(got, "grpc_panic_test.go") || !strings.Contains(got, "method=/quantserve.test.Boom/Boom") {
		t.Errorf("the log names no site or method:\n%s", got)
	}
}
