//go:build autodiff

package autodiff

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	matmulops "github.com/quantserve/quantserve/ops/matmul"
	"github.com/quantserve/quantserve/tensor"
)

// errBadRequest marks errors caused by a request (mapped to 400).
var errBadRequest = model.ErrInput

// GradRequest asks for gradients of one model output.
type GradRequest struct {
	Inputs     map[string]*tensor.Tensor
	Output     string         // "" when the model has one output
	OutputGrad *tensor.Tensor // seed, the output's shape; nil means all ones (d sum/dx)
	Wrt        []string       // inputs or initializers; nil means every FP32 input
}

// Gradient is d(seed·output)/d(name).
type Gradient struct {
	Name   string
	Tensor *tensor.Tensor
}

// Gradients runs m forward on the request's inputs, then backward from the
// chosen output, and returns every output and the requested gradients.
func Gradients(ctx context.Context, m *model.Model, req GradRequest) (map[string]*tensor.Tensor, []Gradient, error) {
	if err := dispatch.CheckAutodiff(dispatch.Enabled); err != nil {
		return nil, nil, err
	}
	// Gradients flow through the graph as written, not through the
	// rewrites that fuse its nodes for serving.
	m, err := m.Unrewritten()
	if err != nil {
		return nil, nil, err
	}
	oi := -1
	for i, o := range m.Outputs {
		if o.Name == req.Output || req.Output == "" && len(m.Outputs) == 1 {
			oi = i
		}
	}
	if oi < 0 {
		if req.Output == "" {
			return nil, nil, fmt.Errorf("%w: the model has %d outputs: name one in \"output\"", errBadRequest, len(m.Outputs))
		}
		return nil, nil, fmt.Errorf("%w: the model has no output %q", errBadRequest, req.Output)
	}
	vals, err := m.Trace(ctx, req.Inputs)
	if err != nil {
		return nil, nil, err
	}
	outSlot := m.OutputSlot(oi)
	y := vals[outSlot]
	if y.DType != tensor.Float32 {
		return nil, nil, fmt.Errorf("%w: output %q is %v; gradients flow through FP32 only", errBadRequest, m.Outputs[oi].Name, y.DType)
	}
	seed := make([]float32, y.Len())
	if req.OutputGrad != nil {
		g, ok := req.OutputGrad.Data.([]float32)
		if !ok || !equalShape(req.OutputGrad.Shape, y.Shape) {
			return nil, nil, fmt.Errorf("%w: output_grad must be FP32 of the output's shape %v, got %v%v", errBadRequest, y.Shape, req.OutputGrad.DType, req.OutputGrad.Shape)
		}
		copy(seed, g)
	} else {
		for i := range seed {
			seed[i] = 1
		}
	}
	wrt := req.Wrt
	if wrt == nil {
		for _, in := range m.Inputs {
			if in.DType == tensor.Float32 {
				wrt = append(wrt, in.Name)
			}
		}
	}
	slots := make([]int, len(wrt))
	for i, name := range wrt {
		s, ok := m.Slot(name)
		if !ok {
			return nil, nil, fmt.Errorf("%w: \"wrt\" names %q, which is neither an input nor an initializer of the model", errBadRequest, name)
		}
		if v := vals[s]; v != nil && v.DType != tensor.Float32 {
			return nil, nil, fmt.Errorf("%w: %q is %v; gradients are defined for FP32 values only", errBadRequest, name, v.DType)
		}
		slots[i] = s
	}
	grads, err := Backward(m, vals, map[int][]float32{outSlot: seed}, slots)
	if err != nil {
		return nil, nil, err
	}
	outs := map[string]*tensor.Tensor{}
	for i, o := range m.Outputs {
		outs[o.Name] = vals[m.OutputSlot(i)]
	}
	var res []Gradient
	for i, name := range wrt {
		shape, err := slotShape(m, vals, slots[i])
		if err != nil {
			return nil, nil, err
		}
		g := grads[slots[i]]
		if g == nil {
			g = make([]float32, numel(shape))
		}
		res = append(res, Gradient{Name: name, Tensor: tensor.From(shape, g)})
	}
	return outs, res, nil
}

// slotShape returns the shape of a slot's value, or, for a weight the
// kernels hold, the shape it has in the file.
func slotShape(m *model.Model, vals []*tensor.Tensor, s int) ([]int, error) {
	if v := vals[s]; v != nil {
		return v.Shape, nil
	}
	for _, st := range m.Steps() {
		if lin := matmulops.WeightOf(st.Operator); lin != nil && len(st.In) > 1 && st.In[1] == s {
			if at, ok := st.Params.(*matmulops.GemmAttrs); ok && at.TransB {
				return []int{lin.N(), lin.K()}, nil
			}
			return []int{lin.K(), lin.N()}, nil
		}
	}
	return nil, fmt.Errorf("%w: slot %d has no value", errBadRequest, s)
}

// Optimizer updates parameters from their gradients.
type Optimizer struct {
	Name         string  // "sgd" or "adam"
	LearningRate float64 // > 0
}

