package contrib

import (
	"fmt"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: "com.microsoft", Type: "EmbedLayerNormalization", Since: 1, Fold: true}, buildEmbedLayerNorm)
}

// EmbedLayerNormAttrs are EmbedLayerNormalization's attributes.
type EmbedLayerNormAttrs struct {
	Epsilon float32 `onnx:"epsilon" default:"1e-12"`
	// MaskIndexType tells shape inference whether the node has a
	// mask_index output (0: none, 1: a vector of batch values); the
	// values computed do not depend on it.
	MaskIndexType int64 `onnx:"mask_index_type" default:"1"`
}

// embedLayerNorm implements EmbedLayerNormalization, the embedding layer
// of BERT: for token (b, s), the sum of three embedding rows,
//
//	e = (word_embedding[input_ids[b,s]] + position_embedding[p]) + segment_embedding[segment_ids[b,s]]
//
// with p = position_ids[b,s] (position_ids [1, sequence] serves every
// batch item) or, without position_ids, s; then the layer normalization
// of e over the hidden axis, (e - mean)·inv_std_var·gamma + beta with
// inv_std_var = 1/√(var + epsilon).
//
// input_ids, segment_ids and mask are INT32 [batch, sequence]; the
// embeddings are [rows, hidden], gamma and beta [hidden]. Without
// segment_ids no segment row is added, unless segment_embedding is given:
// then its row 0 is, as in ONNX Runtime. An id outside its embedding's
// rows is an input error. The outputs are output [batch, sequence,
// hidden]; mask_index, INT32 [batch], the count of mask values equal to 1
// in each batch item's row (0 without a mask); and embedding_sum, e. The
// sums are computed in float32 (FLOAT16 values converted first), as ONNX
// Runtime computes them; the statistics and the normalization in
// float64, each value rounded once.
type embedLayerNorm struct {
	norm skipLayerNorm // its normalize, with epsilon
	outs int           // how many outputs the node has
	want [3]bool       // which of them the graph reads
}

func buildEmbedLayerNorm(n *ops.Node, at *EmbedLayerNormAttrs) (ops.Operator, error) {
	if err := n.CheckCounts(7, 9, 1, 3); err != nil {
		return nil, err
	}
	for _, i := range []int{0, 2, 3, 5, 6} {
		if n.Inputs[i] == "" {
			return nil, fmt.Errorf("input %d is required but absent", i)
		}
	}
	if !(at.Epsilon >= 0) {
		return nil, fmt.Errorf("epsilon %v is not a nonnegative number", at.Epsilon)
	}
	if at.MaskIndexType != 0 && at.MaskIndexType != 1 {
		return nil, ops.Unsupportedf("EmbedLayerNormalization mask_index_type=%d (it is 0 or 1)", at.MaskIndexType)
	}
	op := &embedLayerNorm{norm: skipLayerNorm{eps: float64(at.Epsilon)}, outs: len(n.Outputs)}
	for i, name := range n.Outputs {
		op.want[i] = name != ""
	}
	return op, nil
}

// embedRows is where each token's embedding rows start: word, position
// and segment (-1: none), token after token.
type embedRows struct{ word, pos, seg []int }

func (op *embedLayerNorm) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	const name = "EmbedLayerNormalization"
	ids, segIDs, word, pos, segEmb := in[0], in[1], in[2], in[3], in[4]
	gammaT, betaT, mask, posIDs := in[5], in[6], ops.Optional(in, 7), ops.Optional(in, 8)
	if err := sameType(name, word, pos, segEmb, gammaT, betaT); err != nil {
		return nil, err
	}
	if ids.Rank() != 2 {
		return nil, ops.InputErrorf("%s's input_ids must be [batch, sequence], got %s", name, tensor.ShapeString(ids.Shape))
	}
	batch, seq := ids.Shape[0], ids.Shape[1]
	if word.Rank() != 2 {
		return nil, ops.InputErrorf("%s's word_embedding must be [rows, hidden], got %s", name, tensor.ShapeString(word.Shape))
	}
	hidden := word.Shape[1]
	for _, e := range []struct {
		what string
		t    *tensor.Tensor
	}{{"position_embedding", pos}, {"segment_embedding", segEmb}} {
		if e.t != nil && (e.t.Rank() != 2 || e.t.Shape[1] != hidden) {
			return nil, ops.InputErrorf("%s's %s must be [rows, %d], got %s", name, e.what, hidden, tensor.ShapeString(e.t.Shape))
		}
	}
	rows, err := embeddingRows(ids, segIDs, posIDs, mask, word, pos, segEmb)
	if err != nil {
		return nil, err
	}
	gamma, err := vecValues(name, "gamma", gammaT, hidden)
	if err != nil {
		return nil, err
	}
	beta, err := vecValues(name, "beta", betaT, hidden)
	if err != nil {
		return nil, err
	}
	wv, err := values(name, "word_embedding", word)
	if err != nil {
		return nil, err
	}
	pv, err := values(name, "position_embedding", pos)
	if err != nil {
		return nil, err
	}
	var sv []float32
	if segEmb != nil {
		if sv, err = values(name, "segment_embedding", segEmb); err != nil {
			return nil, err
		}
	}

	tokens := batch * seq
	sum, y := make([]float32, tokens*hidden), make([]float32, tokens*hidden)
	err = rowBlocks(c, tokens, hidden, func(r0, r1 int) {
		for r := r0; r < r1; r++ {
			s := sum[r*hidden : (r+1)*hidden]
			w, p := wv[rows.word[r]:], pv[rows.pos[r]:]
			for j := range s {
				s[j] = w[j] + p[j]
			}
			if g := rows.seg[r]; g >= 0 {
				for j, x := range sv[g : g+hidden] {
					s[j] += x
				}
			}
			op.norm.normalize(y[r*hidden:(r+1)*hidden], s, gamma, beta)
		}
	})
	if err != nil {
		return nil, err
	}
	shape := []int{batch, seq, hidden}
	outs := []*tensor.Tensor{result(word.DType, shape, y), nil, nil}
	if op.want[1] {
		outs[1] = tensor.From([]int{batch}, maskIndex(mask, batch, seq))
	}
	if op.want[2] {
		outs[2] = result(word.DType, shape, sum)
	}
	return outs[:op.outs], nil
}

