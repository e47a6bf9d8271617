//go:build autodiff

package autodiff

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/activation"
	"github.com/quantserve/quantserve/ops/arith"
	matmulops "github.com/quantserve/quantserve/ops/matmul"
	"github.com/quantserve/quantserve/ops/norm"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

// Backward propagates seed gradients (by slot) back through the trace of m
// and returns the gradient of every slot in want (nil when no gradient
// reaches it). vals is m.Trace's result.
func Backward(m *model.Model, vals []*tensor.Tensor, seeds map[int][]float32, want []int) (map[int][]float32, error) {
	steps := m.Steps()
	grads := map[int][]float32{}
	for s, g := range seeds {
		grads[s] = g
	}
	// A slot needs a gradient when it is wanted or some step produced it.
	needed := map[int]bool{}
	for _, s := range want {
		needed[s] = true
	}
	for _, st := range steps {
		for _, o := range st.Out {
			if o >= 0 {
				needed[o] = true
			}
		}
	}
	for i := len(steps) - 1; i >= 0; i-- {
		st := steps[i]
		if len(st.Out) == 0 || st.Out[0] < 0 {
			continue
		}
		ins := make([]*tensor.Tensor, len(st.In))
		need := make([]bool, len(st.In))
		for j, s := range st.In {
			if s >= 0 {
				ins[j] = vals[s]
				need[j] = needed[s]
			}
		}
		var dxs [][]float32
		var err error
		if mf, ok := multiGrads[st.Desc]; ok { // several outputs carry gradients
			ys, dys := make([]*tensor.Tensor, len(st.Out)), make([][]float32, len(st.Out))
			reached := false
			for j, o := range st.Out {
				if o >= 0 {
					ys[j], dys[j] = vals[o], grads[o]
					reached = reached || dys[j] != nil
				}
			}
			if !reached {
				continue
			}
			dxs, err = mf(st, ins, ys, dys, need)
		} else {
			dy, ok := grads[st.Out[0]]
			if !ok {
				continue
			}
			for _, o := range st.Out[1:] {
				if _, has := grads[o]; has && o >= 0 {
					return nil, fmt.Errorf("autodiff: node %s (%s): gradients through its second output are not supported", st.Name, st.Op)
				}
			}
			dxs, err = backwardStep(st, ins, vals[st.Out[0]], dy, need)
		}
		if err != nil {
			return nil, fmt.Errorf("autodiff: node %s (%s): %w", st.Name, st.Op, err)
		}
		for j, dx := range dxs {
			if dx == nil || st.In[j] < 0 || !need[j] {
				continue
			}
			s := st.In[j]
			if g, ok := grads[s]; ok {
				sum := make([]float32, len(g))
				for k := range g {
					sum[k] = g[k] + dx[k]
				}
				grads[s] = sum
			} else {
				grads[s] = dx
			}
		}
	}
	out := map[int][]float32{}
	for _, s := range want {
		out[s] = grads[s]
	}
	return out, nil
}

// gradFunc returns the gradient of each input of st (nil where none is
// needed or defined), given its inputs, the output's value y and gradient
// dy.
type gradFunc func(st model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, need []bool) ([][]float32, error)

// grads maps each operator implementation to its backward function.
var grads = map[*model.Descriptor]gradFunc{}

// bindGrad sets f as the backward function of each operator, every opset
// range of it.
func bindGrad(f gradFunc, operators ...ops.Op) {
	for _, op := range operators {
		for _, d := range op {
			if _, dup := grads[d]; dup {
				panic("autodiff: two gradients for " + d.String())
			}
			grads[d] = f
		}
	}
}

// multiGradFunc is the backward function of an operator whose outputs all
// carry gradients (Split): ys and dys parallel st.Out, dys[j] nil where no
// gradient reaches output j.
type multiGradFunc func(st model.Step, in []*tensor.Tensor, ys []*tensor.Tensor, dys [][]float32, need []bool) ([][]float32, error)

var multiGrads = map[*model.Descriptor]multiGradFunc{}

// bindMultiGrad sets f as the backward function of op, every opset range
// of it, taking every output's gradient.
func bindMultiGrad(f multiGradFunc, op ops.Op) {
	for _, d := range op {
		multiGrads[d] = f
	}
}

