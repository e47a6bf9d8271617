//go:build autodiff

package api

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/internal/shareddata"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// TestGradSaliencyPaddleOCR asks /grad for the saliency map of the
// PaddleOCR text-direction classifier (a MobileNetV3: convolutions with
// BatchNormalization, depthwise convolutions, hard-swish, squeeze-and-
// excitation blocks) on its first test image: d p[0]/d x over the whole
// 3×48×192 input, checked against central differences of /infer at the
// most salient pixels.
func TestGradSaliencyPaddleOCR(t *testing.T) {
	dir := filepath.Join(shareddata.Dir(t, "models"), "paddleocr_cls_mobile_v2")
	data, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "test_data_set_0", "input_0.pb"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := onnxpb.UnmarshalTensor(raw)
	if err != nil {
		t.Fatal(err)
	}
	img, err := model.TensorFromONNX(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(img.Shape) != 4 || !slices.Equal(img.Shape[1:], []int{3, 48, 192}) || img.DType != tensor.Float32 {
		t.Fatalf("test images %v %v", img.DType, img.Shape)
	}
	url := testServer(t, openRepo(t, writeRepo(t, map[string]map[int][]byte{"cls": {1: data}}, map[string]string{"cls": "quantize: none\n"})), 0)
	x := make([]float64, 3*48*192) // the first image
	for i, v := range img.Data.([]float32)[:len(x)] {
		x[i] = float64(v)
	}
	body := func(x []float64, extra string) string {
		b, _ := json.Marshal(x)
		return fmt.Sprintf(`{"inputs":[{"name":"x","shape":[1,3,48,192],"datatype":"FP32","data":%s}]%s}`, b, extra)
	}
	resp := do(t, "POST", url+"/v2/models/cls/grad", body(x, `,"output_grad":{"shape":[1,2],"datatype":"FP32","data":[1,0]},"wrt":["x"]`))
	var g gradResponse
	if err := json.Unmarshal(resp.body, &g); err != nil || resp.status != 200 {
		t.Fatalf("grad: %d %.300s", resp.status, resp.body)
	}
	if len(g.Gradients) != 1 || g.Gradients[0].Name != "x" || fmt.Sprint(g.Gradients[0].Shape) != "[1 3 48 192]" || len(g.Gradients[0].Data) != len(x) {
		t.Fatalf("gradients: %d, want one of x's shape", len(g.Gradients))
	}
	sal := g.Gradients[0].Data
	// A saliency map: nonzero over much of the image, not one spot.
	nonzero, peak := 0, 0
	for i, v := range sal {
		if v != 0 {
			nonzero++
		}
		if math.Abs(v) > math.Abs(sal[peak]) {
			peak = i
		}
	}
	if sal[peak] == 0 {
		t.Fatal("the saliency map is all zeros")
	}
	if nonzero < len(sal)/4 {
		t.Errorf("the saliency map is nonzero at %d of %d pixels", nonzero, len(sal))
	}
	p0 := func(x []float64) float64 {
		r := do(t, "POST", url+"/v2/models/cls/infer", body(x, ""))
		var out struct{ Outputs []struct{ Data []float64 } }
		if err := json.Unmarshal(r.body, &out); err != nil || r.status != 200 || len(out.Outputs) != 1 || len(out.Outputs[0].Data) != 2 {
			t.Fatalf("infer: %d %.300s", r.status, r.body)
		}
		return out.Outputs[0].Data[0]
	}
	// The most salient pixel of each channel in each half of the image
	// (a pixel's effect on p[0] well above float32's rounding).
	var pixels []int
	for c := 0; c < 3; c++ {
		for half := 0; half < 2; half++ {
			best := -1
			for y := 0; y < 48; y++ {
				for xx := half * 96; xx < (half+1)*96; xx++ {
					if i := (c*48+y)*192 + xx; best < 0 || math.Abs(sal[i]) > math.Abs(sal[best]) {
						best = i
					}
				}
			}
			pixels = append(pixels, best)
		}
	}
	scale := math.Abs(sal[peak])
	for _, i := range pixels {
		orig := x[i]
		const h = 1e-2
		x[i] = orig + h
		plus := p0(x)
		x[i] = orig - h
		minus := p0(x)
		x[i] = orig
		fd := (plus - minus) / (2 * h)
		if d := math.Abs(sal[i] - fd); d > 0.02*math.Abs(fd)+1e-3*scale {
			c, y, xx := i/(48*192), i/192%48, i%192
			t.Errorf("d p0/d x[0][%d][%d][%d]: /grad %.4g, finite differences of /infer %.4g", c, y, xx, sal[i], fd)
		}
	}
}

// TestGradOperatorWithoutGradient: a model with an operator that has no
// backward pass answers /grad with 400 naming the operator, while /infer
// works.
func TestGradOperatorWithoutGradient(t *testing.T) {
	g := onnxbuild.Graph{
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, 2, 3)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, 2, 3)},
		Nodes: []onnxbuild.Node{
			{Op: "Relu", Inputs: []string{"x"}, Outputs: []string{"r"}},
			{Op: "CumSum", Inputs: []string{"r", "axis"}, Outputs: []string{"y"}},
		},
		Inits: map[string]*tensor.Tensor{"axis": tensor.From([]int{}, []int64{1})},
	}
	url := testServer(t, openRepo(t, writeRepo(t, map[string]map[int][]byte{"cum": {1: g.Bytes()}}, nil)), 0)
	body := `{"inputs":[{"name":"x","shape":[2,3],"datatype":"FP32","data":[1,2,3,4,5,6]}]}`
	if r := do(t, "POST", url+"/v2/models/cum/infer", body); r.status != 200 {
		t.Fatalf("infer: %d %s", r.status, r.body)
	}
	wantError(t, do(t, "POST", url+"/v2/models/cum/grad", body), 400, "CumSum", "no gradient")
}
