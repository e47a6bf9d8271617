//go:build autodiff

package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/quantserve/quantserve/autodiff"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/oip"
	"github.com/quantserve/quantserve/tensor"
)

// MaxTrainSteps bounds one /train request.
const MaxTrainSteps = 1000

// mountAutodiff mounts the gradient routes: /grad on every model path, and
// /train (admin token) to fine-tune a model into a new version.
func (s *server) mountAutodiff(r chi.Router) {
	for _, prefix := range modelPrefixes {
		r.Method(http.MethodPost, prefix+"/grad", s.work(s.grad))
	}
	r.With(s.requireAdmin).Method(http.MethodPost, "/v2/models/{model}/train", s.work(s.train))
}

func autodiffExtensions() []string { return []string{"autodiff"} }

// readInputs decodes a body's "inputs" (OIP tensors) with the infer
// scanner and returns the body for its other fields.
func readInputs(in *workInput) ([]byte, map[string]*tensor.Tensor, error) {
	body := in.body
	req, err := oip.DecodeInferRequest(body)
	if err != nil {
		return nil, nil, err
	}
	inputs := map[string]*tensor.Tensor{}
	for _, t := range req.Inputs {
		if _, dup := inputs[t.Name]; dup {
			return nil, nil, errorf(CodeInvalid, fmt.Sprintf("input %q appears more than once", t.Name))
		}
		inputs[t.Name] = t.Tensor
		if err := in.reserve(t.Tensor); err != nil {
			return nil, nil, err
		}
	}
	return body, inputs, nil
}

// POST /v2/models/{m}[/versions/{v}]/grad
func (s *server) grad(w http.ResponseWriter, r *http.Request, in *workInput) error {
	e, v, release, err := s.lookup(r)
	if err != nil {
		return err
	}
	defer release()
	body, inputs, err := readInputs(in)
	if err != nil {
		return err
	}
	var extra struct {
		Output     string          `json:"output"`
		OutputGrad json.RawMessage `json:"output_grad"`
		Wrt        []string        `json:"wrt"`
	}
	if err := json.Unmarshal(body, &extra); err != nil {
		return errorf(CodeInvalid, fmt.Sprintf("\"output\" must be a string and \"wrt\" a list of names: %v", err))
	}
	req := autodiff.GradRequest{Inputs: inputs, Output: extra.Output, Wrt: extra.Wrt}
	if len(extra.OutputGrad) > 0 {
		if req.OutputGrad, err = oip.DecodeTensor(extra.OutputGrad); err != nil {
			return errorf(CodeInvalid, "output_grad: "+err.Error())
		}
	}
	// The forward values a backward pass keeps are charged like an
	// inference's.
	outs, grads, err := autodiff.Gradients(model.WithBudget(r.Context(), in.acct), v.Model, req)
	if err != nil {
		return err
	}
	b := []byte(`{"model_name":`)
	name, _ := json.Marshal(e.Name)
	b = append(b, name...)
	b = append(b, `,"model_version":"`...)
	b = strconv.AppendInt(b, v.Number, 10)
	b = append(b, `","outputs":[`...)
	for i, spec := range v.Model.Outputs {
		if i > 0 {
			b = append(b, ',')
		}
		b = oip.AppendTensor(b, spec.Name, outs[spec.Name])
	}
	b = append(b, `],"gradients":[`...)
	for i, g := range grads {
		if i > 0 {
			b = append(b, ',')
		}
		b = oip.AppendTensor(b, g.Name, g.Tensor)
	}
	b = append(b, "]}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
	return nil
}

// POST /v2/models/{m}/train
func (s *server) train(w http.ResponseWriter, r *http.Request, in *workInput) error {
	e, v, release, err := s.lookup(r)
	if err != nil {
		return err
	}
	source := v.ONNX
	release()
	body, inputs, err := readInputs(in)
	if err != nil {
		return err
	}
	var req struct {
		Targets   json.RawMessage `json:"targets"`
		Loss      string          `json:"loss"`
		Optimizer struct {
			Name         string  `json:"name"`
			LearningRate float64 `json:"learning_rate"`
		} `json:"optimizer"`
		Steps int `json:"steps"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return errorf(CodeInvalid, fmt.Sprintf("malformed train request: %v", err))
	}
	if req.Steps < 1 || req.Steps > MaxTrainSteps {
		return errorf(CodeInvalid, fmt.Sprintf("\"steps\" must be between 1 and %d", MaxTrainSteps))
	}
	if len(req.Targets) == 0 {
		return errorf(CodeInvalid, `missing "targets": INT64 class ids for cross_entropy, an FP32 output-shaped tensor for mse`)
	}
	targets, err := oip.DecodeTensor(req.Targets)
	if err != nil {
		return errorf(CodeInvalid, "targets: "+err.Error())
	}
	if source == nil {
		return errorf(CodeConflict, "this version has no model file to train from")
	}
	tr, err := autodiff.NewTrainer(source, s.exec)
	if err != nil {
		return err
	}
	opt := autodiff.Optimizer{Name: req.Optimizer.Name, LearningRate: req.Optimizer.LearningRate}
	losses := make([]float64, 0, req.Steps)
	for i := 0; i < req.Steps; i++ {
		if err := r.Context().Err(); err != nil {
			return err
		}
		l, err := tr.Step(model.WithBudget(r.Context(), in.acct), inputs, targets, req.Loss, opt)
		if err != nil {
			return err
		}
		losses = append(losses, l)
	}
	number, err := s.repo.AddVersion(r.Context(), e.Name, tr.ONNX())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"model_name": e.Name, "model_version": strconv.FormatInt(number, 10), "loss": losses})
	return nil
}