// NoGradientError reports an operator without a backward function. It is
// a request error (HTTP 400): the model cannot answer gradients.
type NoGradientError struct{ Op string }

func (e *NoGradientError) Error() string {
	return "operator " + e.Op + " has no gradient in quantserve"
}

// Is makes a NoGradientError match model.ErrInput.
func (e *NoGradientError) Is(target error) bool { return target == model.ErrInput }

func init() {
	bindGrad(func(_ model.Step, in []*tensor.Tensor, _ *tensor.Tensor, dy []float32, _ []bool) ([][]float32, error) {
		dx := make([][]float32, len(in))
		dx[0] = dy
		return dx, nil
	}, tensorops.Identity, tensorops.Flatten, tensorops.Reshape, tensorops.Squeeze, tensorops.Unsqueeze)
	for _, b := range []struct {
		op   ops.Op
		rule binaryRule
	}{{arith.Add, addRule}, {arith.Sub, subRule}, {arith.Mul, mulRule}, {arith.Div, divRule}} {
		bindGrad(func(_ model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
			return binaryBackward(b.rule, in[0], in[1], y.Shape, dy, need)
		}, b.op)
	}
	for _, u := range []struct {
		op   ops.Op
		rule unaryRule
	}{
		{activation.Relu, reluRule}, {activation.LeakyRelu, leakyReluRule}, {activation.Sigmoid, sigmoidRule},
		{activation.Tanh, tanhRule}, {activation.Gelu, geluRule}, {activation.Clip, clipRule},
	} {
		bindGrad(func(st model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, _ []bool) ([][]float32, error) {
			g, err := unaryBackward(u.rule, st, in, y, dy)
			dx := make([][]float32, len(in))
			dx[0] = g
			return dx, err
		}, u.op)
	}
	for _, op := range []struct {
		op  ops.Op
		log bool
	}{{norm.Softmax, false}, {norm.LogSoftmax, true}} {
		bindGrad(func(st model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, _ []bool) ([][]float32, error) {
			g, err := softmaxBackward(st, y, dy, op.log)
			dx := make([][]float32, len(in))
			dx[0] = g
			return dx, err
		}, op.op)
	}
	bindGrad(func(st model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, _ []bool) ([][]float32, error) {
		perm := st.Params.(*tensorops.TransposeAttrs).Perm
		r := in[0].Rank()
		inv := make([]int, r)
		for i := 0; i < r; i++ {
			p := r - 1 - i
			if perm != nil {
				p = int(perm[i])
			}
			inv[p] = i
		}
		dx := make([][]float32, len(in))
		dx[0] = permute(dy, y.Shape, inv)
		return dx, nil
	}, tensorops.Transpose)
	bindGrad(func(st model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, _ []bool) ([][]float32, error) {
		return concatBackward(st, in, y, dy)
	}, tensorops.Concat)
	bindGrad(func(st model.Step, in []*tensor.Tensor, _ *tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
		return matmulBackward(st, in, dy, need, 1)
	}, matmulops.MatMul)
	bindGrad(gemmBackward, matmulops.Gemm)
}

// backwardStep returns the gradient of each input of st (nil where none is
// needed or defined), given the output's value y and gradient dy.
func backwardStep(st model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
	f, ok := grads[st.Desc]
	if !ok {
		return nil, &NoGradientError{Op: st.Op}
	}
	return f(st, in, y, dy, need)
}

// binaryRule computes the gradients ga and gb of a binary operator's
// operands, at the output's shape, from dy and the operands expanded to it.
type binaryRule func(ga, gb, dy, ae, be []float32)

// binaryBackward returns the gradients of a broadcasting binary
// operator's operands by rule, each summed back to its own shape.
func binaryBackward(rule binaryRule, a, b *tensor.Tensor, out []int, dy []float32, need []bool) ([][]float32, error) {
	av, err := floats(a, "the left operand")
	if err != nil {
		return nil, err
	}
	bv, err := floats(b, "the right operand")
	if err != nil {
		return nil, err
	}
	n := numel(out)
	dx := make([][]float32, 2)
	ae, be := expand(av, a.Shape, out), expand(bv, b.Shape, out)
	ga, gb := make([]float32, n), make([]float32, n)
	rule(ga[:n], gb[:n], dy[:n], ae, be)
	if need[0] {
		dx[0] = reduceTo(ga, out, a.Shape)
	}
	if need[1] {
		dx[1] = reduceTo(gb, out, b.Shape)
	}
	return dx, nil
}