// Trainer fine-tunes a model's float32 initializers. Each step compiles
// the graph with the current weights in float32, runs it forward and
// backward, and applies the optimizer; ONNX writes the result.
type Trainer struct {
	pb     *onnxpb.Model
	exec   *gemm.Engine
	params []*param
	t      int
}

type param struct {
	name string
	w    *tensor.Tensor
	m, v []float64 // Adam moments
}

// NewTrainer prepares a model file for training: every FP32 initializer is
// a parameter.
func NewTrainer(data []byte, exec *gemm.Engine) (*Trainer, error) {
	if err := dispatch.CheckAutodiff(dispatch.Enabled); err != nil {
		return nil, err
	}
	pb, err := onnxpb.UnmarshalModel(data)
	if err != nil || pb.Graph == nil {
		return nil, fmt.Errorf("autodiff: decoding the model: %v", err)
	}
	t := &Trainer{pb: pb, exec: exec}
	for _, init := range pb.Graph.Initializers {
		if init.DataType != onnxpb.Float {
			continue
		}
		w, err := model.TensorFromONNX(init)
		if err != nil {
			return nil, err
		}
		t.params = append(t.params, &param{name: init.Name, w: w})
	}
	if len(t.params) == 0 {
		return nil, fmt.Errorf("%w: the model has no FP32 initializers to train", errBadRequest)
	}
	return t, nil
}

// Step runs one optimization step on a batch and returns the loss before
// the update.
func (t *Trainer) Step(ctx context.Context, inputs map[string]*tensor.Tensor, target *tensor.Tensor, loss string, opt Optimizer) (float64, error) {
	if opt.Name != "sgd" && opt.Name != "adam" {
		return 0, fmt.Errorf("%w: unknown optimizer %q (sgd or adam)", errBadRequest, opt.Name)
	}
	if !(opt.LearningRate > 0) || math.IsInf(opt.LearningRate, 0) {
		return 0, fmt.Errorf("%w: learning_rate must be a positive number", errBadRequest)
	}
	overrides := map[string]*tensor.Tensor{}
	for _, p := range t.params {
		overrides[p.name] = p.w
	}
	m, err := model.Compile(t.pb, model.Options{Exec: t.exec}, overrides)
	if err != nil {
		return 0, err
	}
	if len(m.Outputs) != 1 {
		return 0, fmt.Errorf("%w: training needs a model with one output, this one has %d", errBadRequest, len(m.Outputs))
	}
	vals, err := m.Trace(ctx, inputs)
	if err != nil {
		return 0, err
	}
	l, seedSlot, seed, err := lossSeed(m, vals, m.OutputSlot(0), loss, target)
	if err != nil {
		return 0, err
	}
	slots := make([]int, len(t.params))
	for i, p := range t.params {
		slots[i], _ = m.Slot(p.name)
	}
	grads, err := Backward(m, vals, map[int][]float32{seedSlot: seed}, slots)
	if err != nil {
		return 0, err
	}
	t.t++
	for i, p := range t.params {
		g := grads[slots[i]]
		if g == nil {
			continue
		}
		t.update(p, g, opt)
	}
	return l, nil
}

func (t *Trainer) update(p *param, g []float32, opt Optimizer) {
	w := append([]float32(nil), p.w.Data.([]float32)...) // models compiled earlier keep the old weights
	lr := opt.LearningRate
	switch opt.Name {
	case "sgd":
		for i := range w {
			w[i] -= float32(lr * float64(g[i]))
		}
	case "adam":
		const b1, b2, eps = 0.9, 0.999, 1e-8
		if p.m == nil {
			p.m, p.v = make([]float64, len(w)), make([]float64, len(w))
		}
		c1, c2 := 1-math.Pow(b1, float64(t.t)), 1-math.Pow(b2, float64(t.t))
		for i := range w {
			gi := float64(g[i])
			p.m[i] = b1*p.m[i] + (1-b1)*gi
			p.v[i] = b2*p.v[i] + (1-b2)*gi*gi
			w[i] -= float32(lr * (p.m[i] / c1) / (math.Sqrt(p.v[i]/c2) + eps))
		}
	}
	p.w = tensor.From(p.w.Shape, w)
}

// ONNX returns the model file with the trained weights.
func (t *Trainer) ONNX() []byte {
	byName := map[string]*tensor.Tensor{}
	for _, p := range t.params {
		byName[p.name] = p.w
	}
	g := *t.pb.Graph
	g.Initializers = make([]*onnxpb.Tensor, len(t.pb.Graph.Initializers))
	for i, init := range t.pb.Graph.Initializers {
		if w, ok := byName[init.Name]; ok {
			g.Initializers[i] = model.TensorToONNX(init.Name, w)
		} else {
			g.Initializers[i] = init
		}
	}
	pb := *t.pb
	pb.Graph = &g
	return onnxpb.Marshal(&pb)
}

// IsBadRequest reports whether err was caused by the request.
func IsBadRequest(err error) bool { return errors.Is(err, errBadRequest) }
