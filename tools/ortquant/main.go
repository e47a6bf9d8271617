// Command ortquant quantizes a float ONNX model the way ONNX Runtime's
// quantization tool does, without Python: with -mode dynamic (the only
// mode so far) it writes what onnxruntime.quantization.quantize_dynamic
// writes with its defaults (per-tensor symmetric int8 weights,
// DynamicQuantizeLinear + MatMulInteger + Cast + Mul for every MatMul by a
// constant 2-D weight; see package quantize):
//
//	go run -C tools ./ortquant [-mode dynamic] in.onnx out.onnx
//
// Both runtimes can then run the same exported int8 file (tools/modelbench
// does).
package main

import (
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/quantserve/quantserve/tools/ortquant/quantize"
)

func main() {
	mode := flag.String("mode", "dynamic", "quantization: dynamic (quantize_dynamic's defaults)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: ortquant [-mode dynamic] in.onnx out.onnx")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 2 {
		flag.Usage()
		os.Exit(2)
	}
	if *mode != "dynamic" {
		log.Fatalf("ortquant: mode %q: only dynamic is implemented", *mode)
	}
	data, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		log.Fatal(err)
	}
	out, n, err := quantize.Dynamic(data)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(flag.Arg(1), out, 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("ortquant: %d MatMuls quantized dynamically, %d -> %d bytes\n", n, len(data), len(out))
}