// addRule is Add's: dy to both operands.
func addRule(ga, gb, dy, ae, be []float32) {
	n := len(ga)
	copy(ga, dy[:n])
	copy(gb, dy[:n])
}

// subRule is Sub's: dy and -dy.
func subRule(ga, gb, dy, ae, be []float32) {
	n := len(ga)
	for i := range n {
		ga[i], gb[i] = dy[i], -dy[i]
	}
}

// mulRule is Mul's: dy·b and dy·a.
func mulRule(ga, gb, dy, ae, be []float32) {
	n := len(ga)
	for i := range n {
		ga[i], gb[i] = dy[i]*be[i], dy[i]*ae[i]
	}
}

// divRule is Div's: dy/b and -dy·a/b².
func divRule(ga, gb, dy, ae, be []float32) {
	n := len(ga)
	for i := range n {
		ga[i], gb[i] = dy[i]/be[i], -dy[i]*ae[i]/(be[i]*be[i])
	}
}

// unaryRule computes g, the input's gradient of an activation, from its
// input xv, output yv and the output's gradient dy.
type unaryRule func(st model.Step, in []*tensor.Tensor, xv, yv, dy, g []float32)

// unaryBackward returns an activation's input gradient by rule.
func unaryBackward(rule unaryRule, st model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32) ([]float32, error) {
	xv, err := floats(in[0], "the input")
	if err != nil {
		return nil, err
	}
	yv, _ := y.Data.([]float32)
	g := make([]float32, len(dy))
	rule(st, in, xv, yv, dy, g)
	return g, nil
}

// reluRule is Relu's: dy where x > 0.
func reluRule(st model.Step, in []*tensor.Tensor, xv, yv, dy, g []float32) {
	for i, v := range xv {
		if v > 0 {
			g[i] = dy[i]
		}
	}
}

// leakyReluRule is LeakyRelu's: dy, times alpha where x < 0.
func leakyReluRule(st model.Step, in []*tensor.Tensor, xv, yv, dy, g []float32) {
	alpha := st.Params.(*activation.LeakyReluAttrs).Alpha
	for i, v := range xv {
		g[i] = dy[i]
		if v < 0 {
			g[i] *= alpha
		}
	}
}

// sigmoidRule is Sigmoid's: dy·y(1-y).
func sigmoidRule(st model.Step, in []*tensor.Tensor, xv, yv, dy, g []float32) {
	for i, s := range yv {
		g[i] = dy[i] * s * (1 - s)
	}
}

// tanhRule is Tanh's: dy(1-y²).
func tanhRule(st model.Step, in []*tensor.Tensor, xv, yv, dy, g []float32) {
	for i, t := range yv {
		g[i] = dy[i] * (1 - t*t)
	}
}

// geluRule is Gelu's, exact or in its tanh approximation.
func geluRule(st model.Step, in []*tensor.Tensor, xv, yv, dy, g []float32) {
	approx := st.Params.(*activation.GeluAttrs).Approximate
	for i, v := range xv {
		g[i] = dy[i] * float32(geluDerivative(float64(v), approx == "tanh"))
	}
}

// clipRule is Clip's: dy where x is within [min, max].
func clipRule(st model.Step, in []*tensor.Tensor, xv, yv, dy, g []float32) {
	lo, hi := math.Inf(-1), math.Inf(1)
	if at, ok := st.Params.(*activation.ClipAttrs); ok { // before opset 11
		lo, hi = float64(at.Min), float64(at.Max)
	} else {
		if len(in) > 1 && in[1] != nil {
			lo = in[1].Float64s()[0]
		}
		if len(in) > 2 && in[2] != nil {
			hi = in[2].Float64s()[0]
		}
	}
	for i, v := range xv {
		if float64(v) >= lo && float64(v) <= hi {
			g[i] = dy[i]
		}
	}
}

