package attention

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: "ai.onnx.preview", Type: "FlexAttention", Since: 1, Fold: true}, buildFlexAttention)
}

// FlexAttentionAttrs are the attributes of ai.onnx.preview.FlexAttention.
type FlexAttentionAttrs struct {
	ScoreMod         *onnxpb.Graph `onnx:"score_mod"`
	ProbMod          *onnxpb.Graph `onnx:"prob_mod"`
	Scale            *float32      `onnx:"scale"`
	SoftmaxPrecision *int64        `onnx:"softmax_precision"`
}

// modNames name FlexAttention's two subgraphs, by their index in
// flexAttention.mods.
var modNames = [2]string{"score_mod", "prob_mod"}

// flexAttention implements FlexAttention: rank-4 Q, K, V, scores (in the
// softmax precision: FLOAT, or DOUBLE for FP64 inputs) passed whole
// through the score_mod subgraph before the softmax and through prob_mod
// after it.
type flexAttention struct {
	mods      [2]ops.Graph // score_mod and prob_mod; nil when absent
	scale     *float32
	precision int64 // softmax_precision; 0: the inputs' type
}

func buildFlexAttention(n *ops.Node, at *FlexAttentionAttrs) (ops.Operator, error) {
	if err := n.CheckArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	op := &flexAttention{scale: at.Scale}
	for i, g := range []*onnxpb.Graph{at.ScoreMod, at.ProbMod} {
		if g == nil {
			continue
		}
		sub, err := n.Graph(g)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", modNames[i], err)
		}
		if len(sub.Inputs()) != 1 || len(sub.Outputs()) != 1 {
			return nil, fmt.Errorf("%s takes one input and gives one output, has %d and %d", modNames[i], len(sub.Inputs()), len(sub.Outputs()))
		}
		op.mods[i] = sub
	}
	if p := at.SoftmaxPrecision; p != nil {
		switch onnxpb.DataType(*p) {
		case onnxpb.Float, onnxpb.Double:
			op.precision = *p
		default:
			return nil, ops.Unsupportedf("FlexAttention softmax_precision %v", onnxpb.DataType(*p))
		}
	}
	return op, nil
}

func (op *flexAttention) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	q, k, v := in[0], in[1], in[2]
	for _, x := range []*tensor.Tensor{q, k, v} {
		if !x.DType.IsFloat() || x.DType != q.DType || x.Rank() != 4 {
			return nil, ops.InputErrorf("FlexAttention takes rank-4 Q, K and V of one floating-point type, got %v%s, %v%s, %v%s", q.DType, tensor.ShapeString(q.Shape), k.DType, tensor.ShapeString(k.Shape), v.DType, tensor.ShapeString(v.Shape))
		}
	}
	sh := attnShape{b: q.Shape[0], hq: q.Shape[1], sq: q.Shape[2], d: q.Shape[3], hkv: k.Shape[1], t: k.Shape[2], dv: v.Shape[3]}
	if k.Shape[0] != sh.b || v.Shape[0] != sh.b || k.Shape[3] != sh.d || v.Shape[1] != sh.hkv || v.Shape[2] != sh.t || sh.hkv == 0 || sh.hq%sh.hkv != 0 {
		return nil, ops.InputErrorf("FlexAttention: Q %s, K %s and V %s do not agree", tensor.ShapeString(q.Shape), tensor.ShapeString(k.Shape), tensor.ShapeString(v.Shape))
	}
	if _, err := tensor.NumElements([]int{sh.b, sh.hq, sh.sq, sh.t}); err != nil {
		return nil, ops.InputErrorf("FlexAttention: %v", err)
	}
	scale := 1 / math.Sqrt(float64(sh.d))
	if op.scale != nil {
		scale = float64(*op.scale)
	}
	f := flexCall{c: c, in: in, mods: op.mods, sh: sh, scale: scale, soft: c.Engine().Table().SoftmaxRow, pace: c}
	if op.precision == int64(onnxpb.Double) || op.precision == 0 && q.DType == tensor.Float64 {
		return flexIn(&f, float64s, newAttnRef[float64])
	}
	return flexIn(&f, float32s, engineKernels(c.Engine()))
}

