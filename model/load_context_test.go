package model_test

import (
	"context"
	"errors"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
)

// TestLoadContext: a load whose context has ended stops with the
// context's error; under a live context it loads as LoadWith does.
func TestLoadContext(t *testing.T) {
	data := onnxbuild.Encoder(onnxbuild.DefaultEncoder).Bytes()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := model.LoadContext(ctx, data, model.Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("LoadContext under a cancelled context: %v, want context.Canceled", err)
	}
	m, err := model.LoadContext(context.Background(), data, model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Steps()) == 0 {
		t.Error("the loaded model has no steps")
	}
}