func geluDerivative(x float64, tanhApprox bool) float64 {
	if !tanhApprox {
		cdf := 0.5 * (1 + math.Erf(x/math.Sqrt2))
		pdf := math.Exp(-x*x/2) / math.Sqrt(2*math.Pi)
		return cdf + x*pdf
	}
	c := math.Sqrt(2 / math.Pi)
	u := c * (x + 0.044715*x*x*x)
	t := math.Tanh(u)
	du := c * (1 + 3*0.044715*x*x)
	return 0.5*(1+t) + 0.5*x*(1-t*t)*du
}

func softmaxBackward(st model.Step, y *tensor.Tensor, dy []float32, log bool) ([]float32, error) {
	yv, err := floats(y, "the output")
	if err != nil {
		return nil, err
	}
	var axis int64
	legacy := false
	switch at := st.Params.(type) {
	case *norm.SoftmaxAttrs:
		axis = at.Axis
	case *norm.SoftmaxLegacyAttrs:
		axis, legacy = at.Axis, true
	}
	a, err := axisOf(axis, y.Rank())
	if err != nil {
		return nil, err
	}
	outer, dim, inner := geometry(y.Shape, a, legacy)
	g := make([]float32, len(dy))
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			base := o*dim*inner + j
			var sum float64
			for i := 0; i < dim; i++ {
				k := base + i*inner
				if !log {
					sum += float64(dy[k]) * float64(yv[k])
				} else {
					sum += float64(dy[k])
				}
			}
			for i := 0; i < dim; i++ {
				k := base + i*inner
				if !log {
					g[k] = float32(float64(yv[k]) * (float64(dy[k]) - sum))
				} else { // LogSoftmax: dy - softmax·Σdy, softmax = exp(y)
					g[k] = float32(float64(dy[k]) - math.Exp(float64(yv[k]))*sum)
				}
			}
		}
	}
	return g, nil
}

// permute returns g (of shape) with its axes permuted: out axis i is axis
// p[i] of g.
func permute(g []float32, shape []int, p []int) []float32 {
	r := len(shape)
	strides := make([]int, r)
	s := 1
	for i := r - 1; i >= 0; i-- {
		strides[i] = s
		s *= shape[i]
	}
	outShape := make([]int, r)
	src := make([]int, r)
	for i, a := range p {
		outShape[i] = shape[a]
		src[i] = strides[a]
	}
	out := make([]float32, len(g))
	idx := make([]int, r)
	off := 0
	for o := range out {
		out[o] = g[off]
		for d := r - 1; d >= 0; d-- {
			idx[d]++
			off += src[d]
			if idx[d] < outShape[d] {
				break
			}
			off -= src[d] * outShape[d]
			idx[d] = 0
		}
	}
	return out
}

func concatBackward(st model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32) ([][]float32, error) {
	a, err := axisOf(*st.Params.(*tensorops.ConcatAttrs).Axis, y.Rank())
	if err != nil {
		return nil, err
	}
	outer, inner := 1, 1
	for _, d := range y.Shape[:a] {
		outer *= d
	}
	for _, d := range y.Shape[a+1:] {
		inner *= d
	}
	dx := make([][]float32, len(in))
	for j, t := range in {
		dx[j] = make([]float32, t.Len())
	}
	pos := 0
	for o := 0; o < outer; o++ {
		for j, t := range in {
			chunk := t.Shape[a] * inner
			copy(dx[j][o*chunk:(o+1)*chunk], dy[pos:pos+chunk])
			pos += chunk
		}
	}
	return dx, nil
}

