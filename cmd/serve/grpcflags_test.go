package main

import (
	"io"
	"testing"

	"github.com/quantserve/quantserve/api"
)

// TestGRPCMaxStreamsFlag: --grpc-max-streams, its environment twin and
// default, and the refusal of a bound below one call.
func TestGRPCMaxStreamsFlag(t *testing.T) {
	env := func(k string) string {
		if k == "QUANTSERVE_GRPC_MAX_STREAMS" {
			return "7"
		}
		return ""
	}
	if c, err := parseConfig(nil, env, io.Discard); err != nil || c.grpcMaxStreams != 7 {
		t.Errorf("from the environment: %+v %v", c, err)
	}
	if c, err := parseConfig([]string{"--grpc-max-streams", "3"}, env, io.Discard); err != nil || c.grpcMaxStreams != 3 {
		t.Errorf("the flag over the environment: %+v %v", c, err)
	}
	if c, err := parseConfig(nil, func(string) string { return "" }, io.Discard); err != nil || c.grpcMaxStreams != api.DefaultGRPCMaxStreams {
		t.Errorf("default: %+v %v", c, err)
	}
	for _, bad := range []string{"0", "-1", "many"} {
		if _, err := parseConfig([]string{"--grpc-max-streams", bad}, env, io.Discard); err == nil {
			t.Errorf("--grpc-max-streams %s accepted", bad)
		}
	}
}
