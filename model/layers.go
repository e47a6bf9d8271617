package model

import (
	"strings"

	"github.com/quantserve/quantserve/ops"
)

// MinQuantizedWeights is the smallest weight (K·N) quantized: below it the
// product is too small for int8 to pay for quantizing activations.
const MinQuantizedWeights = ops.MinQuantizedWeights

// Layer records how one matrix-product node runs.
type Layer struct {
	Node    string `json:"node"`
	Op      string `json:"op"`
	K       int    `json:"k"`
	N       int    `json:"n"`
	Kernels string `json:"kernels"` // "int8 per_channel", "float32", "float32 (feeds Log)", ...
}

// Int8 reports whether the layer runs on the int8 kernels. Builders name
// the kernels a layer runs on first in its Kernels ("int8 per_channel",
// "int8 exact, 2 groups"; "float32 (small weight)", "depthwise float32"),
// so this is the one place that reads them.
func (l Layer) Int8() bool { return strings.HasPrefix(l.Kernels, "int8") }

// Int8Layers counts the layers of layers that run on the int8 kernels:
// the int8_layers the load log, the model's metadata and configuration
// and /metrics report.
func Int8Layers(layers []Layer) int {
	n := 0
	for _, l := range layers {
		if l.Int8() {
			n++
		}
	}
	return n
}
