package contrib

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: "com.microsoft", Type: "Gelu", Since: 1, Fold: true}, buildGelu)
}

// gelu implements com.microsoft's Gelu: Y = X·Φ(X) = 0.5·X·(1 + erf(X/√2)),
// GELU's exact form (ai.onnx's Gelu of opset 20 with approximate "none").
// It has no attributes.
type gelu struct{}

func buildGelu(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return gelu{}, nil
}

func (gelu) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	v, err := values("Gelu", "X", x)
	if err != nil {
		return nil, err
	}
	y, err := geluRows(c, v, nil, max(len(v), 1))
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{result(x.DType, x.Shape, y)}, nil
}

// geluRows returns gelu(v + bias) on the engine's kernel, v taken as rows
// of size values and bias (nil for none) added to each row.
func geluRows(c *ops.Context, v, bias []float32, size int) ([]float32, error) {
	y := make([]float32, len(v))
	if len(v) == 0 {
		return y, nil
	}
	k := c.Engine().Table().Gelu
	if bias == nil {
		// Rows are one long run: split it for the deadline only.
		err := rowBlocks(c, len(v), 1, func(r0, r1 int) { k(y[r0:r1], v[r0:r1], nil) })
		return y, err
	}
	err := rowBlocks(c, len(v)/size, size, func(r0, r1 int) {
		for r := r0; r < r1; r++ {
			k(y[r*size:(r+1)*size], v[r*size:(r+1)*size], bias)
		}
	})
	return y, err
}
