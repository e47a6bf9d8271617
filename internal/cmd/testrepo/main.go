// Command testrepo writes the model repository the generated-client tests
// (tools/goclient, tools/tsclient) run a server on:
//
//	go run ./internal/cmd/testrepo DIR
//
//	DIR/mnist/1/model.onnx           the embedded MNIST model
//	DIR/identity_fp32/1/model.onnx   Identity, FP32 [-1] ("x" -> "y")
//	DIR/identity_fp64/1/model.onnx   Identity, FP64 [-1]
//	DIR/identity_int64/1/model.onnx  Identity, INT64 [-1, 2], batched, with
//	DIR/identity_int64/config.pbtxt  a Triton config: max_batch_size 4
//
// The identities make exact round trips checkable: what goes in comes out.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/tensor"
)

// int64Config declares identity_int64 as Triton would.
const int64Config = `name: "identity_int64"
platform: "onnxruntime_onnx"
max_batch_size: 4
version_policy: { latest: { num_versions: 1 } }
input [
  { name: "x", data_type: TYPE_INT64, dims: [ 2 ] }
]
output [
  { name: "y", data_type: TYPE_INT64, dims: [ 2 ] }
]
`

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: testrepo DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	files := map[string][]byte{
		"mnist/1/model.onnx":          defaultmodel.ONNX,
		"identity_fp32/1/model.onnx":  onnxbuild.Identity(tensor.Float32, []int{-1}),
		"identity_fp64/1/model.onnx":  onnxbuild.Identity(tensor.Float64, []int{-1}),
		"identity_int64/1/model.onnx": onnxbuild.Identity(tensor.Int64, []int{-1, 2}),
		"identity_int64/config.pbtxt": []byte(int64Config),
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "testrepo:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "testrepo:", err)
			os.Exit(1)
		}
	}
}
