package model

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestMLAgreesWithONNXRuntime runs the ai.onnx.ml cases of
// testdata/ml-ort — tree ensembles, linear and SVM models, encoders and
// scalers shaped as scikit-learn's exports — and compares the outputs with
// ONNX Runtime's, which go run -C tools ./mlref recorded, within ONNX's
// tolerance.
func TestMLAgreesWithONNXRuntime(t *testing.T) {
	const root = "testdata/ml-ort"
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 50 {
		t.Fatalf("%s has %d cases; rerun go run -C tools ./mlref", root, len(entries))
	}
	for _, e := range entries {
		t.Run(e.Name(), func(t *testing.T) {
			dir := filepath.Join(root, e.Name())
			data, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			m, err := Load(data)
			if err != nil {
				t.Fatal(err)
			}
			inputs, wants := readTestSet(t, filepath.Join(dir, "test_data_set_0"), m)
			got, err := m.Run(context.Background(), inputs, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, spec := range m.Outputs {
				compareONNX(t, spec.Name, got[spec.Name], wants[i])
			}
		})
	}
}
