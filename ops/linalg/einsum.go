package linalg

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "Einsum", Since: 12, Fold: true}, buildEinsum)
}

// EinsumAttrs are Einsum's attributes.
type EinsumAttrs struct {
	Equation string `onnx:"equation"`
}

// einsumSpec is a parsed Einsum equation. Labels are letters, numbered
// A–Z 0–25 and a–z 26–51 (so their order is the equation's character
// order); -1 marks an ellipsis.
type einsumSpec struct {
	terms    [][]int // one per input
	out      []int   // explicit output, or nil
	explicit bool
}

const (
	einsumLetters  = 52
	einsumEllipsis = -1
)

// parseEinsum parses an equation for n inputs: "ij,jk->ik", "...ii->...i",
// "i,i" (implicit output: the labels used once, in order).
func parseEinsum(eq string, n int) (*einsumSpec, error) {
	eq = strings.Join(strings.Fields(eq), "")
	lhs, rhs, explicit := strings.Cut(eq, "->")
	parts := strings.Split(lhs, ",")
	if len(parts) != n {
		return nil, fmt.Errorf("Einsum equation %q has %d input terms for %d inputs", eq, len(parts), n)
	}
	sp := &einsumSpec{explicit: explicit}
	for _, p := range parts {
		t, err := parseEinsumTerm(p)
		if err != nil {
			return nil, fmt.Errorf("Einsum equation %q: %w", eq, err)
		}
		sp.terms = append(sp.terms, t)
	}
	if explicit {
		t, err := parseEinsumTerm(rhs)
		if err != nil {
			return nil, fmt.Errorf("Einsum equation %q: %w", eq, err)
		}
		seen := map[int]bool{}
		for _, l := range t {
			if seen[l] {
				return nil, fmt.Errorf("Einsum equation %q repeats an output label", eq)
			}
			seen[l] = true
			if l != einsumEllipsis && !slices.ContainsFunc(sp.terms, func(in []int) bool { return slices.Contains(in, l) }) {
				return nil, fmt.Errorf("Einsum equation %q has an output label no input has", eq)
			}
		}
		sp.out = t
	}
	return sp, nil
}

func parseEinsumTerm(t string) ([]int, error) {
	var labels []int
	ellipsis := false
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c >= 'A' && c <= 'Z':
			labels = append(labels, int(c-'A'))
		case c >= 'a' && c <= 'z':
			labels = append(labels, 26+int(c-'a'))
		case strings.HasPrefix(t[i:], "...") && !ellipsis:
			labels = append(labels, einsumEllipsis)
			ellipsis = true
			i += 2
		default:
			return nil, fmt.Errorf("term %q is malformed", t)
		}
	}
	return labels, nil
}

func buildEinsum(n *ops.Node, at *EinsumAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1<<16, 1, 1); err != nil {
		return nil, err
	}
	sp, err := parseEinsum(at.Equation, len(n.Inputs))
	if err != nil {
		return nil, err
	}
	return &einsumOp{spec: sp}, nil
}

// einsumOp is a compiled Einsum: its parsed equation.
type einsumOp struct{ spec *einsumSpec }

func (e *einsumOp) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	y, err := einsum(c, e.spec, in, func(a, b *tensor.Tensor) (*tensor.Tensor, error) { return batchedProduct(c, a, b) })
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}

// einsumOperand is an input with one label per dimension.
type einsumOperand struct {
	t      *tensor.Tensor
	labels []int
}