// flexCall is one run of a FlexAttention node.
type flexCall struct {
	c     *ops.Context
	soft  func([]float32, float32) // the SoftmaxRow of the run's engine
	pace  *ops.Context
	in    []*tensor.Tensor
	mods  [2]ops.Graph
	sh    attnShape
	scale float64
}

// flexIn computes FlexAttention in T: toT converts a floating-point
// tensor's values, newKern makes the product kernels.
func flexIn[T float32 | float64](f *flexCall, toT func(*tensor.Tensor) []T, newKern func(attnShape, attnView[T], attnView[T]) attnKernels[T]) ([]*tensor.Tensor, error) {
	sh := f.sh
	q := headMajor(toT(f.in[0]), sh.hq, sh.sq, sh.d)
	kern := newKern(sh, headMajor(toT(f.in[1]), sh.hkv, sh.t, sh.d), headMajor(toT(f.in[2]), sh.hkv, sh.t, sh.dv))
	defer kern.release()
	scoreShape := []int{sh.b, sh.hq, sh.sq, sh.t}
	scores := make([]T, sh.b*sh.hq*sh.sq*sh.t)
	rep, blk := sh.hq/sh.hkv, sh.sq*sh.t
	sc := T(f.scale)
	for b := 0; b < sh.b; b++ {
		for g := 0; g < sh.hkv; g++ {
			kern.prepareK(b, g)
			for r := 0; r < rep; r++ {
				if err := f.pace.Tick(blk * sh.d); err != nil {
					return nil, err
				}
				h := g*rep + r
				s := scores[(b*sh.hq+h)*blk : (b*sh.hq+h+1)*blk]
				kern.qk(q.data[q.at(b, h):], q.ss, sh.sq, s)
				for j := range s {
					s[j] *= sc
				}
			}
		}
	}
	modify := func(i int) error {
		if f.mods[i] == nil {
			return nil
		}
		x := tensor.From(scoreShape, scores)
		out, err := f.mods[i].Run(f.c, f.in, []*tensor.Tensor{x})
		if err != nil {
			return err
		}
		got, ok := out[0].Data.([]T)
		if !ok || !ops.EqualShape(out[0].Shape, scoreShape) {
			return ops.InputErrorf("FlexAttention: %s returned %v%s for %v%s", modNames[i], out[0].DType, tensor.ShapeString(out[0].Shape), x.DType, tensor.ShapeString(scoreShape))
		}
		scores = got
		return nil
	}
	if err := modify(0); err != nil {
		return nil, err
	}
	if f.mods[0] != nil { // the subgraph's result may be a value it shares
		scores = append([]T(nil), scores...)
	}
	for i := 0; i*sh.t < len(scores) && sh.t > 0; i++ {
		softmaxRow(scores[i*sh.t:(i+1)*sh.t], f.soft)
	}
	if err := modify(1); err != nil {
		return nil, err
	}
	yd := make([]T, sh.b*sh.hq*sh.sq*sh.dv)
	y := headMajor(yd, sh.hq, sh.sq, sh.dv)
	for b := 0; b < sh.b; b++ {
		for g := 0; g < sh.hkv; g++ {
			kern.prepareV(b, g)
			for r := 0; r < rep; r++ {
				if err := f.pace.Tick(blk * sh.dv); err != nil {
					return nil, err
				}
				h := g*rep + r
				kern.pv(scores[(b*sh.hq+h)*blk:], sh.sq, y.data[y.at(b, h):], y.ss)
			}
		}
	}
	if err := kern.err(); err != nil {
		return nil, err
	}
	dt := f.in[0].DType
	return []*tensor.Tensor{{DType: dt, Shape: []int{sh.b, sh.hq, sh.sq, sh.dv}, Data: roundAs(yd, dt)}}, nil
}
