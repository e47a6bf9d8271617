package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/ops/conv"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tools/ortquant/quantize"
)

// TestStaticQDQResNet50: ResNet-50 quantized as quantize_static writes it
// (tools/ortquant: QDQ, per-channel weights, calibrated on its
// test_data_set inputs) runs with its residual blocks inside the fused
// convolutions (no QuantizeLinear, DequantizeLinear, Sum or Relu left;
// four QuantizeDequantize, the pairs of the input, the average pool and
// the classifier: the max pool's, an identity on its input's grid, goes,
// and the stem writes channels-last for the pool), answers bit for bit what the unrewritten graph answers, in
// float32 and on the int8 kernels, and picks the float model's class on
// every test input.
func TestStaticQDQResNet50(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "models", "onnx_light_resnet50")
	data, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Skipf("the shared ResNet-50 is missing: %v", err)
	}
	inputs, err := quantize.TestDataInputs(data, dir)
	if err != nil || len(inputs) == 0 {
		t.Skipf("no test inputs beside the shared ResNet-50: %v", err)
	}
	qdq, _, err := quantize.Static(data, inputs)
	if err != nil {
		t.Fatal(err)
	}
	float, err := model.LoadWith(data, model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []model.Options{{}, {Quantize: true, Scheme: quant.PerChannel}} {
		fused, err := model.LoadWith(qdq, opts)
		if err != nil {
			t.Fatal(err)
		}
		steps := map[string]int{}
		for _, s := range fused.Steps() {
			steps[s.Op]++
		}
		if a, ok := fused.Steps()[1].Params.(*conv.FusedConvAttrs); !ok || !a.NHWCOut {
			t.Errorf("quantize=%v: the stem (step 1, after the input's pair) is not a convolution writing channels-last: %+v", opts.Quantize, fused.Steps()[1])
		}
		if steps["QuantizeLinear"]+steps["DequantizeLinear"]+steps["Sum"]+steps["Relu"]+steps["Conv"] != 0 || steps["QuantizeDequantize"] != 4 {
			t.Errorf("quantize=%v: steps %v", opts.Quantize, steps)
		}
		opts.Unrewritten = true
		plain, err := model.LoadWith(qdq, opts)
		if err != nil {
			t.Fatal(err)
		}
		for i, in := range inputs {
			a, err := fused.Run(context.Background(), in, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, err := plain.Run(context.Background(), in, nil)
			if err != nil {
				t.Fatal(err)
			}
			f, err := float.Run(context.Background(), in, nil)
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range b {
				got := a[name].Data.([]float32)
				for j, v := range want.Data.([]float32) {
					if math.Float32bits(got[j]) != math.Float32bits(v) {
						t.Fatalf("quantize=%v input %d: %s[%d] = %v rewritten, %v unrewritten", opts.Quantize, i, name, j, got[j], v)
					}
				}
				if c, fc := argmax(got), argmax(f[name].Data.([]float32)); c != fc {
					t.Errorf("quantize=%v input %d: class %d, the float model's %d", opts.Quantize, i, c, fc)
				}
			}
		}
	}
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
