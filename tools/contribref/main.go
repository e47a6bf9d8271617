// Command contribref computes reference outputs with ONNX Runtime for the
// com.microsoft operators of ops/contrib (Gelu, FastGelu, BiasGelu,
// QuickGelu, BiasAdd, SkipLayerNormalization,
// SkipSimplifiedLayerNormalization, RotaryEmbedding,
// EmbedLayerNormalization, MultiHeadAttention, FusedMatMul, Attention),
// so ops/contrib's tests compare against the reference runtime without
// needing it installed.
//
//	d=$(mktemp -d) && cp -r ../shared/peers/ort/. "$d" && (cd "$d" && ONNXRUNTIME_NODE_INSTALL_CUDA=skip npm install)
//	go run -C tools ./contribref -ort "$d"
//
// Each case is a small model (cases.go, bert_cases.go,
// attention_cases.go): one com.microsoft node on seeded random inputs of
// odd sizes, with optional inputs present and absent, and blocks of
// several such nodes. It writes
// ops/contrib/testdata/<case>/model.onnx (the model quantserve runs) and
// beside it input_i.pb for the model's inputs in order and output_i.pb for
// ONNX Runtime's outputs (ONNX TensorProto files, as ONNX's node tests
// store them). ONNX Runtime runs that model, except where it cannot:
//
//   - FLOAT16 cases: the shim cannot feed FLOAT16, so ONNX Runtime runs
//     the model behind Casts from and to FLOAT (the inputs are float16
//     values, so the Casts are exact) and its results are stored as the
//     FLOAT16 values they are;
//   - BiasAdd: ONNX Runtime has no CPU kernel for it (only CUDA's), so its
//     reference is ONNX Runtime's Add(Add(X, bias), skip), the operator's
//     definition;
//   - MultiHeadAttention of a packed query (QKV) or key (KV): ONNX
//     Runtime's CPU kernel takes neither, so its reference is ONNX
//     Runtime's MultiHeadAttention of the parts, Split and Reshaped to
//     [batch, sequence, hidden];
//   - FusedMatMul and Attention in FLOAT16: ONNX Runtime's CPU kernels
//     take FLOAT only, so it runs them on the operands Cast to FLOAT and
//     Casts the outputs back to FLOAT16 (rounded once, as quantserve
//     rounds them);
//   - FusedMatMul with transA and a 1-D B: ONNX Runtime's CPU kernel
//     reads A untransposed there, so its reference is the definition,
//     alpha times the MatMul of B (a row) and A.
//
// -cases rewrites some of the cases (comma-separated names); without it
// the output directory is rewritten whole.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/quantserve/quantserve/oip"
	"github.com/quantserve/quantserve/onnx"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
	"github.com/quantserve/quantserve/tools/internal/ortshim"
)

func main() {
	ortDir := flag.String("ort", "", "a copy of ../shared/peers/ort with onnxruntime-node installed")
	out := flag.String("out", "../ops/contrib/testdata", "the directory to write the cases under (the default is relative to tools/)")
	only := flag.String("cases", "", "the cases to compute (comma-separated; all when empty)")
	flag.Parse()
	if *ortDir == "" {
		log.Fatal("-ort is required (see the package doc)")
	}
	cases := buildCases()
	if *only != "" {
		var picked []refCase
		for _, name := range strings.Split(*only, ",") {
			i := slices.IndexFunc(cases, func(c refCase) bool { return c.name == name })
			if i < 0 {
				log.Fatalf("no case %q", name)
			}
			picked = append(picked, cases[i])
		}
		cases = picked
	}
	repo, err := os.MkdirTemp("", "contribref")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(repo)
	for _, c := range cases {
		dir := filepath.Join(repo, c.name, "1")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "model.onnx"), c.runtimeGraph().Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	base, stop := ortshim.Start(*ortDir, repo)
	defer stop()
	if *only == "" {
		if err := os.RemoveAll(*out); err != nil {
			stop()
			log.Fatal(err)
		}
	}
	for _, c := range cases {
		outs, err := infer(base, c)
		if err != nil {
			stop()
			log.Fatalf("%s: %v", c.name, err)
		}
		write(filepath.Join(*out, c.name), c, outs)
	}
	log.Printf("wrote %d ONNX Runtime reference cases to %s", len(cases), *out)
}

// infer runs case c through the shim: its inputs (FLOAT16 ones as the
// FLOAT values they hold) and its outputs in the model's order, FLOAT16
// ones converted back from the FLOAT ONNX Runtime answered.
func infer(base string, c refCase) ([]*tensor.Tensor, error) {
	body := []byte(`{"inputs":[`)
	for i, t := range c.feed {
		if i > 0 {
			body = append(body, ',')
		}
		body = oip.AppendTensor(body, c.graph.Inputs[i].Name, toFloat32(t))
	}
	body = append(body, "]}"...)
	resp, err := http.Post(base+"/v2/models/"+c.name+"/infer", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Outputs []json.RawMessage
		Error   string
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || len(r.Outputs) != len(c.graph.Outputs) {
		return nil, fmt.Errorf("ONNX Runtime answered %s (%d outputs, want %d): %v %s", resp.Status, len(r.Outputs), len(c.graph.Outputs), err, r.Error)
	}
	var outs []*tensor.Tensor
	for i, o := range r.Outputs {
		t, err := oip.DecodeTensor(o)
		if err != nil {
			return nil, err
		}
		if want := c.graph.Outputs[i].DType; want == tensor.Float16 && t.DType == tensor.Float32 {
			t = &tensor.Tensor{DType: tensor.Float16, Shape: t.Shape, Data: tensor.Float32ToHalf[tensor.F16](t.Data.([]float32))}
		}
		if t.DType != c.graph.Outputs[i].DType {
			return nil, fmt.Errorf("output %q is %v, want %v", c.graph.Outputs[i].Name, t.DType, c.graph.Outputs[i].DType)
		}
		outs = append(outs, t)
	}
	return outs, nil
}

// toFloat32 returns a FLOAT16 tensor as FLOAT (exactly), others as they are.
func toFloat32(t *tensor.Tensor) *tensor.Tensor {
	if h, ok := t.Data.([]tensor.F16); ok {
		return tensor.From(t.Shape, tensor.HalfToFloat32(h))
	}
	return t
}

// write stores case c in dir: model.onnx, input_i.pb and output_i.pb.
func write(dir string, c refCase, outs []*tensor.Tensor) {
	if err := os.RemoveAll(dir); err != nil {
		log.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "model.onnx"), sortedInits(c.graph.Bytes()), 0o644); err != nil {
		log.Fatal(err)
	}
	save := func(kind string, ts []*tensor.Tensor) {
		for i, t := range ts {
			name := fmt.Sprintf("%s_%d.pb", kind, i)
			if err := os.WriteFile(filepath.Join(dir, name), onnxpb.MarshalTensor(onnx.TensorToONNX(name, t)), 0o644); err != nil {
				log.Fatal(err)
			}
		}
	}
	save("input", c.feed)
	save("output", outs)
}

// sortedInits returns the model m with its initializers in name order, so
// that a rerun writes the same bytes.
func sortedInits(m []byte) []byte {
	pm, err := onnxpb.UnmarshalModel(m)
	if err != nil {
		log.Fatal(err)
	}
	slices.SortFunc(pm.Graph.Initializers, func(a, b *onnxpb.Tensor) int { return strings.Compare(a.Name, b.Name) })
	return onnxpb.Marshal(pm)
}