// matmulBackward handles Y = alpha·A·B for A [..., M, K] and B [K, N] or
// [..., K, N] with the same leading dimensions (or B held by the kernels).
func matmulBackward(st model.Step, in []*tensor.Tensor, dy []float32, need []bool, alpha float32) ([][]float32, error) {
	a := in[0]
	av, err := floats(a, "A")
	if err != nil {
		return nil, err
	}
	if a.Rank() < 1 {
		return nil, fmt.Errorf("A must have rank >= 1")
	}
	k := a.Shape[a.Rank()-1]
	dx := make([][]float32, 2)
	scaled := dy
	if alpha != 1 {
		scaled = make([]float32, len(dy))
		for i, v := range dy {
			scaled[i] = alpha * v
		}
	}
	if lin := matmulops.WeightOf(st.Operator); lin != nil {
		m := len(av) / max(k, 1)
		if need[0] {
			if dx[0], err = lin.BackwardInput(st.Exec, scaled, m); err != nil {
				return nil, err
			}
		}
		if need[1] { // dW = Aᵀ·dY
			dx[1] = matmul(st.Exec, transpose2(av, m, k), k, m, scaled, lin.N())
		}
		return dx, nil
	}
	b := in[1]
	bv, err := floats(b, "B")
	if err != nil {
		return nil, err
	}
	if b.Rank() != 2 && !equalShape(a.Shape[:a.Rank()-2], b.Shape[:b.Rank()-2]) {
		return nil, fmt.Errorf("batched MatMul backward needs equal batch dimensions or a 2-D B, got %v and %v", a.Shape, b.Shape)
	}
	if a.Rank() < 2 || b.Rank() < 2 {
		return nil, fmt.Errorf("MatMul backward of 1-D operands is not supported")
	}
	n := b.Shape[b.Rank()-1]
	if b.Rank() == 2 { // rows of A all meet the same B
		m := len(av) / max(k, 1)
		if need[0] {
			dx[0] = matmul(st.Exec, scaled, m, n, transpose2(bv, k, n), k)
		}
		if need[1] {
			dx[1] = matmul(st.Exec, transpose2(av, m, k), k, m, scaled, n)
		}
		return dx, nil
	}
	m := a.Shape[a.Rank()-2]
	batches := len(av) / max(m*k, 1)
	if need[0] {
		dx[0] = make([]float32, len(av))
	}
	if need[1] {
		dx[1] = make([]float32, len(bv))
	}
	for i := 0; i < batches; i++ {
		ai, bi, gi := av[i*m*k:(i+1)*m*k], bv[i*k*n:(i+1)*k*n], scaled[i*m*n:(i+1)*m*n]
		if need[0] {
			copy(dx[0][i*m*k:], matmul(st.Exec, gi, m, n, transpose2(bi, k, n), k))
		}
		if need[1] {
			copy(dx[1][i*k*n:], matmul(st.Exec, transpose2(ai, m, k), k, m, gi, n))
		}
	}
	return dx, nil
}

// gemmBackward handles Y = alpha·A'·B' + beta·C, A' = transA ? Aᵀ : A.
func gemmBackward(st model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
	at := st.Params.(*matmulops.GemmAttrs)
	alpha, beta, transA, transB := at.Alpha, at.Beta, at.TransA, at.TransB
	a := in[0]
	av, err := floats(a, "A")
	if err != nil {
		return nil, err
	}
	ap := a
	if transA {
		ap = &tensor.Tensor{DType: a.DType, Shape: []int{a.Shape[1], a.Shape[0]}, Data: transpose2(av, a.Shape[0], a.Shape[1])}
	}
	var bp *tensor.Tensor
	if matmulops.WeightOf(st.Operator) == nil {
		b := in[1]
		bv, err := floats(b, "B")
		if err != nil {
			return nil, err
		}
		bp = b
		if transB {
			bp = &tensor.Tensor{DType: b.DType, Shape: []int{b.Shape[1], b.Shape[0]}, Data: transpose2(bv, b.Shape[0], b.Shape[1])}
		}
	}
	needMM := []bool{need[0], len(need) > 1 && need[1]}
	mm, err := matmulBackward(st, []*tensor.Tensor{ap, bp}, dy, needMM, alpha)
	if err != nil {
		return nil, err
	}
	dx := make([][]float32, len(in))
	if mm[0] != nil {
		dx[0] = mm[0]
		if transA {
			dx[0] = transpose2(mm[0], ap.Shape[0], ap.Shape[1])
		}
	}
	if mm[1] != nil {
		dx[1] = mm[1]
		if transB {
			k, n := ap.Shape[1], y.Shape[1]
			dx[1] = transpose2(mm[1], k, n)
		}
	}
	if len(in) > 2 && in[2] != nil && need[2] {
		g := make([]float32, len(dy))
		for i, v := range dy {
			g[i] = beta * v
		}
		dx[2] = reduceTo(g, y.Shape, in[2].Shape)
	}
	return dx, nil
}
