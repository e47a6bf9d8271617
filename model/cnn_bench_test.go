package model

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/internal/shareddata"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// The CNN benchmarks run whole exported models from ../shared/models on
// GOMAXPROCS cores (-test.cpu N: one value an invocation, since a
// benchmark on b.Loop measures the first value of a list under the
// GOMAXPROCS the list leaves, not its own), int8 weights (the default)
// and float32, and report images/s.
// tools/modelbench runs the same models beside ONNX Runtime; these are for
// profiling (-cpuprofile) and for before/after comparisons of one change.

// BenchmarkResNet50 runs the ONNX zoo's ResNet-50 (constant weights) on
// 224×224 images, batch 1 and 8.
func BenchmarkResNet50(b *testing.B) {
	benchCNN(b, "onnx_light_resnet50", []int{3, 224, 224}, []int{1, 8})
}

// BenchmarkPaddleOCR runs the PaddleOCR text-direction classifier on
// 3×48×192 text lines, batch 1 and 8.
func BenchmarkPaddleOCR(b *testing.B) {
	benchCNN(b, "paddleocr_cls_mobile_v2", []int{3, 48, 192}, []int{1, 8})
}

func benchCNN(b *testing.B, dir string, item []int, batches []int) {
	path := filepath.Join(shareddata.Dir(b, "models"), dir, "model.onnx")
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	data, err = cnnDynamicBatch(data)
	if err != nil {
		b.Fatal(err)
	}
	exec := gemm.New(dispatch.Default(), runtime.GOMAXPROCS(0))
	defer exec.Close()
	for _, v := range []struct {
		name string
		opts Options
	}{
		{"int8", Options{Exec: exec, Quantize: true, Scheme: quant.PerChannel}},
		{"float32", Options{Exec: exec}},
	} {
		m, err := LoadWith(data, v.opts)
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range batches {
			b.Run(fmt.Sprintf("%s/batch%d", v.name, n), func(b *testing.B) {
				shape := append([]int{n}, item...)
				size, _ := tensor.NumElements(shape)
				x := make([]float32, size)
				r := rand.New(rand.NewPCG(1, 2))
				for i := range x {
					x[i] = r.Float32()*2 - 1
				}
				in := map[string]*tensor.Tensor{m.Inputs[0].Name: tensor.From(shape, x)}
				b.ReportAllocs()
				cpu0 := cpuTime()
				for b.Loop() {
					if _, err := m.Run(context.Background(), in, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "images/s")
				// The process's CPU time per image (the collector's
				// included) moves less than the wall clock when
				// neighbours load the machine.
				if cpu := cpuTime() - cpu0; cpu > 0 {
					b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(n*b.N), "cpu-ms/image")
				}
			})
		}
	}
}

// cnnDynamicBatch makes dimension 0 of the graph's inputs and outputs
// symbolic and Reshape targets that fix a batch of 1 copy the batch, as
// tools/modelbench does (the zoo's models fix their batch at 1).
func cnnDynamicBatch(data []byte) ([]byte, error) {
	pb, err := onnxpb.UnmarshalModel(data)
	if err != nil {
		return nil, err
	}
	for _, vi := range append(append([]*onnxpb.ValueInfo{}, pb.Graph.Inputs...), pb.Graph.Outputs...) {
		if vi.Type != nil && len(vi.Type.Shape) > 0 {
			vi.Type.Shape[0] = onnxpb.Dim{Param: "N"}
		}
	}
	shapes := map[string]bool{}
	for _, n := range pb.Graph.Nodes {
		if n.OpType == "Reshape" && len(n.Inputs) > 1 {
			shapes[n.Inputs[1]] = true
		}
	}
	for i, p := range pb.Graph.Initializers {
		if !shapes[p.Name] {
			continue
		}
		t, err := TensorFromONNX(p)
		if err != nil {
			return nil, err
		}
		if v, ok := t.Data.([]int64); ok && len(v) > 1 && v[0] == 1 {
			v[0] = 0
			pb.Graph.Initializers[i] = TensorToONNX(p.Name, t)
		}
	}
	return onnxpb.Marshal(pb), nil
}
