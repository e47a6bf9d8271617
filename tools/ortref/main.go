// Command ortref computes reference outputs with ONNX Runtime for the
// models quantserve's tests build in code (the transformer encoder of
// internal/onnxbuild), so the tests compare against the reference runtime
// without needing it installed.
//
//	d=$(mktemp -d) && cp -r ../shared/peers/ort/. "$d" && (cd "$d" && ONNXRUNTIME_NODE_INSTALL_CUDA=skip npm install)
//	go run ./tools/ortref -ort "$d"
//
// It writes model/testdata/encoder/{input_0,output_0}.pb (ONNX TensorProto,
// as ONNX's backend tests store them): ONNX Runtime's output for the
// default encoder on a seeded batch of 2 sequences.
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
	"time"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/oip"
	"github.com/quantserve/quantserve/tensor"
)

func main() {
	ortDir := flag.String("ort", "", "a copy of ../shared/peers/ort with onnxruntime-node installed")
	out := flag.String("out", "model/testdata/encoder", "where to write the reference tensors")
	flag.Parse()
	if *ortDir == "" {
		log.Fatal("-ort is required (see the package doc)")
	}
	repo, err := os.MkdirTemp("", "ortref")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(repo)
	dir := filepath.Join(repo, "encoder", "1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "model.onnx"), onnxbuild.Encoder(onnxbuild.DefaultEncoder).Bytes(), 0o644); err != nil {
		log.Fatal(err)
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
	in := onnxbuild.EncoderInput(onnxbuild.DefaultEncoder, 2, 11)
	body := append(oip.AppendTensor([]byte(`{"inputs":[`), "input_ids", in), "]}"...)
	resp, err := http.Post(base+"/v2/models/encoder/infer", "application/json", bytes.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Outputs []json.RawMessage
		Error   string
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || len(r.Outputs) != 1 {
		log.Fatalf("ONNX Runtime answered %s %v %s", resp.Status, err, r.Error)
	}
	y, err := oip.DecodeTensor(r.Outputs[0])
	if err != nil {
		log.Fatal(err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	for name, t := range map[string]*tensor.Tensor{"input_0.pb": in, "output_0.pb": y} {
		b := onnxpb.MarshalTensor(model.TensorToONNX(name, t))
		if err := os.WriteFile(filepath.Join(*out, name), b, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	log.Printf("wrote ONNX Runtime's encoder output %v to %s", y.Shape, *out)
}
