// Command modelbench runs whole models on quantserve (int8 weights, the
// default, and float32) and on ONNX Runtime (float32) in one invocation,
// interleaved model by model and round by round so a noisy neighbour slows
// both alike, and prints items per second (images or sequences) and the
// ratio to ONNX Runtime. ONNX Runtime's int8 is the peer too: each model
// quantized as its users quantize it with onnxruntime.quantization
// (tools/ortquant), run by ONNX Runtime and, as the exported file it is,
// by quantserve, beside quantserve's own int8 of the float model. The
// encoder as quantize_dynamic writes it; the CNNs as quantize_static
// writes them (QDQ, INT8 weights per channel, UINT8 activations
// calibrated on the model's test_data_set inputs), which ONNX Runtime
// fuses into QLinearConv and quantserve loads with its default int8
// (the products on the file's INT8 weights). Before timing, both run the
// CNNs' QDQ files on the reference input and the top classes and the
// largest difference are printed:
//
//	resnet50     ResNet-50 (../shared/models/onnx_light_resnet50: the
//	             zoo architecture, weights replaced by constants), 224×224
//	paddleocr    the PaddleOCR text-direction classifier, 3×48×192
//	encoder      internal/onnxbuild's transformer encoder: 4 layers,
//	             hidden 256, 4 heads, 128 tokens
//	encoder14    (not run by default) the same encoder as exporters
//	             write it below opset 17, LayerNormalization and Gelu
//	             spelled out in elementary operators (opset 14)
//
// at batch 1 and 8, on -threads cores for both. ONNX Runtime runs through
// onnxruntime-node, installed once as tools/ortbench describes:
//
//	d=$(mktemp -d) && cp -r ../shared/peers/ort/. "$d"
//	(cd "$d" && ONNXRUNTIME_NODE_INSTALL_CUDA=skip npm install)
//	go run -C tools ./modelbench -ort "$d" [-threads 1] [-rounds 3]
//
// With a list of thread counts (-threads 1,2) every round runs every
// column at each count before the next round, and the rates of the last
// count over the first's follow the tables: how each side scales,
// measured side by side rather than in two invocations minutes apart on
// a machine whose speed drifts.
//
// With -profile it runs quantserve alone and prints where the time goes:
// per operator type, its share of a run, the share of that which gave the
// engine work that splits across cores (the rest cannot use more
// threads), and the serial fraction of the whole run:
//
//	go run -C tools ./modelbench -profile [-threads 1] [-models encoder] [-batches 1]
//
// With two thread counts or more (-threads 1,2) it profiles at each in
// turn, -rounds times, each count keeping its fastest round, and prints
// how each run scales from the first count to the last, and with -nodes
// the nodes that lose the most time against a perfect scaling.
//
// With -ort as well, it profiles ONNX Runtime after quantserve (its own
// session profiling, on the float model and on the file its quantization
// writes), and -nodes lists ONNX Runtime's slowest nodes beside
// quantserve's time for the node of the same name:
//
//	go run -C tools ./modelbench -profile -ort "$d" -nodes 40 [-exported]
//
// -kernels picks quantserve's kernel table as the server's --kernels does:
// a CPU with AMX can time the avx512vnni table of the Xeons without it.
//
// It is no part of the test suite.
package main

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
	"github.com/quantserve/quantserve/tools/ortquant/quantize"
)

//go:embed ort.js
var ortScript []byte

var (
	ortDir  = flag.String("ort", "", "directory holding ../shared/peers/ort with onnxruntime-node installed")
	shared  = flag.String("shared", "../../shared", "the shared data directory beside the checkout (for the CNNs; the default is relative to tools/)")
	threads = flag.String("threads", "1", "cores for both runtimes; a list (1,2) times every model at each count, round by round, and prints the ratios of the last count's rates to the first's")
	rounds  = flag.Int("rounds", 3, "interleaved rounds; each side keeps its best (with -profile and several -threads counts, each count keeps its fastest round)")
	minTime = flag.Duration("mintime", 2*time.Second, "time per measurement")
	only    = flag.String("models", "resnet50,paddleocr,encoder", "models to run")
	batches = flag.String("batches", "1,8", "batch sizes")
	profile = flag.Bool("profile", false, "instead of timing against ONNX Runtime, profile quantserve's runs: time by operator, the share that ran (or could run) on more than one core, and the serial fraction; with -ort, ONNX Runtime's too, by its session profiling")
	top     = flag.Int("top", 12, "with -profile, the operator types listed per run")
	whole   = flag.Bool("whole", false, "run batches whole, never row by row nor by parts (model.Options.WholeBatches): the batch's own speed")
	kernels = flag.String("kernels", "auto", "quantserve's kernel table, as the server's --kernels: auto or a table this CPU has (a Xeon with AMX can time its avx512vnni table, the one of Xeons without)")
)

