//go:build autodiff

package autodiff

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/tensor"
)

// TestSequenceModelsRefuseGradients: the recognizer and the voice-activity
// detector of internal/onnxbuild run LSTMs, which have no backward
// function; a gradient request says so as a request error (HTTP 400)
// naming the operator.
func TestSequenceModelsRefuseGradients(t *testing.T) {
	vc := onnxbuild.DefaultVAD
	st := tensor.From([]int{1, 2, vc.Hidden}, make([]float32, 2*vc.Hidden))
	for _, c := range []struct {
		name string
		g    onnxbuild.Graph
		in   map[string]*tensor.Tensor
		out  string
	}{
		{"recognizer", onnxbuild.Recognizer(onnxbuild.DefaultRecognizer),
			map[string]*tensor.Tensor{"x": onnxbuild.RecognizerInput(onnxbuild.DefaultRecognizer, 1, 1)}, ""},
		{"vad", onnxbuild.VAD(vc), map[string]*tensor.Tensor{"input": onnxbuild.VADInput(vc, 2, 1, 0), "h": st, "c": st}, "output"},
	} {
		m, err := model.Load(c.g.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = Gradients(context.Background(), m, GradRequest{Inputs: c.in, Output: c.out})
		var ng *NoGradientError
		if !errors.Is(err, model.ErrInput) || !errors.As(err, &ng) || ng.Op != "LSTM" || !strings.Contains(err.Error(), "LSTM") {
			t.Errorf("%s: %v, want a request error naming LSTM", c.name, err)
		}
	}
}
