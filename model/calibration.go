package model

import (
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/quant"
)

// ActivationRange is the range of the activations an int8 layer
// quantizes, measured on sample inputs.
type ActivationRange struct {
	Lo, Hi float32
}

// Calibration is static quantization's two steps, handed to a compile in
// Options.Calibration. A Calibration from Measure compiles a model whose
// int8 layers quantize their activations per row, as by default, and
// record the range of every row they quantize; after the model has run
// on sample inputs, Ranges returns them by node (its name, as Layer.Node
// says, and its outputs: "MatMul_3 -> y"). A
// Calibration from Static compiles a model whose int8 layers named in the
// ranges quantize their activations with the per-tensor parameters of
// their range (gemm.StaticActivations: values outside it clamp), their
// Layer.Kernels saying "(static activations)"; the other layers stay per
// row. Either is safe for concurrent use.
type Calibration struct {
	measure bool
	ranges  map[string]ActivationRange // Static's

	mu   sync.Mutex
	acts map[string]*gemm.Activations // by node (calibrationKey)
}

// Measure returns a Calibration whose models measure their int8 layers'
// activation ranges.
func Measure() *Calibration {
	return &Calibration{measure: true, acts: map[string]*gemm.Activations{}}
}

// Static returns a Calibration that fixes the activation quantization of
// the int8 layers of the nodes ranges names. A range that is not finite,
// or whose low end lies above its high end, is an error; one spanning
// less than quant.MinScaleRange (a layer whose samples gave it nothing
// but zeros) leaves its layer per row, as it would otherwise quantize
// every value to 0.
func Static(ranges map[string]ActivationRange) (*Calibration, error) {
	c := &Calibration{ranges: map[string]ActivationRange{}, acts: map[string]*gemm.Activations{}}
	for name, r := range ranges {
		a, err := gemm.StaticActivations(r.Lo, r.Hi)
		if err != nil {
			return nil, fmt.Errorf("model: calibration of node %q: %w", name, err)
		}
		if max(r.Hi, 0)-min(r.Lo, 0) < quant.MinScaleRange {
			continue
		}
		c.ranges[name], c.acts[name] = r, a
	}
	return c, nil
}

// Ranges returns the ranges: for a Calibration from Measure, those the
// int8 layers of its models measured so far, by node (layers that
// quantized nothing yet are left out); for one from Static, those it
// applies.
func (c *Calibration) Ranges() map[string]ActivationRange {
	if !c.measure {
		return maps.Clone(c.ranges)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]ActivationRange{}
	for name, a := range c.acts {
		if lo, hi, rows := a.Range(); rows > 0 {
			out[name] = ActivationRange{lo, hi}
		}
	}
	return out
}

// activations returns how the int8 products of the node keyed quantize
// their activations.
func (c *Calibration) activations(name string) *gemm.Activations {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.acts[name]
	if a == nil && c.measure {
		a = gemm.MeasureActivations()
		c.acts[name] = a
	}
	return a
}

// Activations returns how the node's int8 products quantize their
// activations under the model's calibration (ops.ActivationSource): nil
// without one.
func (n *node) Activations() *gemm.Activations {
	return n.opts.Calibration.activations(n.calibrationKey())
}

// calibrationKey names the graph node n is (or is a part of) in a
// Calibration: its name and its outputs, as ONNX lets two nodes share a
// name but not an output ("Gemm_3 -> logits").
func (n *node) calibrationKey() string {
	g := n.graphNode()
	return n.name + " -> " + strings.Join(g.pb.Outputs, ",")
}