// table returns the kernel table -kernels names.
func table() *dispatch.Table {
	t, err := dispatch.Select(*kernels)
	if err != nil {
		log.Fatal(err)
	}
	return t
}

// bench is one model with its input.
type bench struct {
	name, path string
	data       []byte
	input      string
	dtype      string // float32 or int64
	item       []int  // one item's shape (without the batch axis)
	idRange    int    // token ids are drawn from [0, idRange)
	// exported is the model as ONNX Runtime's quantization tool writes
	// it (nil: not compared in int8 with ONNX Runtime), and exportedPath
	// its file; static says it is quantize_static's QDQ form, ref the
	// reference input it is checked on.
	exported     []byte
	exportedPath string
	static       bool
	ref          *tensor.Tensor
	dir          string // the directory of a CNN's model.onnx and test_data_set_*
}

func main() {
	flag.Parse()
	if *ortDir == "" && !*profile {
		log.Fatal("modelbench: -ort DIR is required (see go doc -C tools ./modelbench), or -profile")
	}
	tmp, err := os.MkdirTemp("", "modelbench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	var benches []bench
	for _, name := range strings.Split(*only, ",") {
		b := bench{name: name, dtype: "float32"}
		switch name {
		case "resnet50":
			b.path, b.input, b.item = filepath.Join(*shared, "models/onnx_light_resnet50/model.onnx"), "gpu_0/data_0", []int{3, 224, 224}
		case "paddleocr":
			b.path, b.input, b.item = filepath.Join(*shared, "models/paddleocr_cls_mobile_v2/model.onnx"), "x", []int{3, 48, 192}
		case "encoder", "encoder14":
			enc := onnxbuild.DefaultEncoder
			enc.Spelled = name == "encoder14"
			b.path = filepath.Join(tmp, name+".onnx")
			if err := os.WriteFile(b.path, onnxbuild.Encoder(enc).Bytes(), 0o644); err != nil {
				log.Fatal(err)
			}
			b.input, b.dtype, b.item, b.idRange = "input_ids", "int64", []int{enc.Seq}, enc.Vocab
		default:
			log.Fatalf("modelbench: unknown model %q", name)
		}
		if !strings.HasPrefix(name, "encoder") {
			b.dir = filepath.Dir(b.path)
		}
		if b.data, err = os.ReadFile(b.path); err != nil {
			log.Fatal(err)
		}
		// The zoo's ResNet-50 fixes its batch at 1: make the batch
		// dimension of its input and output dynamic, for both runtimes.
		if b.data, err = dynamicBatch(b.data); err != nil {
			log.Fatal(err)
		}
		b.path = filepath.Join(tmp, name+".onnx")
		if err := os.WriteFile(b.path, b.data, 0o644); err != nil {
			log.Fatal(err)
		}
		if !*profile {
			if err := exportInt8(&b, tmp); err != nil {
				log.Fatal(err)
			}
		}
		benches = append(benches, b)
	}
	if *profile {
		profileAll(benches)
		return
	}
	compareAll(benches)
}

// exportInt8 writes b's model as ONNX Runtime's users quantize it: the
// encoder with quantize_dynamic, a CNN with quantize_static (QDQ, per
// channel) calibrated on its test_data_set inputs, the first of which is
// the reference input.
func exportInt8(b *bench, tmp string) error {
	var err error
	suffix := "-quantize_dynamic.onnx"
	if b.dir == "" {
		b.exported, _, err = quantize.Dynamic(b.data)
	} else {
		var inputs []map[string]*tensor.Tensor
		if inputs, err = quantize.TestDataInputs(b.data, b.dir); err != nil {
			return err
		}
		if len(inputs) == 0 {
			return fmt.Errorf("modelbench: %s: no test_data_set_* to calibrate on", b.dir)
		}
		var st *quantize.StaticStats
		if b.exported, st, err = quantize.Static(b.data, inputs); err != nil {
			return err
		}
		b.static, b.ref, suffix = true, inputs[0][b.input], "-quantize_static.onnx"
		fmt.Printf("# %s: quantize_static on %d calibration inputs: %d activations, %d weights, %d biases quantized, %d Relu/Clip removed\n",
			b.name, len(inputs), st.Activations, st.Weights, st.Biases, st.Removed)
	}
	if err != nil {
		return err
	}
	b.exportedPath = filepath.Join(tmp, b.name+suffix)
	return os.WriteFile(b.exportedPath, b.exported, 0o644)
}

// checkAgainstORT runs the exported model m on the reference input, and
// ONNX Runtime's session of the same file, and prints the top class of
// each item and the largest difference between the answers (the first
// output).
func checkAgainstORT(o *ortProc, b bench, session string, m *model.Model) {
	out, err := m.Run(context.Background(), map[string]*tensor.Tensor{b.input: b.ref}, nil)
	if err != nil {
		log.Fatal(err)
	}
	name := m.Outputs[0].Name
	got := out[name].Data.([]float32)
	res := o.call(map[string]any{"cmd": "infer", "name": session, "input": b.input, "shape": b.ref.Shape, "data": b.ref.Data, "output": name})
	raw := res["output"].([]any)
	if len(raw) != len(got) {
		log.Fatalf("modelbench: %s: ONNX Runtime answered %d values, quantserve %d", b.name, len(raw), len(got))
	}
	classes := out[name].Shape[len(out[name].Shape)-1]
	var maxDiff float64
	var qsTop, ortTop []int
	for row := 0; row < len(got)/classes; row++ {
		qb, ob := 0, 0
		for j := 0; j < classes; j++ {
			i := row*classes + j
			v := raw[i].(float64)
			maxDiff = max(maxDiff, math.Abs(float64(got[i])-v))
			if got[i] > got[row*classes+qb] {
				qb = j
			}
			if v > raw[row*classes+ob].(float64) {
				ob = j
			}
		}
		qsTop, ortTop = append(qsTop, qb), append(ortTop, ob)
	}
	fmt.Printf("# %s QDQ file on the reference input: top class quantserve %v, ONNX Runtime %v; max |difference| %.4f\n", b.name, qsTop, ortTop, maxDiff)
}

// dynamicBatch returns the model with dimension 0 of every graph input
// and output made symbolic ("N"), and Reshape targets that fix a batch
// of 1 made to copy the batch (0).
func dynamicBatch(data []byte) ([]byte, error) {
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
		t, err := model.TensorFromONNX(p)
		if err != nil {
			return nil, err
		}
		if v, ok := t.Data.([]int64); ok && len(v) > 1 && v[0] == 1 {
			v[0] = 0
			pb.Graph.Initializers[i] = model.TensorToONNX(p.Name, t)
		}
	}
	return onnxpb.Marshal(pb), nil
}

