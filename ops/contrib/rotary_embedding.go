package contrib

import (
	"fmt"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: "com.microsoft", Type: "RotaryEmbedding", Since: 1, Fold: true}, buildRotaryEmbedding)
}

// RotaryEmbeddingAttrs are com.microsoft RotaryEmbedding's attributes.
type RotaryEmbeddingAttrs struct {
	Interleaved      int64 `onnx:"interleaved"`
	IsPackedBatching int64 `onnx:"is_packed_batching"`
	NumHeads         int64 `onnx:"num_heads"`
	RotaryDim        int64 `onnx:"rotary_embedding_dim"`
	// Scale would scale the positions of caches the operator computed
	// itself; it never does (the caches are inputs), so, as in ONNX
	// Runtime, it changes nothing.
	Scale float32 `onnx:"scale" default:"1"`
}

// rotaryEmbedding implements com.microsoft's RotaryEmbedding (RoPE): each
// head's first rotary_embedding_dim values (all of them when it is 0) are
// rotated, as pairs (x1, x2), by the angle of the token's position,
//
//	(x1·cos - x2·sin, x2·cos + x1·sin),  cos = cos_cache[p, i], sin = sin_cache[p, i],
//
// and the values after them pass through. The pairs are the halves of
// the rotary dimension (x[i], x[i + d/2]), or with interleaved adjacent
// values (x[2i], x[2i+1]).
//
// input is [batch, sequence, heads·head_size] or [batch, heads, sequence,
// head_size]; position_ids (INT64) is one value, the position of the
// first token (the others follow it), or [batch, sequence]; cos_cache
// and sin_cache are [max_positions, d/2]. Without rotary_embedding_dim the
// head size is twice the caches' width and num_heads, when given, must
// agree; with it, num_heads is required, the head size is
// hidden/num_heads and the caches are rotary_embedding_dim/2 wide (ONNX
// Runtime's check also lets through caches of head_size/2, which its
// kernel then reads at the rotary dimension's stride: they are refused
// here). is_packed_batching (a ragged batch packed along the sequence)
// changes nothing, as in ONNX Runtime's CPU kernel, where it only lifts
// the check that the sequence fits the caches: here each token's
// position is checked against them in either case.
type rotaryEmbedding struct {
	interleaved      bool
	numHeads, rotDim int
}

func buildRotaryEmbedding(n *ops.Node, at *RotaryEmbeddingAttrs) (ops.Operator, error) {
	if err := n.CheckArity(4, 4, 1, 1); err != nil {
		return nil, err
	}
	if at.Interleaved != 0 && at.Interleaved != 1 {
		return nil, ops.Unsupportedf("RotaryEmbedding interleaved=%d (it is 0 or 1)", at.Interleaved)
	}
	if at.IsPackedBatching != 0 && at.IsPackedBatching != 1 {
		return nil, ops.Unsupportedf("RotaryEmbedding is_packed_batching=%d (it is 0 or 1)", at.IsPackedBatching)
	}
	switch {
	case at.NumHeads < 0 || at.NumHeads > 1<<20:
		return nil, fmt.Errorf("num_heads %d is out of range", at.NumHeads)
	case at.RotaryDim < 0 || at.RotaryDim > 1<<20:
		return nil, fmt.Errorf("rotary_embedding_dim %d is out of range", at.RotaryDim)
	case at.RotaryDim%2 != 0:
		return nil, fmt.Errorf("rotary_embedding_dim %d is odd: it rotates pairs of values", at.RotaryDim)
	case at.RotaryDim > 0 && at.NumHeads == 0:
		return nil, fmt.Errorf("rotary_embedding_dim needs num_heads")
	}
	return &rotaryEmbedding{interleaved: at.Interleaved == 1, numHeads: int(at.NumHeads), rotDim: int(at.RotaryDim)}, nil
}

// rotaryLayout is where one run's values lie: for batch item b, token s
// and head h, the head's head values start at b·batch + s·seq + h·head.
type rotaryLayout struct {
	batches, seqLen, heads, headSize, rot int
	batch, seq, head                      int // strides
}

