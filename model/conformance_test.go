package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/internal/shareddata"
	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// ONNX's backend test runner compares with these tolerances.
const (
	onnxRTol = 1e-3
	onnxATol = 1e-7
)

// TestONNXNodeConformance runs every official ONNX node test case in
// ../shared/onnx-node through Load and Run. A case either passes (outputs
// match in dtype, shape and value within ONNX's tolerance) or is refused at
// load with an ErrUnsupported error naming what is missing; anything else
// fails.
func TestONNXNodeConformance(t *testing.T) {
	root := shareddata.Dir(t, "onnx-node")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var passed, failed, skipped int
	var skips []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "test_") {
			continue
		}
		name := e.Name()
		dir := filepath.Join(root, name)
		ok := t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			m, err := Load(data)
			if err != nil {
				if errors.Is(err, ErrUnsupported) {
					skips = append(skips, fmt.Sprintf("%s: %v", name, err))
					skipped++
					return
				}
				t.Fatalf("load: %v", err)
			}
			inputs, wants := readTestSet(t, filepath.Join(dir, "test_data_set_0"), m)
			got, err := m.Run(context.Background(), inputs, nil)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			for i, spec := range m.Outputs {
				compareONNX(t, spec.Name, got[spec.Name], wants[i])
			}
		})
		if ok {
			passed++
		} else {
			failed++
		}
	}
	passed -= skipped
	sort.Strings(skips)
	for _, s := range skips {
		t.Logf("refused at load: %s", s)
	}
	t.Logf("ONNX node conformance: %d passed, %d failed, %d skipped", passed, failed, skipped)
	fmt.Printf("onnx-node: %d passed, %d failed, %d skipped (refused at load)\n", passed, failed, skipped)
}

func readTestSet(t *testing.T, dir string, m *Model) (map[string]*tensor.Tensor, []*tensor.Tensor) {
	t.Helper()
	inputs := map[string]*tensor.Tensor{}
	for i, spec := range m.Inputs {
		inputs[spec.Name] = readTensorPB(t, filepath.Join(dir, fmt.Sprintf("input_%d.pb", i)))
	}
	var wants []*tensor.Tensor
	for i := range m.Outputs {
		wants = append(wants, readTensorPB(t, filepath.Join(dir, fmt.Sprintf("output_%d.pb", i))))
	}
	return inputs, wants
}

func readTensorPB(t *testing.T, path string) *tensor.Tensor {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := onnxpb.UnmarshalTensor(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	x, err := TensorFromONNX(p)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return x
}

// compareONNX checks got against want as ONNX's runner does: same dtype and
// shape, |got-want| <= atol + rtol*|want| elementwise, NaN matching NaN.
func compareONNX(t *testing.T, name string, got, want *tensor.Tensor) {
	t.Helper()
	if got == nil {
		t.Fatalf("output %q missing", name)
	}
	if got.DType != want.DType {
		t.Fatalf("output %q: dtype %v, want %v", name, got.DType, want.DType)
	}
	if !equalShape(got.Shape, want.Shape) {
		t.Fatalf("output %q: shape %v, want %v", name, got.Shape, want.Shape)
	}
	g, w := got.Float64s(), want.Float64s()
	bad := 0
	for i := range w {
		if math.IsNaN(w[i]) && math.IsNaN(g[i]) {
			continue
		}
		if g[i] == w[i] {
			continue
		}
		if !(math.Abs(g[i]-w[i]) <= onnxATol+onnxRTol*math.Abs(w[i])) {
			if bad < 5 {
				t.Errorf("output %q[%d] = %v, want %v", name, i, g[i], w[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("output %q: %d of %d elements differ", name, bad, len(w))
	}
}