// runSize is the input elements of m's runs of in: the batch's, or a
// row's when m runs its batches row by row.
func runSize(m *model.Model, in *tensor.Tensor) int {
	if m != nil && in.Shape[0] > 1 {
		if c, ok := rowChoiceFor(m, in.Len()); ok && c.Rows {
			return in.Len() / in.Shape[0]
		}
	}
	return in.Len()
}

// coresWay says how m's runs of in take the engine's cores: one core a
// part when m runs its batches by parts, else as splitWay says for the
// runs it makes (runSize).
func coresWay(m *model.Model, in *tensor.Tensor) string {
	if m != nil && in.Shape[0] > 1 {
		if c, ok := rowChoiceFor(m, in.Len()); ok && c.Rows && c.Parts {
			return "by parts, one core each"
		}
	}
	return splitWay(m, runSize(m, in))
}

// splitWay says how m's runs of size input elements take the engine's
// cores, as the model chose them (model.SplitChoices).
func splitWay(m *model.Model, size int) string {
	if m == nil {
		return "-"
	}
	c, ok := choiceFor(m, size)
	switch {
	case !ok:
		return "split (untuned)"
	case !c.Decided:
		return "undecided"
	}
	return fmt.Sprintf("%s (split %.3f ms, one core %.3f, mixed %.3f with %d of %d steps on one core)",
		c.Way, ms(c.Split), ms(c.OneCore), ms(c.Mixed), c.OneCoreSteps, c.Steps)
}

// choiceFor returns what m chose for runs of size input elements
// (model.SplitChoices), and whether it has timed any.
func choiceFor(m *model.Model, size int) (model.SplitChoice, bool) {
	for _, c := range m.SplitChoices() {
		if c.Elements == size {
			return c, true
		}
	}
	return model.SplitChoice{}, false
}