// einsumBind resolves the spec against the inputs' ranks: each
// operand's labels (ellipsis dimensions get labels 52, 53, ...,
// right-aligned across operands), the output's labels, every label's
// size, and whether some operand broadcasts a label of size 1.
func einsumBind(sp *einsumSpec, in []*tensor.Tensor) (opnds []einsumOperand, out []int, size map[int]int, broadcast bool, err error) {
	ell := 0 // ellipsis rank: the largest over the operands
	for i, t := range sp.terms {
		letters := len(t)
		if slices.Contains(t, einsumEllipsis) {
			letters--
			ell = max(ell, in[i].Rank()-letters)
		}
		if in[i].Rank() < letters || !slices.Contains(t, einsumEllipsis) && in[i].Rank() != letters {
			return nil, nil, nil, false, ops.InputErrorf("Einsum input %d has rank %d, its term has %d labels", i, in[i].Rank(), letters)
		}
	}
	expand := func(t []int, rank int) []int {
		var labels []int
		for _, l := range t {
			if l != einsumEllipsis {
				labels = append(labels, l)
				continue
			}
			e := rank - (len(t) - 1)
			for j := ell - e; j < ell; j++ {
				labels = append(labels, einsumLetters+j)
			}
		}
		return labels
	}
	size = map[int]int{}
	uses := map[int]int{}
	for i, t := range sp.terms {
		labels := expand(t, in[i].Rank())
		for d, l := range labels {
			dim := in[i].Shape[d]
			s, ok := size[l]
			switch {
			case !ok || s == 1 && dim != 1:
				broadcast = broadcast || ok
				size[l] = dim
			case dim != s && dim == 1:
				broadcast = true
			case dim != s:
				return nil, nil, nil, false, ops.InputErrorf("Einsum label sizes differ: %d and %d", s, dim)
			}
			uses[l]++
		}
		opnds = append(opnds, einsumOperand{in[i], labels})
	}
	if sp.explicit {
		out = expand(sp.out, ell+len(sp.out)-1)
	} else {
		for j := 0; j < ell; j++ {
			out = append(out, einsumLetters+j)
		}
		for l := 0; l < einsumLetters; l++ {
			if uses[l] == 1 {
				out = append(out, l)
			}
		}
	}
	return opnds, out, size, broadcast, nil
}

// einsum evaluates the equation. Products of two operands run as batched
// matrix products (mm: batchedProduct, on the run's engine): each
// operand's repeated labels become its diagonal, labels no other operand
// or the output has are summed away, and the operands are folded left to
// right, each pair transposed to [batch, rows, contracted] ×
// [batch, contracted, cols]. Operands that broadcast a label of size 1
// take the general path, a strided walk over every label, which looks at
// c's deadline.
func einsum(c *ops.Context, sp *einsumSpec, in []*tensor.Tensor, mm func(a, b *tensor.Tensor) (*tensor.Tensor, error)) (*tensor.Tensor, error) {
	for i, t := range in {
		if t == nil || t.DType == tensor.Bool || t.DType == tensor.String {
			return nil, ops.InputErrorf("Einsum input %d must be numeric", i)
		}
		if t.DType != in[0].DType {
			return nil, ops.InputErrorf("Einsum inputs have types %v and %v", in[0].DType, t.DType)
		}
	}
	opnds, out, size, broadcast, err := einsumBind(sp, in)
	if err != nil {
		return nil, err
	}
	dt := in[0].DType
	work := einsumWorkType(dt)
	for i := range opnds {
		if opnds[i].t, err = tensorops.CastTo(opnds[i].t, work); err != nil {
			return nil, err
		}
	}
	outShape := make([]int, len(out))
	for i, l := range out {
		outShape[i] = size[l]
	}
	if _, err := tensor.NumElements(outShape); err != nil {
		return nil, ops.InputErrorf("Einsum output: %v", err)
	}
	var y *tensor.Tensor
	if broadcast {
		y, err = einsumGeneral(c, opnds, out, size)
	} else {
		y, err = einsumLowered(opnds, out, mm)
	}
	if err != nil {
		return nil, err
	}
	return tensorops.CastTo(y, dt)
}

// einsumWorkType is the type Einsum computes dt in: FP16 and BF16 in
// float32, narrow integers in int64 (their wrap-around is the same).
func einsumWorkType(dt tensor.DataType) tensor.DataType {
	switch dt {
	case tensor.Float16, tensor.BFloat16:
		return tensor.Float32
	case tensor.Int8, tensor.Int16, tensor.Uint8, tensor.Uint16:
		return tensor.Int64
	}
	return dt
}

func einsumLowered(opnds []einsumOperand, out []int, mm func(a, b *tensor.Tensor) (*tensor.Tensor, error)) (*tensor.Tensor, error) {
	for i := range opnds {
		opnds[i] = einsumDiagonal(opnds[i])
	}
	// needed[i] = labels of the output and of operands after i
	needed := make([]map[int]bool, len(opnds))
	later := map[int]bool{}
	for _, l := range out {
		later[l] = true
	}
	for i := len(opnds) - 1; i >= 0; i-- {
		needed[i] = maps.Clone(later)
		for _, l := range opnds[i].labels {
			later[l] = true
		}
	}
	var err error
	acc := opnds[0]
	for i := 1; i < len(opnds); i++ {
		b := opnds[i]
		// labels only this operand (or only acc) has and nobody needs
		keepA := func(l int) bool { return needed[i][l] || slices.Contains(b.labels, l) }
		keepB := func(l int) bool { return needed[i][l] || slices.Contains(acc.labels, l) }
		if acc, err = einsumSumOut(acc, keepA); err != nil {
			return nil, err
		}
		if b, err = einsumSumOut(b, keepB); err != nil {
			return nil, err
		}
		if acc, err = einsumContract(acc, b, needed[i], mm); err != nil {
			return nil, err
		}
	}
	if acc, err = einsumSumOut(acc, func(l int) bool { return slices.Contains(out, l) }); err != nil {
		return nil, err
	}
	return einsumPermute(acc, out), nil
}

