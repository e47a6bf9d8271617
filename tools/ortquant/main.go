// Command ortquant quantizes a float ONNX model the way ONNX Runtime's
// quantization tool does, without Python (see package quantize):
//
//	-mode dynamic  what onnxruntime.quantization.quantize_dynamic writes
//	               with its defaults: per-tensor symmetric int8 weights,
//	               DynamicQuantizeLinear + MatMulInteger + Cast + Mul for
//	               every MatMul by a constant 2-D weight
//	-mode static   what quantize_static writes with QuantFormat.QDQ and
//	               per_channel=True: INT8 weights per output channel,
//	               UINT8 activations behind QuantizeLinear ->
//	               DequantizeLinear pairs whose scales come from a MinMax
//	               calibration pass (the model run by quantserve on the
//	               inputs of the test_data_set_* directories beside the
//	               model, or of -calib)
//
//	go run -C tools ./ortquant [-mode dynamic|static] [-calib dir] in.onnx out.onnx
//
// Both runtimes can then run the same exported int8 file (tools/modelbench
// does).
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/quantserve/quantserve/tools/ortquant/quantize"
)

func main() {
	mode := flag.String("mode", "dynamic", "quantization: dynamic (quantize_dynamic's defaults) or static (quantize_static, QDQ, per channel)")
	calib := flag.String("calib", "", "with -mode static, the directory whose test_data_set_*/input_<i>.pb calibrate (default: the model's directory)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: ortquant [-mode dynamic|static] [-calib dir] in.onnx out.onnx")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 2 {
		flag.Usage()
		os.Exit(2)
	}
	data, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		log.Fatal(err)
	}
	var out []byte
	switch *mode {
	case "dynamic":
		var n int
		if out, n, err = quantize.Dynamic(data); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("ortquant: %d MatMuls quantized dynamically, %d -> %d bytes\n", n, len(data), len(out))
	case "static":
		dir := *calib
		if dir == "" {
			dir = filepath.Dir(flag.Arg(0))
		}
		inputs, err := quantize.TestDataInputs(data, dir)
		if err != nil {
			log.Fatal(err)
		}
		if len(inputs) == 0 {
			log.Fatalf("ortquant: no test_data_set_* in %s to calibrate on (-calib)", dir)
		}
		var st *quantize.StaticStats
		if out, st, err = quantize.Static(data, inputs); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("ortquant: calibrated on %d input sets; %d activations, %d weights, %d biases quantized, %d Relu/Clip removed, %d -> %d bytes\n",
			len(inputs), st.Activations, st.Weights, st.Biases, st.Removed, len(data), len(out))
	default:
		log.Fatalf("ortquant: mode %q: dynamic or static", *mode)
	}
	if err := os.WriteFile(flag.Arg(1), out, 0o644); err != nil {
		log.Fatal(err)
	}
}
