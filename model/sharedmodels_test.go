package model_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/internal/shareddata"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// TestSharedModels runs the real exported models in ../shared/models
// (a trained PaddleOCR CNN, five ONNX-zoo architectures, an MNIST MLP) on
// their test data sets: with --quantize none within ONNX's tolerance of
// ONNX Runtime's outputs, and with int8 weights (the default) with the same
// top class and within 2% of the output's range.
func TestSharedModels(t *testing.T) {
	root := shareddata.Dir(t, "models")
	// Every model ../shared/models holds: a missing one fails the test
	// rather than leaving it to run on fewer.
	expected := []string{
		"marabou_mnist_relu_softmax", "onnx_light_densenet121", "onnx_light_inception_v1",
		"onnx_light_resnet50", "onnx_light_squeezenet", "onnx_light_vgg19", "paddleocr_cls_mobile_v2",
	}
	// ImageNet-size architectures take minutes under an emulator; the
	// short run keeps SqueezeNet, PaddleOCR and the MLP.
	shortSkips := func(name string) bool {
		return strings.HasPrefix(name, "onnx_light_") && name != "onnx_light_squeezenet"
	}
	ran, wantRan := 0, 0
	for _, name := range expected {
		if !testing.Short() || !shortSkips(name) {
			wantRan++
		}
		dir := filepath.Join(root, name)
		data, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
		if err != nil {
			t.Errorf("model %s: %v", name, err)
			continue
		}
		t.Run(name, func(t *testing.T) {
			if testing.Short() && shortSkips(name) {
				t.Skip("a full ImageNet architecture: runs without -short")
			}
			sets, _ := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
			if len(sets) == 0 {
				t.Fatal("no test data sets")
			}
			f32, err := model.LoadWith(data, model.Options{})
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			i8, err := model.LoadWith(data, model.Options{Quantize: true, Scheme: quant.PerChannel})
			if err != nil {
				t.Fatalf("load with int8 weights: %v", err)
			}
			for _, set := range sets {
				inputs := map[string]*tensor.Tensor{}
				for i, spec := range f32.Inputs {
					inputs[spec.Name] = readTensor(t, filepath.Join(set, fmt.Sprintf("input_%d.pb", i)))
				}
				for i, spec := range f32.Outputs {
					want := readTensor(t, filepath.Join(set, fmt.Sprintf("output_%d.pb", i))).Data.([]float32)
					got := runOutput(t, f32, inputs, spec.Name)
					var span float64
					for _, w := range want {
						span = max(span, math.Abs(float64(w)))
					}
					bad := 0
					for j := range want {
						if d := math.Abs(float64(got[j] - want[j])); d > 1e-5+1e-3*math.Abs(float64(want[j])) {
							if bad < 3 {
								t.Errorf("%s float32: %s[%d] = %v, ONNX Runtime %v", filepath.Base(set), spec.Name, j, got[j], want[j])
							}
							bad++
						}
					}
					q := runOutput(t, i8, inputs, spec.Name)
					var worst float64
					for j := range want {
						worst = max(worst, math.Abs(float64(q[j]-want[j])))
					}
					if worst > 0.02*span {
						t.Errorf("%s int8: differs from ONNX Runtime by %.3g, more than 2%% of the output range %.3g", filepath.Base(set), worst, span)
					}
					if len(want) > 1 && !sameTopClasses(q, want, f32.Outputs[i].Shape) {
						t.Errorf("%s int8: top class differs from ONNX Runtime's", filepath.Base(set))
					}
					t.Logf("%s %s: int8 within %.3f%% of the output range; layers %s", filepath.Base(set), spec.Name, 100*worst/math.Max(span, 1e-30), kernelsSummary(i8))
				}
			}
			ran++
		})
	}
	if ran != wantRan {
		t.Errorf("ran %d of the %d models this run takes (%d in ../shared/models)", ran, wantRan, len(expected))
	}
}

func runOutput(t *testing.T, m *model.Model, in map[string]*tensor.Tensor, name string) []float32 {
	t.Helper()
	out, err := m.Run(context.Background(), in, []string{name})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return out[name].Data.([]float32)
}

// sameTopClasses compares the arg max of each row (the last axis) of two
// score tensors; rows whose top two reference scores tie are skipped
// (the light models' constant weights give uniform scores).
func sameTopClasses(got, want []float32, shape []int) bool {
	n := len(want)
	if len(shape) > 0 && shape[len(shape)-1] > 0 {
		n = shape[len(shape)-1]
	}
	for r := 0; r+n <= len(want); r += n {
		g, w := argmax(got[r:r+n]), argmax(want[r:r+n])
		if g != w && want[r+g] != want[r+w] {
			return false
		}
	}
	return true
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

func kernelsSummary(m *model.Model) string {
	counts := map[string]int{}
	for _, l := range m.Layers {
		counts[strings.Fields(l.Kernels + " ")[0]]++
	}
	return fmt.Sprint(counts)
}