// layout checks the shapes of a run's inputs against the attributes.
func (op *rotaryEmbedding) layout(x, cos, sin *tensor.Tensor) (rotaryLayout, error) {
	var l rotaryLayout
	if cos.Rank() != 2 || !slices.Equal(cos.Shape, sin.Shape) {
		return l, ops.InputErrorf("RotaryEmbedding's cos_cache and sin_cache must be of one shape [max_positions, rotary_dim/2], got %s and %s",
			tensor.ShapeString(cos.Shape), tensor.ShapeString(sin.Shape))
	}
	half := cos.Shape[1]
	var hidden int
	switch x.Rank() {
	case 3:
		l.batches, l.seqLen, hidden = x.Shape[0], x.Shape[1], x.Shape[2]
	case 4:
		l.batches, l.heads, l.seqLen, l.headSize = x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
		hidden = l.heads * l.headSize
	default:
		return l, ops.InputErrorf("RotaryEmbedding's input must be [batch, sequence, hidden] or [batch, heads, sequence, head_size], got %s", tensor.ShapeString(x.Shape))
	}
	head := 2 * half
	if op.rotDim > 0 {
		if hidden%op.numHeads != 0 {
			return l, ops.InputErrorf("RotaryEmbedding's hidden size %d is not a multiple of num_heads %d", hidden, op.numHeads)
		}
		head = hidden / op.numHeads
	}
	if head == 0 || hidden%head != 0 {
		return l, ops.InputErrorf("RotaryEmbedding's hidden size %d is not a multiple of the head size %d (twice cos_cache's width)", hidden, head)
	}
	heads := hidden / head
	if x.Rank() == 4 && (heads != l.heads || head != l.headSize) {
		return l, ops.InputErrorf("RotaryEmbedding's input %s does not have heads of %d values", tensor.ShapeString(x.Shape), head)
	}
	if op.numHeads > 0 && op.numHeads != heads {
		return l, ops.InputErrorf("RotaryEmbedding's input has %d heads of %d values, num_heads says %d", heads, head, op.numHeads)
	}
	l.heads, l.headSize, l.rot = heads, head, head
	if op.rotDim > 0 {
		l.rot = op.rotDim
	}
	if l.rot > head {
		return l, ops.InputErrorf("RotaryEmbedding's rotary_embedding_dim %d exceeds the head size %d", l.rot, head)
	}
	if half != l.rot/2 {
		return l, ops.InputErrorf("RotaryEmbedding's caches are %d wide, want rotary_dim/2 = %d", half, l.rot/2)
	}
	if x.Rank() == 3 { // [batch, sequence, heads, head_size]
		l.head, l.seq, l.batch = head, hidden, l.seqLen*hidden
	} else { // [batch, heads, sequence, head_size]
		l.seq, l.head, l.batch = head, l.seqLen*head, hidden*l.seqLen
	}
	return l, nil
}

// positions returns each token's position, batch item after batch item,
// checked against the caches' max positions.
func positions(pos *tensor.Tensor, l rotaryLayout, limit int) ([]int, error) {
	ids, ok := pos.Data.([]int64)
	if !ok {
		return nil, ops.InputErrorf("RotaryEmbedding's position_ids must be INT64, got %v", pos.DType)
	}
	p := make([]int, l.batches*l.seqLen)
	switch {
	case len(ids) == 1 && pos.Rank() <= 1:
		if ids[0] < 0 || ids[0] > int64(limit-l.seqLen) {
			return nil, ops.InputErrorf("RotaryEmbedding's first position %d and %d tokens exceed the caches' %d positions", ids[0], l.seqLen, limit)
		}
		for i := range p {
			p[i] = int(ids[0]) + i%l.seqLen
		}
	case slices.Equal(pos.Shape, []int{l.batches, l.seqLen}):
		for i, id := range ids {
			if id < 0 || id >= int64(limit) {
				return nil, ops.InputErrorf("RotaryEmbedding's position_ids[%d] = %d is outside the caches' %d positions", i, id, limit)
			}
			p[i] = int(id)
		}
	default:
		return nil, ops.InputErrorf("RotaryEmbedding's position_ids must be one value or [batch, sequence] = [%d, %d], got %s", l.batches, l.seqLen, tensor.ShapeString(pos.Shape))
	}
	return p, nil
}

func (op *rotaryEmbedding) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, pos, cosT, sinT := in[0], in[1], in[2], in[3]
	if err := sameType("RotaryEmbedding", x, cosT, sinT); err != nil {
		return nil, err
	}
	l, err := op.layout(x, cosT, sinT)
	if err != nil {
		return nil, err
	}
	p, err := positions(pos, l, cosT.Shape[0])
	if err != nil {
		return nil, err
	}
	v, err := values("RotaryEmbedding", "input", x)
	if err != nil {
		return nil, err
	}
	cos, err := values("RotaryEmbedding", "cos_cache", cosT)
	if err != nil {
		return nil, err
	}
	sin, err := values("RotaryEmbedding", "sin_cache", sinT)
	if err != nil {
		return nil, err
	}
	y := make([]float32, len(v))
	half := l.rot / 2
	// One block unit is a token: its heads' values.
	err = rowBlocks(c, l.batches*l.seqLen, l.heads*l.headSize, func(t0, t1 int) {
		for t := t0; t < t1; t++ {
			b, s := t/l.seqLen, t%l.seqLen
			cs, sn := cos[p[t]*half:(p[t]+1)*half], sin[p[t]*half:(p[t]+1)*half]
			for h := 0; h < l.heads; h++ {
				o := b*l.batch + s*l.seq + h*l.head
				op.rotate(y[o:o+l.headSize], v[o:o+l.headSize], cs, sn, l.rot)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{result(x.DType, x.Shape, y)}, nil
}

// rotate writes head x rotated to y: its first rot values in pairs by the
// angles of cos and sin (rot/2 each), the rest as they are.
func (op *rotaryEmbedding) rotate(y, x, cos, sin []float32, rot int) {
	half := rot / 2
	for i := 0; i < half; i++ {
		i1, i2 := i, i+half
		if op.interleaved {
			i1, i2 = 2*i, 2*i+1
		}
		x1, x2 := float64(x[i1]), float64(x[i2])
		c, s := float64(cos[i]), float64(sin[i])
		y[i1] = float32(x1*c - x2*s)
		y[i2] = float32(x2*c + x1*s)
	}
	copy(y[rot:], x[rot:])
}