// einsumDiagonal returns op with each repeated label reduced to one
// dimension (its diagonal), as a strided view.
func einsumDiagonal(op einsumOperand) einsumOperand {
	var labels, shape, strides []int
	rows := tensor.Strides(op.t.Shape)
	for d, l := range op.labels {
		if k := slices.Index(labels, l); k >= 0 {
			strides[k] += rows[d]
			continue
		}
		labels = append(labels, l)
		shape = append(shape, op.t.Shape[d])
		strides = append(strides, rows[d])
	}
	if len(labels) == len(op.labels) {
		return op
	}
	t, err := tensorops.StridedView(nil, op.t, shape, strides, 0)
	if err != nil {
		panic(err) // no more elements than op.t
	}
	return einsumOperand{t, labels}
}

// einsumPermute returns op with its dimensions in the order of labels (a
// permutation of op's).
func einsumPermute(op einsumOperand, labels []int) *tensor.Tensor {
	p := make([]int, len(labels))
	identity := true
	for i, l := range labels {
		p[i] = slices.Index(op.labels, l)
		identity = identity && p[i] == i
	}
	if identity {
		return op.t
	}
	t, err := tensorops.Permute(nil, op.t, p)
	if err != nil {
		panic(err) // with no request to watch, Transpose cannot fail
	}
	return t
}

// einsumSumOut sums op over the labels keep refuses.
func einsumSumOut(op einsumOperand, keep func(l int) bool) (einsumOperand, error) {
	var kept, gone []int
	for _, l := range op.labels {
		if keep(l) {
			kept = append(kept, l)
		} else {
			gone = append(gone, l)
		}
	}
	if len(gone) == 0 {
		return op, nil
	}
	t := einsumPermute(op, slices.Concat(kept, gone))
	shape := t.Shape[:len(kept)]
	rows, _ := tensor.NumElements(shape)
	cols, _ := tensor.NumElements(t.Shape[len(kept):])
	var data any
	switch d := t.Data.(type) {
	case []float32:
		data = einsumRowSums[float32, float64](d, rows, cols)
	case []float64:
		data = einsumRowSums[float64, float64](d, rows, cols)
	case []int32:
		data = einsumRowSums[int32, int32](d, rows, cols)
	case []int64:
		data = einsumRowSums[int64, int64](d, rows, cols)
	case []uint32:
		data = einsumRowSums[uint32, uint32](d, rows, cols)
	case []uint64:
		data = einsumRowSums[uint64, uint64](d, rows, cols)
	default:
		return op, ops.InputErrorf("Einsum does not take %v", t.DType)
	}
	return einsumOperand{&tensor.Tensor{DType: t.DType, Shape: slices.Clone(shape), Data: data}, kept}, nil
}

// einsumRowSums sums each row of a rows×cols matrix, accumulating in A.
func einsumRowSums[T, A tensor.Numeric](d []T, rows, cols int) []T {
	out := make([]T, rows)
	for r := range out {
		var s A
		for _, v := range d[r*cols : (r+1)*cols] {
			s += A(v)
		}
		out[r] = T(s)
	}
	return out
}

