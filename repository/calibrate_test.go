package repository

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

const staticParam = `parameters { key: "calibration" value { string_value: "static" } } `

// samplePB returns x as a TensorProto file's bytes, named name ("" for
// none: the file's index names the input).
func samplePB(name string, x *tensor.Tensor) []byte {
	return onnxpb.MarshalTensor(model.TensorToONNX(name, x))
}

// rowsOf returns m seeded rows of 128 values spread by scale.
func rowsOf(seed uint64, m int, scale float64) *tensor.Tensor {
	r := rand.New(rand.NewPCG(seed, 9))
	v := make([]float32, m*128)
	for i := range v {
		v[i] = float32(r.NormFloat64() * scale)
	}
	return tensor.From([]int{m, 128}, v)
}

// openLogged opens the repository at dir with int8 per-channel models and
// returns its one entry and the log.
func openLogged(t *testing.T, dir string) (*Entry, string) {
	t.Helper()
	var logs bytes.Buffer
	r, err := Open(dir, Options{Log: slog.New(slog.NewTextHandler(&logs, nil)), Model: model.Options{Quantize: true, Scheme: quant.PerChannel}})
	if err != nil {
		t.Fatal(err)
	}
	return r.Entries()[0], logs.String()
}

// TestStaticCalibration loads a model of a real repository directory
// whose config asks for calibration static and whose version directory
// holds two sample sets (one input named by the tensor, one by the file's
// index): both int8 layers say they run with static activations, the load
// log says how the calibration went, and the version answers exactly as
// the model compiled with the range of the samples computed here
// (model.Static) does, clamping an input beyond that range, where the
// default per-row quantization answers otherwise.
func TestStaticCalibration(t *testing.T) {
	data := twoProducts()
	s0, s1 := rowsOf(1, 3, 1), rowsOf(2, 5, 2)
	dir := writeFiles(t, map[string][]byte{
		"m/config.pbtxt":                   []byte(staticParam),
		"m/1/model.onnx":                   data,
		"m/1/test_data_set_0/input_0.pb":   samplePB("x", s0),
		"m/1/test_data_set_1/input_0.pb":   samplePB("", s1),
		"m/1/test_data_set_1/output_0.pb":  samplePB("y1", s0), // outputs are not read
		"m/1/test_data_set_x/input_0.pb":   []byte("not a set: not read"),
		"m/1/test_data_set_01/input_0.pb":  []byte("not a set either"),
		"m/1/test_data_set_1/notes.txt":    []byte("ignored"),
		"m/1/test_data_set_1/input_a.pb":   []byte("ignored: no index"),
		"m/1/test_data_set_1/output_x.pb":  []byte("ignored"),
		"m/1/test_data_set_1/input_0.json": []byte("ignored"),
	})
	e, logs := openLogged(t, dir)
	if !e.Ready() {
		t.Fatalf("load failed: %v", e.Err)
	}
	v := e.Versions[0]
	for _, l := range v.Model.Layers {
		if l.Kernels != "int8 per_channel (static activations)" {
			t.Errorf("layer %s: kernels %q, want int8 per_channel (static activations)", l.Node, l.Kernels)
		}
	}
	for _, want := range []string{"calibration=static", "calibration_sets=2", "static_layers=2/2", "int8_layers=2/2"} {
		if !strings.Contains(logs, want) {
			t.Errorf("load log lacks %s: %s", want, logs)
		}
	}
	if strings.Contains(logs, "accepted but not applied") {
		t.Errorf("calibration reported as not applied: %s", logs)
	}

	// Both products read x: their range is the samples'. (The Relu after
	// each is fused into its node, whose outputs are y1 and y2.)
	lo, hi := float32(0), float32(0)
	for _, s := range []*tensor.Tensor{s0, s1} {
		for _, x := range s.Data.([]float32) {
			lo, hi = min(lo, x), max(hi, x)
		}
	}
	cal, err := model.Static(map[string]model.ActivationRange{"MatMul_a -> y1": {Lo: lo, Hi: hi}, "MatMul_c -> y2": {Lo: lo, Hi: hi}})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := model.LoadWith(data, model.Options{Quantize: true, Scheme: quant.PerChannel, Calibration: cal})
	if err != nil {
		t.Fatal(err)
	}
	if n := staticLayers(ref.Layers); n != 2 {
		t.Fatalf("the reference has %d layers with static activations, want 2: %+v", n, ref.Layers)
	}
	dyn, err := model.LoadWith(data, model.Options{Quantize: true, Scheme: quant.PerChannel})
	if err != nil {
		t.Fatal(err)
	}
	probe := rowsOf(3, 4, 3) // wider than the samples: values clamp
	in := map[string]*tensor.Tensor{"x": probe}
	got, err := v.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	per, err := dyn.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{"y1", "y2"} {
		g, w, p := got[out].Data.([]float32), want[out].Data.([]float32), per[out].Data.([]float32)
		if !slices.Equal(g, w) {
			t.Errorf("%s: the version's answer differs from the model calibrated on the samples' range [%v, %v]", out, lo, hi)
		}
		if slices.Equal(g, p) {
			t.Errorf("%s: static activations answer as the per-row quantization does", out)
		}
	}
}

