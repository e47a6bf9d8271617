package matmul

import (
	"math"
	"sync"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "DynamicQuantizeLinear", Since: 11, Fold: true}, buildDynamicQuantizeLinear)
}

// dynamicQuantizeLinear is a compiled DynamicQuantizeLinear: x quantized
// to UINT8 over [min(x, 0), max(x, 0)], with the scale and zero point it
// chose (ONNX Runtime's dynamic quantization of activations).
type dynamicQuantizeLinear struct{}

func buildDynamicQuantizeLinear(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 3, 3); err != nil {
		return nil, err
	}
	return dynamicQuantizeLinear{}, nil
}

func (dynamicQuantizeLinear) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	xs, ok := in[0].Data.([]float32)
	if !ok {
		return nil, ops.InputErrorf("DynamicQuantizeLinear takes FP32, got %v", in[0].DType)
	}
	q, err := newDynamicQuant(c, xs)
	if err != nil {
		return nil, err
	}
	y := make([]uint8, len(xs))
	if err := c.InPieces(len(xs), func(p, e int) { q.quantizeWith(q.table, xs[p:e], y[p:e]) }); err != nil {
		return nil, err
	}
	return []*tensor.Tensor{
		{DType: tensor.Uint8, Shape: in[0].Shape, Data: y},
		tensor.Scalar(q.scale),
		tensor.Scalar(uint8(q.zp)),
	}, nil
}

// dynamicQuant is DynamicQuantizeLinear's choice for one tensor: the
// scale and zero point of its range, and how its values quantize. The
// quantserve.DynamicLinear fusion quantizes with the same value, so that
// the two agree bit for bit.
type dynamicQuant struct {
	scale, zp float32
	hi        float32         // max(x, 0)
	table     *dispatch.Table // the engine's
	// fast: every value is finite and the scale normal (or +Inf), so
	// that x/scale lies within ±256 (or is clamped to it harmlessly) and
	// rounds with float32 arithmetic; otherwise each value takes the
	// specification's formula in float64.
	fast bool
}

// newDynamicQuant returns the quantization DynamicQuantizeLinear chooses
// for x: scale (max(x, 0) - min(x, 0)) / 255 in float32, zero point
// saturate(roundEven(0 - min(x, 0)/scale)) (0 when the scale is 0). The
// range comes from the table's MinMax when x is finite and from a plain
// loop otherwise (NaN takes over min and max as Go's min and max have it).
func newDynamicQuant(c *ops.Context, x []float32) (dynamicQuant, error) {
	t := c.Engine().Table()
	var lo, hi float32
	finite := true
	// Pieces of the range on the engine's cores: a minimum and a maximum
	// are the same whatever the order the pieces fold in.
	var mu sync.Mutex
	err := c.ParallelRows(len(x), ops.VectorCost, func(p, q int) {
		l, h, ok := t.MinMax(x[p:q])
		mu.Lock()
		defer mu.Unlock()
		finite = finite && ok
		lo, hi = min(lo, l), max(hi, h)
	})
	if err != nil {
		return dynamicQuant{}, err
	}
	if !finite {
		lo, hi = 0, 0
		err := c.InPieces(len(x), func(p, q int) {
			for _, v := range x[p:q] {
				lo, hi = min(lo, v), max(hi, v)
			}
		})
		if err != nil {
			return dynamicQuant{}, err
		}
	}
	d := dynamicQuant{scale: (hi - lo) / 255, hi: hi, table: t}
	if d.scale != 0 {
		d.zp = float32(min(max(math.RoundToEven(float64(0-lo/d.scale)), 0), 255))
	}
	d.fast = finite && d.scale >= math.SmallestNonzeroFloat32*(1<<23) // normal or +Inf
	return d, nil
}

// roundMagic is 1.5·2^23: for |q| <= 2^22, (q + roundMagic) rounds q to
// an integer, ties to even, and holds it in its low mantissa bits.
const roundMagic = 0x1.8p23

// quantize writes y[i] = saturate(roundEven(x[i]/scale) + zp), the
// division in float32, for i < len(x) (y[i] = 0 with a zero scale).
func (d dynamicQuant) quantize(x []float32, y []uint8) {
	y = y[:len(x)]
	switch {
	case d.scale == 0:
		clear(y)
	case d.fast:
		// |x| <= hi - lo and a normal scale is within an ulp of
		// (hi - lo)/255, so |x/scale| <= 255.0001 (0 for a scale of +Inf):
		// well inside the rounding trick's range. The zero point and the
		// trick's offset add as one constant.
		s, zp := d.scale, int32(d.zp)-0x4b400000
		for i, v := range x {
			r := int32(math.Float32bits(v/s+roundMagic)) + zp
			y[i] = uint8(min(max(r, 0), 255))
		}
	default:
		for i, v := range x {
			y[i] = uint8(min(max(math.RoundToEven(float64(v/d.scale))+float64(d.zp), 0), 255))
		}
	}
}

// quantizeWith is quantize on table t's vector kernels: with a normal
// scale and finite values, QuantizeDivU8 (the same division, rounding and
// saturation: TestDynamicQuantFast).
func (d dynamicQuant) quantizeWith(t *dispatch.Table, x []float32, y []uint8) {
	if !d.fast || d.scale == 0 {
		d.quantize(x, y)
		return
	}
	t.QuantizeDivU8(x, d.scale, int32(d.zp), y[:len(x)])
}

// wide reports whether some value may quantize to a byte above 128: the
// largest byte is that of max(x, 0), as quantization keeps order (with
// NaN or ±Inf in x, any byte may come).
func (d dynamicQuant) wide() bool {
	if !d.fast {
		return true
	}
	var b [1]uint8
	d.quantize([]float32{d.hi}, b[:])
	return b[0] > 128
}