// einsumContract multiplies two operands, summing the labels they share
// that keep does not hold: a batched matrix product over the shared
// labels keep holds.
func einsumContract(a, b einsumOperand, keep map[int]bool, mm func(a, b *tensor.Tensor) (*tensor.Tensor, error)) (einsumOperand, error) {
	var batch, con, left, right []int
	for _, l := range a.labels {
		switch {
		case !slices.Contains(b.labels, l):
			left = append(left, l)
		case keep[l]:
			batch = append(batch, l)
		default:
			con = append(con, l)
		}
	}
	for _, l := range b.labels {
		if !slices.Contains(a.labels, l) {
			right = append(right, l)
		}
	}
	dims := func(op einsumOperand, labels []int) (shape []int, n int) {
		n = 1
		for _, l := range labels {
			d := op.t.Shape[slices.Index(op.labels, l)]
			shape = append(shape, d)
			n *= d
		}
		return shape, n
	}
	bShape, nb := dims(a, batch)
	lShape, nl := dims(a, left)
	_, nc := dims(a, con)
	rShape, nr := dims(b, right)
	if _, err := tensor.NumElements([]int{nb, nl, nr}); err != nil {
		return a, ops.InputErrorf("Einsum intermediate product: %v", err)
	}
	at, err := einsumPermute(a, slices.Concat(batch, left, con)).Reshaped([]int{nb, nl, nc})
	if err != nil {
		return a, err
	}
	bt, err := einsumPermute(b, slices.Concat(batch, con, right)).Reshaped([]int{nb, nc, nr})
	if err != nil {
		return a, err
	}
	var y *tensor.Tensor
	if nc == 0 { // an empty sum: zeros
		y = &tensor.Tensor{DType: at.DType, Shape: []int{nb, nl, nr}, Data: tensorops.MoverOf(at.DType).Alloc(nb * nl * nr)}
	} else {
		y, err = mm(at, bt)
	}
	if err != nil {
		return a, err
	}
	y, err = y.Reshaped(slices.Concat(bShape, lShape, rShape))
	if err != nil {
		return a, err
	}
	return einsumOperand{y, slices.Concat(batch, left, right)}, nil
}

// einsumGeneral evaluates the equation by walking every label's range
// once: each operand reads with stride 0 along labels it lacks or
// broadcasts, the output along the labels it sums. It computes in
// float64 (floating-point inputs) or int64, looking at the request's
// context every ops.TickEvery steps.
func einsumGeneral(c *ops.Context, opnds []einsumOperand, out []int, size map[int]int) (*tensor.Tensor, error) {
	labels := slices.Clone(out)
	for l := range size {
		if !slices.Contains(labels, l) {
			labels = append(labels, l)
		}
	}
	slices.Sort(labels[len(out):])
	space := make([]int, len(labels))
	for i, l := range labels {
		space[i] = size[l]
	}
	if _, err := tensor.NumElements(space); err != nil {
		return nil, ops.InputErrorf("Einsum iterates over too many label combinations: %v", err)
	}
	strides := make([][]int, len(opnds)+1)
	for k, op := range opnds {
		rows := tensor.Strides(op.t.Shape)
		st := make([]int, len(labels))
		for d, l := range op.labels {
			if op.t.Shape[d] != 1 {
				st[slices.Index(labels, l)] += rows[d]
			}
		}
		strides[k] = st
	}
	outShape := space[:len(out)]
	outRows := tensor.Strides(outShape)
	strides[len(opnds)] = append(slices.Clone(outRows), make([]int, len(labels)-len(out))...)
	n, _ := tensor.NumElements(outShape)
	if opnds[0].t.DType.IsFloat() {
		vals := make([][]float64, len(opnds))
		for k, op := range opnds {
			vals[k] = op.t.Float64s()
		}
		acc := make([]float64, n)
		it := tensor.NewIter(space, strides...)
		for w := 1; it.Next(); w++ {
			p := 1.0
			for k := range vals {
				p *= vals[k][it.Off(k)]
			}
			acc[it.Off(len(opnds))] += p
			if w%ops.TickEvery == 0 {
				if err := c.Tick(ops.TickEvery); err != nil {
					return nil, err
				}
			}
		}
		return tensor.From(outShape, acc), nil
	}
	vals := make([][]int64, len(opnds))
	for k, op := range opnds {
		t, err := tensorops.CastTo(op.t, tensor.Int64)
		if err != nil {
			return nil, err
		}
		vals[k] = t.Data.([]int64)
	}
	acc := make([]int64, n)
	it := tensor.NewIter(space, strides...)
	for w := 1; it.Next(); w++ {
		p := int64(1)
		for k := range vals {
			p *= vals[k][it.Off(k)]
		}
		acc[it.Off(len(opnds))] += p
		if w%ops.TickEvery == 0 {
			if err := c.Tick(ops.TickEvery); err != nil {
				return nil, err
			}
		}
	}
	return tensor.From(outShape, acc), nil
}