// TestStaticCalibrationConvolutions calibrates the recognizer: its int8
// convolutions and its two Gemms (which share a node name, so each is
// calibrated as the node of its outputs) run with static activations (the
// LSTMs' input projections stay per row), and the answer keeps the best
// class of its float32 run on most steps.
func TestStaticCalibrationConvolutions(t *testing.T) {
	c := onnxbuild.DefaultRecognizer
	data := onnxbuild.Recognizer(c).Bytes()
	dir := writeFiles(t, map[string][]byte{
		"rec/config.pbtxt":                 []byte(staticParam),
		"rec/1/model.onnx":                 data,
		"rec/1/test_data_set_0/input_0.pb": samplePB("x", onnxbuild.RecognizerInput(c, 2, 1)),
	})
	e, logs := openLogged(t, dir)
	if !e.Ready() {
		t.Fatalf("load failed: %v", e.Err)
	}
	v := e.Versions[0]
	int8s, static, convs := 0, 0, 0
	for _, l := range v.Model.Layers {
		if l.Int8() && l.Op != "LSTM" {
			int8s++
		}
		if strings.HasSuffix(l.Kernels, "(static activations)") {
			static++
			if l.Op == "Conv" {
				convs++
			}
		}
	}
	if int8s == 0 || static != int8s || convs == 0 {
		t.Fatalf("%d int8 layers, %d static, %d of them convolutions: %+v", int8s, static, convs, v.Model.Layers)
	}
	if !strings.Contains(logs, "calibration_sets=1") {
		t.Errorf("load log: %s", logs)
	}
	f32, err := model.LoadWith(data, model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]*tensor.Tensor{"x": onnxbuild.RecognizerInput(c, 2, 7)}
	got, err := v.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := f32.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, w := got["log_probs"].Data.([]float32), want["log_probs"].Data.([]float32)
	same, rows := 0, len(w)/c.Classes
	for r := 0; r < len(w); r += c.Classes {
		if slices.Index(g[r:r+c.Classes], slices.Max(g[r:r+c.Classes])) == slices.Index(w[r:r+c.Classes], slices.Max(w[r:r+c.Classes])) {
			same++
		}
	}
	if same < rows*9/10 {
		t.Errorf("best class agrees with float32 on %d of %d steps", same, rows)
	}
}

// TestCalibrationParameter: calibration dynamic (or none) leaves the
// activations per row; a calibration that cannot run fails the load and
// says why.
func TestCalibrationParameter(t *testing.T) {
	data := twoProducts()
	sample := samplePB("x", rowsOf(1, 2, 1))
	param := func(v string) string { return pbParam("calibration", v) }
	for _, c := range []struct {
		name  string
		files map[string][]byte
		want  string // the first layer's kernels, or the load error
		ok    bool
	}{
		{"dynamic", map[string][]byte{"m/config.pbtxt": []byte(param("dynamic")), "m/1/test_data_set_0/input_0.pb": sample}, "int8 per_channel", true},
		{"not asked", map[string][]byte{"m/config.pbtxt": []byte(``), "m/1/test_data_set_0/input_0.pb": sample}, "int8 per_channel", true},
		{"yaml", map[string][]byte{"m/config.yaml": []byte("parameters: {calibration: static}\n"), "m/1/test_data_set_0/input_0.pb": sample}, "int8 per_channel (static activations)", true},
		{"unknown value", map[string][]byte{"m/config.pbtxt": []byte(param("minmax"))}, `parameters.calibration "minmax": static or dynamic`, false},
		{"no samples", map[string][]byte{"m/config.pbtxt": []byte(staticParam)}, "holds no test_data_set_N directories", false},
		{"empty set", map[string][]byte{"m/config.pbtxt": []byte(staticParam), "m/1/test_data_set_0/output_0.pb": sample}, "holds no input_K.pb files", false},
		{"float32 model", map[string][]byte{"m/config.pbtxt": []byte(staticParam + pbParam("quantize", "none")), "m/1/test_data_set_0/input_0.pb": sample}, "no int8 layers to calibrate", false},
		{"garbage sample", map[string][]byte{"m/config.pbtxt": []byte(staticParam), "m/1/test_data_set_0/input_0.pb": []byte{0xff, 0xff, 0xff}}, "input_0.pb", false},
		{"input beyond the model's", map[string][]byte{"m/config.pbtxt": []byte(staticParam), "m/1/test_data_set_0/input_3.pb": samplePB("", rowsOf(1, 2, 1))}, "the model has 1 inputs", false},
		{"wrong shape", map[string][]byte{"m/config.pbtxt": []byte(staticParam), "m/1/test_data_set_0/input_0.pb": samplePB("x", tensor.From([]int{2, 3}, make([]float32, 6)))}, "test_data_set_0", false},
		{"not finite", map[string][]byte{"m/config.pbtxt": []byte(staticParam), "m/1/test_data_set_0/input_0.pb": samplePB("x", nanRows())}, "test_data_set_0", false},
	} {
		c.files["m/1/model.onnx"] = data
		e, logs := openLogged(t, writeFiles(t, c.files))
		if !c.ok {
			if e.Ready() || e.Err == nil || !strings.Contains(e.Err.Error(), c.want) || !strings.Contains(e.Err.Error(), "calibration") && c.name != "unknown value" {
				t.Errorf("%s: err %v, want one saying %q", c.name, e.Err, c.want)
			}
			continue
		}
		if !e.Ready() {
			t.Errorf("%s: %v", c.name, e.Err)
			continue
		}
		if k := e.Versions[0].Model.Layers[0].Kernels; k != c.want {
			t.Errorf("%s: kernels %q, want %q", c.name, k, c.want)
		}
		if static := strings.Contains(logs, "calibration=static"); static != strings.Contains(c.want, "static") {
			t.Errorf("%s: log %s", c.name, logs)
		}
	}
}

func pbParam(k, v string) string {
	return `parameters { key: "` + k + `" value { string_value: "` + v + `" } } `
}

func nanRows() *tensor.Tensor {
	x := rowsOf(1, 2, 1)
	x.Data.([]float32)[5] = float32(math.NaN())
	return x
}
