package attention

import (
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops"
)

// TestDescriptors pins each operator's domain and opset ranges: all of
// them fold when their inputs are known at load.
func TestDescriptors(t *testing.T) {
	for _, c := range []struct {
		domain, op string
		ranges     [][2]int64
	}{
		{"", "Attention", [][2]int64{{23, 23}, {24, 0}}},
		{"ai.onnx.preview", "FlexAttention", [][2]int64{{1, 0}}},
		{"", "RotaryEmbedding", [][2]int64{{23, 0}}},
		{"", "LinearAttention", [][2]int64{{27, 0}}},
		{"", "CausalConvWithState", [][2]int64{{27, 0}}},
		{"quantserve", "Attention", [][2]int64{{1, 0}}},
	} {
		var got [][2]int64
		for _, d := range ops.Descriptors(c.domain, c.op) {
			got = append(got, [2]int64{d.Since, d.Until})
			if !d.Fold || d.Refused {
				t.Errorf("%v does not fold or is refused", d)
			}
		}
		if !slices.Equal(got, c.ranges) {
			t.Errorf("%s %s: opset ranges %v, want %v", c.domain, c.op, got, c.ranges)
		}
	}
}
