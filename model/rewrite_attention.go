package model

import (
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// The "attention" rewrite replaces multi-head self-attention written
// with plain operators, as encoders export it,
//
//	Qh = Transpose(Reshape(Q, [0, 0, H, D]), perm=[0, 2, 1, 3])   (so Kh, Vh)
//	Kt = Transpose(Kh, perm=[0, 1, 3, 2])   (or Transpose(Reshape(K, ...), perm=[0, 2, 3, 1]))
//	S  = MatMul(Qh, Kt), then optionally Mul(S, c) or Div(S, c) by a scalar constant
//	P  = Softmax(S, axis=-1)
//	Y  = Reshape(Transpose(MatMul(P, Vh), perm=[0, 2, 1, 3]), [0, 0, H·D])
//
// with each intermediate value read by the next step only, by one
// quantserve.Attention (package ops/attention) on Q, K and V as they are
// ([batch, seq, H·D]): the heads are read and written in place by
// strides, one head's scores at a time, with no transposed copies nor
// batch-wide scores tensors. The scale c (1/c for Div) is applied to the
// scores before the softmax, as the graph's Mul does.

func init() {
	registerRewrite("attention", func(r *rewriter) bool {
		changed := false
		for _, n := range r.g.Nodes {
			if r.fuseAttention(n) {
				changed = true
			}
		}
		return changed
	})
}

// fuseAttention replaces the pattern around Softmax node sm, if it is
// there, and reports whether it did.
func (r *rewriter) fuseAttention(sm *onnxpb.Node) bool {
	if !r.is(sm, "Softmax") || len(sm.Inputs) != 1 || len(sm.Outputs) != 1 {
		return false
	}
	axis := int64(-1)
	if r.opset(sm) < 13 {
		axis = 1
	}
	if a := attrOf(sm, "axis"); a != nil {
		axis = a.I
	}
	if axis != -1 && axis != 3 {
		return false
	}
	chain := []*onnxpb.Node{sm}
	// from one value back to the node that computes it, read only there
	from := func(v, typ string) *onnxpb.Node {
		n := r.prod[v]
		if !r.is(n, typ) || r.used[v] != 1 || len(n.Outputs) != 1 {
			return nil
		}
		chain = append(chain, n)
		return n
	}
	// forward to the one reader of value v
	to := func(v, typ string) *onnxpb.Node {
		n := r.onlyReader(v)
		if !r.is(n, typ) || len(n.Outputs) != 1 {
			return nil
		}
		chain = append(chain, n)
		return n
	}
	// the scale
	scale := float32(1)
	s := sm.Inputs[0]
	if n := r.prod[s]; (r.is(n, "Mul") || r.is(n, "Div")) && len(n.Inputs) == 2 && r.used[s] == 1 {
		c, ok := r.scalar(n.Inputs[1])
		if !ok || c == 0 {
			return false
		}
		if scale = c; n.OpType == "Div" {
			scale = 1 / c
		}
		chain = append(chain, n)
		s = n.Inputs[0]
	}
	qk := from(s, "MatMul")
	if qk == nil || len(qk.Inputs) != 2 {
		return false
	}
	heads, size := int64(0), int64(0)
	// split returns the [batch, seq, H·D] value that heads value v is
	// Transpose(Reshape(·, [0, 0, H, D]), perm) of.
	split := func(v string, perm ...int64) string {
		t := from(v, "Transpose")
		if t == nil || !permIs(t, perm...) {
			return ""
		}
		rs := from(t.Inputs[0], "Reshape")
		if rs == nil || len(rs.Inputs) != 2 {
			return ""
		}
		if a := attrOf(rs, "allowzero"); a != nil && a.I != 0 {
			return ""
		}
		sh, ok := r.ints(rs.Inputs[1])
		if !ok || len(sh) != 4 || sh[0] != 0 || sh[1] != 0 || sh[2] <= 0 || sh[3] <= 0 ||
			heads != 0 && (sh[2] != heads || sh[3] != size) {
			return ""
		}
		heads, size = sh[2], sh[3]
		return rs.Inputs[0]
	}
	q := split(qk.Inputs[0], 0, 2, 1, 3)
	if q == "" {
		return false
	}
	k := ""
	if t := r.prod[qk.Inputs[1]]; r.is(t, "Transpose") && permIs(t, 0, 1, 3, 2) && r.used[qk.Inputs[1]] == 1 {
		chain = append(chain, t)
		k = split(t.Inputs[0], 0, 2, 1, 3)
	} else {
		k = split(qk.Inputs[1], 0, 2, 3, 1)
	}
	if k == "" {
		return false
	}
	pv := to(sm.Outputs[0], "MatMul")
	if pv == nil || len(pv.Inputs) != 2 || pv.Inputs[0] != sm.Outputs[0] || pv.Inputs[1] == sm.Outputs[0] {
		return false
	}
	v := split(pv.Inputs[1], 0, 2, 1, 3)
	if v == "" {
		return false
	}
	t := to(pv.Outputs[0], "Transpose")
	if t == nil || !permIs(t, 0, 2, 1, 3) {
		return false
	}
	merge := to(t.Outputs[0], "Reshape")
	if merge == nil || len(merge.Inputs) != 2 || merge.Inputs[0] != t.Outputs[0] {
		return false
	}
	if a := attrOf(merge, "allowzero"); a != nil && a.I != 0 {
		return false
	}
	if sh, ok := r.ints(merge.Inputs[1]); !ok || len(sh) != 3 || sh[0] != 0 || sh[1] != 0 && sh[1] != -1 ||
		sh[2] != heads*size && (sh[2] != -1 || sh[1] == -1) {
		return false
	}
	fused := &onnxpb.Node{
		Name: sm.Name, OpType: "Attention", Domain: rewriteDomain,
		Inputs: []string{q, k, v}, Outputs: merge.Outputs,
		Attributes: []*onnxpb.Attribute{
			{Name: "num_heads", Type: onnxpb.AttrInt, I: heads},
			{Name: "head_size", Type: onnxpb.AttrInt, I: size},
			{Name: "scale", Type: onnxpb.AttrFloat, F: scale},
		},
	}
	r.replace(merge, fused, chain) // Q, K and V are computed by here
	return true
}

// permIs reports whether Transpose node t has exactly the permutation p.
func permIs(t *onnxpb.Node, p ...int64) bool {
	a := attrOf(t, "perm")
	if a == nil || len(a.Ints) != len(p) || len(t.Inputs) != 1 {
		return false
	}
	for i := range p {
		if a.Ints[i] != p[i] {
			return false
		}
	}
	return true
}

// scalar returns the value of a float32 initializer holding one value.
func (r *rewriter) scalar(name string) (float32, bool) {
	c := r.constant(name)
	if c == nil || c.DType != tensor.Float32 || c.Len() != 1 || c.Rank() > 1 {
		return 0, false
	}
	return c.Data.([]float32)[0], true
}

// ints returns the values of an int64 initializer of rank 1.
func (r *rewriter) ints(name string) ([]int64, bool) {
	c := r.constant(name)
	if c == nil || c.DType != tensor.Int64 || c.Rank() != 1 {
		return nil, false
	}
	return c.Data.([]int64), true
}
