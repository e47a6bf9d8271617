package batching

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
)

// TestCheckUnderTheLoadDeadline: a probe whose run never ends on its own
// stops with the load's deadline and says so, rather than reporting the
// model as not probed.
func TestCheckUnderTheLoadDeadline(t *testing.T) {
	m, err := model.Load(onnxbuild.EndlessLoop().Bytes())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	probed, err := Check(ctx, m)
	if probed || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Check past the deadline: probed %v, %v; want the deadline's error", probed, err)
	}
}
