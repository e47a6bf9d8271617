package norm

import (
	"fmt"
	"math"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// BatchNormalization is the BatchNormalization operator, by opset range.
// BatchNormalization: spatial until 8; training mode told by extra
// outputs until 13 (running and saved statistics), by training_mode
// from 14 (running statistics only). Opsets before 7 (is_test) are
// older than quantserve loads.
var BatchNormalization = ops.Op{
	ops.Register(ops.Descriptor{Type: "BatchNormalization", Since: 7, Until: 8, Fold: true}, buildBatchNorm),
	ops.Register(ops.Descriptor{Type: "BatchNormalization", Since: 9, Until: 13, Fold: true}, buildBatchNorm),
	ops.Register(ops.Descriptor{Type: "BatchNormalization", Since: 14, Fold: true}, buildBatchNorm),
}

// BatchNormAttrs are BatchNormalization's attributes.
type BatchNormAttrs struct {
	Epsilon      float32 `onnx:"epsilon" default:"1e-05"`
	Momentum     float32 `onnx:"momentum" default:"0.9"`
	Spatial      bool    `onnx:"spatial" default:"true"` // opsets 7–8
	TrainingMode bool    `onnx:"training_mode"`          // opset 14 on
}

// BatchNormFold is inference BatchNormalization folded into one
// multiply-add per channel: Scale = scale/√(var+ε), Shift = B −
// mean·Scale.
type BatchNormFold struct {
	Scale, Shift     []float64
	scale32, shift32 []float32
}

// BatchNorm is a compiled BatchNormalization: what the builder settled at
// load, which the gradient code reads.
type BatchNorm struct {
	eps, momentum float64
	spatial       bool
	training      bool
	folded        *BatchNormFold
	opset         int64
}

// Training reports whether the node normalizes by the batch's own
// statistics: training_mode from opset 14, extra outputs before.
func (b *BatchNorm) Training() bool { return b.training }

// Folded returns, in inference when scale, B, mean and var were all
// constants, their fold: the node then runs Y = X·Scale[c] + Shift[c] and
// keeps none of the four. Otherwise it returns nil.
func (b *BatchNorm) Folded() *BatchNormFold { return b.folded }

// Layout views an input of the given shape as [N, C, S]: N images of C
// channels of S elements each. Rank 1 is N samples of one channel; with
// spatial false (opsets 7–8) every element after the first axis is a
// channel of its own.
func (a *BatchNormAttrs) Layout(shape []int) (n, c, s int, err error) {
	return bnLayout(shape, a.Spatial)
}

func bnLayout(shape []int, spatial bool) (n, c, s int, err error) {
	switch {
	case len(shape) == 0:
		return 0, 0, 0, ops.InputErrorf("BatchNormalization takes an input of rank 1 or more")
	case len(shape) == 1:
		return shape[0], 1, 1, nil
	case !spatial:
		return shape[0], ops.ProdInts(shape[1:]), 1, nil
	}
	return shape[0], shape[1], ops.ProdInts(shape[2:]), nil
}

// BatchNormParams returns scale, B, mean and var as float64, checking
// they are floating-point vectors of one length.
func BatchNormParams(ts []*tensor.Tensor) ([4][]float64, error) {
	var p [4][]float64
	names := [4]string{"scale", "B", "mean", "var"}
	for i, t := range ts {
		if t == nil {
			return p, ops.InputErrorf("BatchNormalization needs %s", names[i])
		}
		if !isFloatType(t.DType) {
			return p, ops.InputErrorf("BatchNormalization %s must be floating-point, got %v", names[i], t.DType)
		}
		p[i] = t.Float64s()
		if len(p[i]) != len(p[0]) {
			return p, ops.InputErrorf("BatchNormalization %s has %d values, scale %d", names[i], len(p[i]), len(p[0]))
		}
	}
	return p, nil
}

// NewBatchNormFold folds scale, bias, mean and variance (one value per
// channel) and eps into one multiply-add per channel.
func NewBatchNormFold(scale, bias, mean, variance []float64, eps float64) *BatchNormFold {
	f := &BatchNormFold{Scale: make([]float64, len(scale)), Shift: make([]float64, len(scale))}
	f.scale32, f.shift32 = make([]float32, len(scale)), make([]float32, len(scale))
	for c := range scale {
		a := scale[c] / math.Sqrt(variance[c]+eps)
		f.Scale[c], f.Shift[c] = a, bias[c]-mean[c]*a
		f.scale32[c], f.shift32[c] = float32(a), float32(f.Shift[c])
	}
	return f
}

// apply runs y = x·Scale[c] + Shift[c] over x laid out as [N, C, S].
func (f *BatchNormFold) apply(x *tensor.Tensor, s int, oc *ops.Context) (*tensor.Tensor, error) {
	return normRun("BatchNormalization", x,
		func(v []float32) ([]float32, error) { return affineChannels(v, f.scale32, f.shift32, s, oc) },
		func(v []float64) ([]float64, error) { return affineChannels(v, f.Scale, f.Shift, s, oc) })
}

func buildBatchNorm(n *ops.Node, at *BatchNormAttrs) (ops.Operator, error) {
	maxOut := 5
	if n.Opset >= 14 {
		maxOut = 3
	}
	if err := n.CheckArity(5, 5, 1, maxOut); err != nil {
		return nil, err
	}
	if err := n.CheckAttrOpsets(ops.OpsetAttr{Name: "spatial", Since: 7, Until: 8}, ops.OpsetAttr{Name: "training_mode", Since: 14}); err != nil {
		return nil, err
	}
	b := &BatchNorm{eps: float64(at.Epsilon), momentum: float64(at.Momentum), spatial: at.Spatial, opset: n.Opset}
	extra := slices.ContainsFunc(n.Outputs[1:], func(s string) bool { return s != "" })
	if n.Opset >= 14 {
		b.training = at.TrainingMode
		if extra && !b.training {
			return nil, fmt.Errorf("outputs running_mean and running_var are defined only with training_mode=1")
		}
	} else {
		b.training = extra
	}
	consts := []*tensor.Tensor{n.Const(1), n.Const(2), n.Const(3), n.Const(4)}
	if !b.training && !slices.Contains(consts, nil) {
		p, err := BatchNormParams(consts)
		if err != nil {
			return nil, err
		}
		b.folded = NewBatchNormFold(p[0], p[1], p[2], p[3], b.eps)
		n.HoldInputs(1, 2, 3, 4)
	}
	return b, nil
}

// Run normalizes in[0] by the fold, the given statistics or (training)
// the batch's own.
func (b *BatchNorm) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	if !isFloatType(x.DType) {
		return nil, ops.InputErrorf("BatchNormalization does not take %v", x.DType)
	}
	N, C, S, err := bnLayout(x.Shape, b.spatial)
	if err != nil {
		return nil, err
	}
	if !b.training {
		f := b.folded
		if f == nil {
			p, err := BatchNormParams(in[1:5])
			if err != nil {
				return nil, err
			}
			f = NewBatchNormFold(p[0], p[1], p[2], p[3], b.eps)
		}
		if len(f.Scale) != C {
			return nil, ops.InputErrorf("BatchNormalization input %v has %d channels, its scale %d", x.Shape, C, len(f.Scale))
		}
		return ops.Result(f.apply(x, S, c))
	}
	p, err := BatchNormParams(in[1:5])
	if err != nil {
		return nil, err
	}
	if len(p[0]) != C {
		return nil, ops.InputErrorf("BatchNormalization input %v has %d channels, its scale %d", x.Shape, C, len(p[0]))
	}
	mean, variance, err := batchStats(x, N, C, S, c)
	if err != nil {
		return nil, err
	}
	f := NewBatchNormFold(p[0], p[1], mean, variance, b.eps)
	y, err := f.apply(x, S, c)
	if err != nil {
		return nil, err
	}
	momentum := b.momentum
	runMean, runVar := make([]float64, C), make([]float64, C)
	for c := range runMean {
		runMean[c] = p[2][c]*momentum + mean[c]*(1-momentum)
		runVar[c] = p[3][c]*momentum + variance[c]*(1-momentum)
	}
	statShape := in[3].Shape
	if b.opset >= 14 {
		return []*tensor.Tensor{y, ops.FromFloat64s(in[3].DType, statShape, runMean), ops.FromFloat64s(in[4].DType, in[4].Shape, runVar)}, nil
	}
	return []*tensor.Tensor{y, ops.FromFloat64s(x.DType, statShape, runMean), ops.FromFloat64s(x.DType, statShape, runVar),
		ops.FromFloat64s(x.DType, statShape, mean), ops.FromFloat64s(x.DType, statShape, variance)}, nil
}

// batchStats returns each channel's mean and population variance over
// the batch and spatial positions of x laid out as [N, C, S].
func batchStats(x *tensor.Tensor, N, C, S int, oc *ops.Context) (mean, variance []float64, err error) {
	v := x.Float64s()
	mean, variance = make([]float64, C), make([]float64, C)
	cnt := float64(N * S)
	planes := 0
	if S > 0 {
		planes = len(v) / S // N·C, or 0 for an empty input
	}
	for i := 0; i < planes; i++ {
		if err := oc.Tick(S); err != nil {
			return nil, nil, err
		}
		for _, e := range v[i*S : (i+1)*S] {
			mean[i%C] += e
		}
	}
	for c := range mean {
		mean[c] /= cnt
	}
	for i := 0; i < planes; i++ {
		if err := oc.Tick(S); err != nil {
			return nil, nil, err
		}
		m := mean[i%C]
		for _, e := range v[i*S : (i+1)*S] {
			variance[i%C] += (e - m) * (e - m)
		}
	}
	for c := range variance {
		variance[c] /= cnt
	}
	return mean, variance, nil
}