// vecValues returns the values of t, an input of op named what that must
// be a vector of n values.
func vecValues(op, what string, t *tensor.Tensor, n int) ([]float32, error) {
	if err := vector(op, what, t, n); err != nil {
		return nil, err
	}
	return values(op, what, t)
}

// int32Input returns the values of t, an INT32 input of
// EmbedLayerNormalization named what that must have shape shape (nil:
// any).
func int32Input(what string, t *tensor.Tensor, shape []int) ([]int32, error) {
	v, ok := t.Data.([]int32)
	if !ok {
		return nil, ops.InputErrorf("EmbedLayerNormalization's %s must be INT32, got %v", what, t.DType)
	}
	if shape != nil && !slices.Equal(t.Shape, shape) {
		return nil, ops.InputErrorf("EmbedLayerNormalization's %s must have input_ids' shape %s, got %s", what, tensor.ShapeString(shape), tensor.ShapeString(t.Shape))
	}
	return v, nil
}

// embeddingRows checks the ids of a run against their embeddings and
// returns where each token's rows start (mask is only checked).
func embeddingRows(ids, segIDs, posIDs, mask, word, pos, segEmb *tensor.Tensor) (embedRows, error) {
	const name = "EmbedLayerNormalization"
	batch, seq, hidden := ids.Shape[0], ids.Shape[1], word.Shape[1]
	tokens := batch * seq
	r := embedRows{make([]int, tokens), make([]int, tokens), make([]int, tokens)}
	lookup := func(what string, i int, id int32, emb *tensor.Tensor, embName string) (int, error) {
		if id < 0 || int(id) >= emb.Shape[0] {
			return 0, ops.InputErrorf("%s's %s[%d] = %d is outside %s's %d rows", name, what, i, id, embName, emb.Shape[0])
		}
		return int(id) * hidden, nil
	}
	wid, err := int32Input("input_ids", ids, nil)
	if err != nil {
		return r, err
	}
	for i, id := range wid {
		if r.word[i], err = lookup("input_ids", i, id, word, "word_embedding"); err != nil {
			return r, err
		}
	}
	if mask != nil {
		if _, err := int32Input("mask", mask, ids.Shape); err != nil {
			return r, err
		}
	}
	if posIDs == nil { // token s at position s
		if tokens > 0 && seq > pos.Shape[0] {
			return r, ops.InputErrorf("%s's sequence of %d tokens exceeds position_embedding's %d rows", name, seq, pos.Shape[0])
		}
		for i := range r.pos {
			r.pos[i] = i % seq * hidden
		}
	} else {
		pid, err := int32Input("position_ids", posIDs, nil)
		if err != nil {
			return r, err
		}
		if posIDs.Rank() != 2 || posIDs.Shape[1] != seq || posIDs.Shape[0] != batch && posIDs.Shape[0] != 1 {
			return r, ops.InputErrorf("%s's position_ids must be [%d, %d] or [1, %d], got %s", name, batch, seq, seq, tensor.ShapeString(posIDs.Shape))
		}
		for i := range r.pos {
			j := i % len(pid) // [1, sequence] serves every batch item
			if r.pos[i], err = lookup("position_ids", j, pid[j], pos, "position_embedding"); err != nil {
				return r, err
			}
		}
	}
	switch {
	case segIDs != nil:
		if segEmb == nil {
			return r, ops.InputErrorf("%s has segment_ids but no segment_embedding", name)
		}
		sid, err := int32Input("segment_ids", segIDs, ids.Shape)
		if err != nil {
			return r, err
		}
		for i, id := range sid {
			if r.seg[i], err = lookup("segment_ids", i, id, segEmb, "segment_embedding"); err != nil {
				return r, err
			}
		}
	case segEmb != nil: // its row 0 for every token
		if segEmb.Shape[0] == 0 {
			return r, ops.InputErrorf("%s's segment_embedding has no rows", name)
		}
		clear(r.seg)
	default:
		for i := range r.seg {
			r.seg[i] = -1
		}
	}
	return r, nil
}

// maskIndex returns, for each batch item, how many of its mask values
// are 1 (zeros without a mask).
func maskIndex(mask *tensor.Tensor, batch, seq int) []int32 {
	idx := make([]int32, batch)
	if mask == nil {
		return idx
	}
	m := mask.Data.([]int32)
	for b := range idx {
		for _, v := range m[b*seq : (b+1)*seq] {
			if v == 1 {
				idx[b]++
			}
		}
	}
	return idx
}