// run times m on in for -mintime after one warm-up and returns runs per
// second. On an engine of several threads it first runs m untimed until
// m has chosen how runs of this size take the cores (model.SplitChoices;
// at most -mintime more), so that the timed runs are the steady state a
// server settles into rather than the tuner's trials; and it starts
// after a pause, which lets ONNX Runtime's pool, spinning a while after
// its last run, park its threads before quantserve's trials time either
// way.
func run(m *model.Model, name string, in *tensor.Tensor) float64 {
	inputs := map[string]*tensor.Tensor{name: in}
	time.Sleep(50 * time.Millisecond)
	for t0 := time.Now(); ; {
		if _, err := m.Run(context.Background(), inputs, nil); err != nil {
			log.Fatal(err)
		}
		if time.Since(t0) > *minTime || settled(m, in) {
			break
		}
	}
	n, t0 := 0, time.Now()
	for time.Since(t0) < *minTime {
		if _, err := m.Run(context.Background(), inputs, nil); err != nil {
			log.Fatal(err)
		}
		n++
	}
	return float64(n) / time.Since(t0).Seconds()
}

// settled reports whether m has chosen how its runs of in take the
// engine: whole or by rows (model.RowChoices), and across the cores
// (model.SplitChoices) for the runs that way makes, the batch's or its
// rows' (parts run on one core each: nothing more to choose).
func settled(m *model.Model, in *tensor.Tensor) bool {
	size := in.Len()
	if in.Shape[0] > 1 && m.RowChoices() != nil { // nil: batches always run whole
		rc, ok := rowChoiceFor(m, size)
		if !ok || !rc.Decided {
			return false
		}
		if rc.Rows && rc.Parts {
			return true
		}
		if rc.Rows {
			size /= in.Shape[0]
		}
	}
	c, tuned := choiceFor(m, size)
	return !tuned || c.Decided // untuned: one thread, nothing to choose
}

// rowChoiceFor returns what m chose for batches of size input elements
// (model.RowChoices), and whether it has run any.
func rowChoiceFor(m *model.Model, size int) (model.RowChoice, bool) {
	for _, c := range m.RowChoices() {
		if c.Elements == size {
			return c, true
		}
	}
	return model.RowChoice{}, false
}

// rowWay says whether m runs batches of in whole or by rows (row by row,
// or by parts on several threads), as the model chose (model.RowChoices).
func rowWay(m *model.Model, in *tensor.Tensor) string {
	if m == nil {
		return "-"
	}
	c, ok := rowChoiceFor(m, in.Len())
	switch {
	case *whole:
		return "whole (-whole)"
	case !ok:
		return "whole" // rows not tried: rows not independent, or on several threads weights or inputs too big for parts
	case !c.Decided:
		return "undecided"
	}
	by := "by rows"
	if c.Parts {
		by = "by parts"
	}
	if c.Rows {
		return fmt.Sprintf("%s (%.3f ms, whole %.3f)", by, ms(c.ByRows), ms(c.Batch))
	}
	return fmt.Sprintf("whole (%.3f ms, %s %.3f)", ms(c.Batch), by, ms(c.ByRows))
}

func makeInput(b bench, shape []int) *tensor.Tensor {
	r := rand.New(rand.NewPCG(1, 2))
	size := 1
	for _, d := range shape {
		size *= d
	}
	if b.dtype == "int64" {
		v := make([]int64, size)
		for i := range v {
			v[i] = r.Int64N(int64(b.idRange))
		}
		return tensor.From(shape, v)
	}
	v := make([]float32, size)
	for i := range v {
		v[i] = r.Float32()*2 - 1
	}
	return tensor.From(shape, v)
}

// batchSizes returns -batches' sizes.
func batchSizes() []int { return parseCounts("batches", *batches) }

// ortProc is the onnxruntime-node process.
type ortProc struct {
	in  io.Writer
	out *bufio.Scanner
}

// startORT writes this tool's ONNX Runtime script into -ort's directory
// and starts it there; stop removes the script.
func startORT() (o *ortProc, stop func()) {
	script := filepath.Join(*ortDir, "modelbench-ort.js")
	if err := os.WriteFile(script, ortScript, 0o644); err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command("node", "modelbench-ort.js")
	cmd.Dir, cmd.Stderr = *ortDir, os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		log.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		log.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	s := bufio.NewScanner(out)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	return &ortProc{in: in, out: s}, func() { os.Remove(script) }
}

func (o *ortProc) call(c map[string]any) map[string]any {
	b, _ := json.Marshal(c)
	if _, err := o.in.Write(append(b, '\n')); err != nil {
		log.Fatal(err)
	}
	if !o.out.Scan() {
		log.Fatal("modelbench: ONNX Runtime exited")
	}
	var res map[string]any
	if err := json.Unmarshal(o.out.Bytes(), &res); err != nil {
		log.Fatalf("modelbench: ONNX Runtime answered %q", o.out.Text())
	}
	if e, ok := res["error"]; ok {
		log.Fatalf("modelbench: ONNX Runtime: %v", e)
	}
	return res
}
