// Command ortref computes reference outputs with ONNX Runtime for the
// models quantserve's tests build in code (internal/onnxbuild's
// transformer encoder, CRNN text recognizer and voice-activity detector),
// so the tests compare against the reference runtime without needing it
// installed.
//
//	d=$(mktemp -d) && cp -r ../shared/peers/ort/. "$d" && (cd "$d" && ONNXRUNTIME_NODE_INSTALL_CUDA=skip npm install)
//	go run -C tools ./ortref -ort "$d"
//
// It writes ONNX TensorProto files (as ONNX's backend tests store them),
// input_i.pb for the model's inputs in order and output_i.pb for its
// outputs, under model/testdata:
//
//   - encoder/: the default encoder on a seeded batch of 2 sequences;
//   - recognizer/: the default recognizer on a seeded batch of 2 lines;
//   - vad/test_data_set_0/ and test_data_set_1/: the default detector on
//     two consecutive chunks of a seeded batch of 8 recordings, the first
//     from zero state, the second from the state ONNX Runtime returned for
//     the first;
//   - vad-stft/: the same for the detector with the STFT operator's front
//     end.
//
// -models picks some of them.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/oip"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// reference is one model and how its reference data is made: run calls
// infer as often as it needs and writes its files under dir.
type reference struct {
	name  string
	graph onnxbuild.Graph
	run   func(infer func(ins ...*tensor.Tensor) []*tensor.Tensor, dir string)
}

var references = []reference{
	{"encoder", onnxbuild.Encoder(onnxbuild.DefaultEncoder), func(infer func(...*tensor.Tensor) []*tensor.Tensor, dir string) {
		in := onnxbuild.EncoderInput(onnxbuild.DefaultEncoder, 2, 11)
		write(dir, []*tensor.Tensor{in}, infer(in))
	}},
	{"recognizer", onnxbuild.Recognizer(onnxbuild.DefaultRecognizer), func(infer func(...*tensor.Tensor) []*tensor.Tensor, dir string) {
		in := onnxbuild.RecognizerInput(onnxbuild.DefaultRecognizer, 2, 12)
		write(dir, []*tensor.Tensor{in}, infer(in))
	}},
	{"vad", onnxbuild.VAD(onnxbuild.DefaultVAD), vadChunks(onnxbuild.DefaultVAD)},
	{"vad-stft", onnxbuild.VAD(vadSTFT), vadChunks(vadSTFT)},
}

// vadSTFT is the default detector with the STFT operator's front end.
var vadSTFT = func() onnxbuild.VADConfig { c := onnxbuild.DefaultVAD; c.STFT = true; return c }()

// vadChunks runs a detector on two consecutive chunks of 8 recordings, the
// second from the state ONNX Runtime returned for the first.
func vadChunks(c onnxbuild.VADConfig) func(func(...*tensor.Tensor) []*tensor.Tensor, string) {
	return func(infer func(...*tensor.Tensor) []*tensor.Tensor, dir string) {
		const batch = 8
		state := tensor.From([]int{1, batch, c.Hidden}, make([]float32, batch*c.Hidden))
		h, cs := state, state
		for chunk := 0; chunk < 2; chunk++ {
			ins := []*tensor.Tensor{onnxbuild.VADInput(c, batch, 13, chunk), h, cs}
			outs := infer(ins...)
			write(filepath.Join(dir, fmt.Sprintf("test_data_set_%d", chunk)), ins, outs)
			h, cs = outs[1], outs[2]
		}
	}
}

func main() {
	ortDir := flag.String("ort", "", "a copy of ../shared/peers/ort with onnxruntime-node installed")
	out := flag.String("out", "../model/testdata", "the directory to write each model's reference tensors under (the default is relative to tools/)")
	var names []string
	for _, r := range references {
		names = append(names, r.name)
	}
	only := flag.String("models", strings.Join(names, ","), "the models to compute references for")
	flag.Parse()
	if *ortDir == "" {
		log.Fatal("-ort is required (see the package doc)")
	}
	var todo []reference
	for _, name := range strings.Split(*only, ",") {
		i := slices.IndexFunc(references, func(r reference) bool { return r.name == name })
		if i < 0 {
			log.Fatalf("no model %q (have %s)", name, strings.Join(names, ", "))
		}
		todo = append(todo, references[i])
	}
	repo, err := os.MkdirTemp("", "ortref")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(repo)
	for _, r := range todo {
		dir := filepath.Join(repo, r.name, "1")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "model.onnx"), r.graph.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	shim := exec.CommandContext(ctx, "node", filepath.Join(*ortDir, "oipshim.js"), fmt.Sprint(port), repo)
	shim.Dir, shim.Stderr = *ortDir, os.Stderr
	if err := shim.Start(); err != nil {
		log.Fatal(err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for i := 0; ; i++ {
		if r, err := http.Get(base + "/v2/health/live"); err == nil {
			r.Body.Close()
			break
		}
		if i > 100 {
			log.Fatal("the ONNX Runtime shim did not start")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, r := range todo {
		infer := func(ins ...*tensor.Tensor) []*tensor.Tensor {
			return inferORT(base, r.name, r.graph, ins)
		}
		dir := filepath.Join(*out, r.name)
		r.run(infer, dir)
		log.Printf("wrote ONNX Runtime's %s outputs to %s", r.name, dir)
	}
}

// inferORT runs one request through the ONNX Runtime shim: ins are the
// graph's inputs in order; it returns the outputs in order.
func inferORT(base, name string, g onnxbuild.Graph, ins []*tensor.Tensor) []*tensor.Tensor {
	body := []byte(`{"inputs":[`)
	for i, t := range ins {
		if i > 0 {
			body = append(body, ',')
		}
		body = oip.AppendTensor(body, g.Inputs[i].Name, t)
	}
	body = append(body, "]}"...)
	resp, err := http.Post(base+"/v2/models/"+name+"/infer", "application/json", bytes.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Outputs []json.RawMessage
		Error   string
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || len(r.Outputs) != len(g.Outputs) {
		log.Fatalf("ONNX Runtime answered %s for %s: %v %s", resp.Status, name, err, r.Error)
	}
	var outs []*tensor.Tensor
	for _, o := range r.Outputs {
		y, err := oip.DecodeTensor(o)
		if err != nil {
			log.Fatal(err)
		}
		outs = append(outs, y)
	}
	return outs
}

// write stores ins and outs in dir as input_i.pb and output_i.pb.
func write(dir string, ins, outs []*tensor.Tensor) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	save := func(kind string, ts []*tensor.Tensor) {
		for i, t := range ts {
			name := fmt.Sprintf("%s_%d.pb", kind, i)
			if err := os.WriteFile(filepath.Join(dir, name), onnxpb.MarshalTensor(model.TensorToONNX(name, t)), 0o644); err != nil {
				log.Fatal(err)
			}
		}
	}
	save("input", ins)
	save("output", outs)
}
