package conv

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// convModes are the ways a convolution gets its weight: held by the
// kernels (float32 or int8) or as an input at run time.
var convModes = []string{"held float32", "held int8", "input weight"}

// compileMode compiles op with attrs for weight w and bias b (nil: none)
// in mode on e.
func compileMode(t *testing.T, op string, opset int64, attrs []*onnxpb.Attribute, w, b *tensor.Tensor, mode string, e *gemm.Engine) *compiled {
	t.Helper()
	s := spec{op: op, opset: opset, attrs: attrs, inputs: 2, engine: e, quantize: mode == "held int8", scheme: quant.PerChannel}
	if b != nil {
		s.inputs = 3
	}
	if mode != "input weight" {
		s.consts = []*tensor.Tensor{nil, w, b}
	}
	return mustCompile(t, s)
}

// TestConvMatchesDefinition runs every case on every kernel table, one and
// two threads, with the weight held by the kernels (float32 and int8) and
// with the weight as an input, against the definition.
func TestConvMatchesDefinition(t *testing.T) {
	for _, c := range convTestCases() {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(len(c.name)), 5))
			x := tensor.From(c.x, randomFloats(r, c.x))
			w := tensor.From(c.w, randomFloats(r, c.w))
			var b *tensor.Tensor
			var bv []float32
			if c.bias {
				bv = randomFloats(r, []int{c.w[0]})
				b = tensor.From([]int{c.w[0]}, bv)
			}
			group, strides, dil, pads := c.axes()
			ref := refConvolve(x.Data.([]float32), c.x, w.Data.([]float32), c.w, bv, group, strides, dil, pads, false)
			var int8Ref *tensor.Tensor
			for _, e := range engines() {
				for _, mode := range convModes {
					cp := compileMode(t, "Conv", 22, c.attrs(), w, b, mode, e)
					in := []*tensor.Tensor{x, w}
					if b != nil {
						in = append(in, b)
					}
					y, err := cp.run1(in...)
					if err != nil {
						t.Fatalf("%s %s: %v", engineName(e), mode, err)
					}
					int8 := false
					if mode != "input weight" {
						layers := cp.layers()
						if len(layers) != 1 {
							t.Fatalf("%s: layers %q", mode, layers)
						}
						int8 = strings.Contains(layers[0], " int8")
						if want := mode == "held int8" && !strings.Contains(layers[0], "("); int8 != want && !strings.Contains(layers[0], " depthwise") {
							t.Errorf("%s: layer %q", mode, layers[0])
						}
					}
					t.Run(engineName(e)+" "+mode, func(t *testing.T) { ref.check(t, y, int8) })
					if int8 { // every table, any number of threads: the same bits
						if int8Ref == nil {
							int8Ref = y
						} else if !slices.Equal(int8Ref.Data.([]float32), y.Data.([]float32)) {
							t.Errorf("%s: int8 results differ from the first table's", engineName(e))
						}
					}
				}
			}
		})
	}
}

// TestConvAutoPad checks Conv's auto_pad against the explicit pads the
// spec's formulas give: output ceil(in/stride), the odd padding last for
// SAME_UPPER and first for SAME_LOWER, none for VALID.
func TestConvAutoPad(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	xs, ws := []int{1, 2, 10, 9}, []int{3, 2, 4, 3}
	x := tensor.From(xs, randomFloats(r, xs))
	w := tensor.From(ws, randomFloats(r, ws))
	for _, c := range []struct {
		auto    string
		strides []int
		pads    []int // begins, ends
	}{
		// height: in 10, k 4, s 3 -> out 4, total (4-1)·3+4-10 = 3; width: in 9, k 3 -> out 3, total 3·... = 2·3+3-9 = 0
		{"SAME_UPPER", []int{3, 3}, []int{1, 0, 2, 0}},
		{"SAME_LOWER", []int{3, 3}, []int{2, 0, 1, 0}},
		// unit strides: total k-1 = 3 (height), 2 (width)
		{"SAME_UPPER", []int{1, 1}, []int{1, 1, 2, 1}},
		{"SAME_LOWER", []int{1, 1}, []int{2, 1, 1, 1}},
		{"VALID", []int{2, 1}, []int{0, 0, 0, 0}},
	} {
		attrs := []*onnxpb.Attribute{opstest.AttrString("auto_pad", c.auto), opstest.AttrInts("strides", ints64(c.strides)...)}
		y, err := compileMode(t, "Conv", 22, attrs, w, nil, "held float32", nil).run1(x, w)
		if err != nil {
			t.Fatal(err)
		}
		ref := refConvolve(x.Data.([]float32), xs, w.Data.([]float32), ws, nil, 1, c.strides, []int{1, 1}, c.pads, false)
		t.Run(fmt.Sprint(c.auto, c.strides), func(t *testing.T) { ref.check(t, y, false) })
	}
}

// TestConvLayers checks what each convolution with a constant weight
// tells the graph compiler: the layer it runs (K×N and the kernels, and
// why when they are not int8), and that it holds the weight (builds with
// the autodiff tag keep it fed, for weight gradients).
func TestConvLayers(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, c := range []struct {
		op       string
		w        []int
		attrs    []*onnxpb.Attribute
		quantize bool
		scheme   quant.Scheme
		layer    string
	}{
		{"Conv", []int{64, 16, 3, 3}, nil, true, quant.PerChannel, "Conv 144×64 int8 per_channel"},
		{"Conv", []int{64, 16, 3, 3}, nil, true, quant.PerBlock, "Conv 144×64 int8 per_block"},
		{"Conv", []int{32, 16, 3, 3}, nil, true, quant.PerChannel, "Conv 144×32 float32 (small weight)"},
		{"Conv", []int{32, 16, 3, 3}, nil, false, 0, "Conv 144×32 float32"},
		{"Conv", []int{64, 3, 7, 7}, nil, true, 0, "Conv 147×64 int8 per_tensor (per-image activations)"},
		{"Conv", []int{64, 3, 7, 7}, nil, true, quant.PerBlock, "Conv 147×64 float32 (input layer: 3 input channels)"},
		{"Conv", []int{32, 3, 7, 7}, nil, true, 0, "Conv 147×32 float32 (small weight)"},
		{"Conv", []int{8, 8, 1, 1}, nil, true, 0, "Conv 8×8 float32 (small weight)"},
		{"Conv", []int{16, 1, 3, 3}, []*onnxpb.Attribute{opstest.AttrInt("group", 16)}, true, 0, "Conv 9×1 depthwise float32, 16 groups"},
		{"Conv", []int{64, 32, 3, 3}, []*onnxpb.Attribute{opstest.AttrInt("group", 2)}, true, 0, "Conv 288×32 int8 per_tensor, 2 groups"},
		{"Conv", []int{4, 15000, 3, 3}, nil, true, 0, "Conv 135000×4 float32 (K = 135000 is beyond the int8 tiles)"},
		{"ConvTranspose", []int{32, 16, 4, 4}, nil, true, quant.PerChannel, "ConvTranspose 32×256 int8 per_channel"},
		{"ConvTranspose", []int{512, 2, 4, 4}, nil, true, quant.PerChannel, "ConvTranspose 512×32 int8 per_channel"},
	} {
		w := tensor.From(c.w, randomFloats(r, c.w))
		cp := mustCompile(t, spec{op: c.op, attrs: c.attrs, inputs: 2, consts: []*tensor.Tensor{nil, w}, quantize: c.quantize, scheme: c.scheme})
		if got := cp.layers(); len(got) != 1 || got[0] != c.layer {
			t.Errorf("%s %v: layers %q, want %q", c.op, c.w, got, c.layer)
		}
		want := []int{1}
		if dispatch.AutodiffBuilt {
			want = nil
		}
		if !slices.Equal(cp.host.held, want) {
			t.Errorf("%s %v: holds inputs %v, want %v", c.op, c.w, cp.host.held, want)
		}
	}
	// A weight the kernels do not hold (FP64, empty) reports nothing and
	// is fed at every run.
	for _, w := range []*tensor.Tensor{tensor.From([]int{2, 3, 3, 3}, make([]float64, 54)), tensor.From([]int{0, 3, 3, 3}, []float32{})} {
		cp := mustCompile(t, spec{op: "Conv", inputs: 2, consts: []*tensor.Tensor{nil, w}})
		if len(cp.layers()) != 0 || len(cp.host.held) != 0 {
			t.Errorf("weight %v%v: layers %q, holds %v", w.DType, w.Shape, cp.layers(), cp.host.held)
		}
	}
}

// TestConvFloatTypes runs FP16, BF16 and FP64 convolutions against the
// definition.
func TestConvFloatTypes(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	xs := []int{2, 4, 7, 6}
	xv, bv := randomFloats(r, xs), randomFloats(r, []int{6})
	attrs := []*onnxpb.Attribute{opstest.AttrInt("group", 2), opstest.AttrInts("pads", 1, 0, 1, 2), opstest.AttrInts("strides", 2, 1)}
	for _, dt := range []tensor.DataType{tensor.Float16, tensor.BFloat16, tensor.Float64} {
		for _, op := range []string{"Conv", "ConvTranspose"} {
			ws := []int{6, 2, 3, 3}
			if op == "ConvTranspose" {
				ws = []int{4, 3, 3, 3}
			}
			wv := randomFloats(r, ws)
			for _, mode := range []string{"input weight", "held float32"} {
				x, w, b := tensor.From(xs, xv), tensor.From(ws, wv), tensor.From([]int{6}, bv)
				xc, wc, bc := castTo(t, x, dt), castTo(t, w, dt), castTo(t, b, dt)
				// the reference sees the rounded values
				xr, wr, br := castTo(t, xc, tensor.Float32), castTo(t, wc, tensor.Float32), castTo(t, bc, tensor.Float32)
				s := spec{op: op, attrs: attrs, inputs: 3, quantize: true}
				if mode != "input weight" {
					s.consts = []*tensor.Tensor{nil, wc, bc}
				}
				y, err := mustCompile(t, s).run1(xc, wc, bc)
				if err != nil {
					t.Fatalf("%v %s: %v", dt, op, err)
				}
				if y.DType != dt {
					t.Fatalf("%v %s: output %v", dt, op, y.DType)
				}
				var ref refResult
				if op == "Conv" {
					ref = refConvolve(xr.Data.([]float32), xs, wr.Data.([]float32), ws, br.Data.([]float32), 2, []int{2, 1}, []int{1, 1}, []int{1, 0, 1, 2}, false)
				} else {
					// out: 2·6+3−1−1 = 13 rows, 1·5+3−0−2 = 6 columns
					ref = refConvTranspose(xr.Data.([]float32), xs, wr.Data.([]float32), ws, br.Data.([]float32), 2, []int{2, 1}, []int{1, 1}, []int{1, 0}, []int{13, 6})
				}
				g := y.Float64s()
				if !ops.EqualShape(y.Shape, ref.shape) {
					t.Fatalf("%v %s: shape %v, want %v", dt, op, y.Shape, ref.shape)
				}
				rel := map[tensor.DataType]float64{tensor.Float16: 1e-3, tensor.BFloat16: 8e-3, tensor.Float64: 1e-6}[dt]
				for i, want := range ref.y {
					if d := math.Abs(g[i] - want); d > rel*(ref.mag[i]+math.Abs(want))+1e-6 {
						t.Fatalf("%v %s %s: y[%d] = %v, want %v", dt, op, mode, i, g[i], want)
					}
				}
			}
		}
	}
}

// TestConvBadInputs sends operands that cannot flow through each
// convolution: each is an input error (HTTP 400), never a panic.
func TestConvBadInputs(t *testing.T) {
	f32 := func(shape ...int) *tensor.Tensor { return tensor.From(shape, make([]float32, ops.ProdInts(shape))) }
	nan := f32(1, 16, 4, 4)
	nan.Data.([]float32)[5] = float32(math.NaN())
	w16 := tensor.From([]int{64, 16, 3, 3}, randomFloats(rand.New(rand.NewPCG(1, 1)), []int{64, 16, 3, 3}))
	attr := func(a ...*onnxpb.Attribute) []*onnxpb.Attribute { return a }
	for _, c := range []struct {
		name   string
		op     string
		attrs  []*onnxpb.Attribute
		held   bool // the weight is a constant
		quant  bool
		x, w   *tensor.Tensor
		b      *tensor.Tensor
		inputs int
	}{
		{"channels", "Conv", nil, false, false, f32(1, 4, 5, 5), f32(2, 3, 3, 3), nil, 2},
		{"channels held", "Conv", nil, true, false, f32(1, 4, 5, 5), f32(2, 3, 3, 3), nil, 2},
		{"rank", "Conv", nil, false, false, f32(1, 3, 5), f32(2, 3, 3, 3), nil, 2},
		{"weight rank", "Conv", nil, false, false, f32(1, 3, 5), f32(2, 3), nil, 2},
		{"kernel beyond the input", "Conv", nil, false, false, f32(1, 3, 2, 2), f32(2, 3, 3, 3), nil, 2},
		{"bias length", "Conv", nil, false, false, f32(1, 3, 5, 5), f32(2, 3, 3, 3), f32(3), 3},
		{"groups", "Conv", attr(opstest.AttrInt("group", 2)), false, false, f32(1, 4, 5, 5), f32(3, 2, 3, 3), nil, 2},
		{"strides length", "Conv", attr(opstest.AttrInts("strides", 1, 1, 1)), false, false, f32(1, 3, 5, 5), f32(2, 3, 3, 3), nil, 2},
		{"kernel_shape", "Conv", attr(opstest.AttrInts("kernel_shape", 2, 2)), false, false, f32(1, 3, 5, 5), f32(2, 3, 3, 3), nil, 2},
		{"huge output", "Conv", attr(opstest.AttrInts("pads", 1<<31, 1<<31, 1<<31, 1<<31)), false, false, f32(1, 3, 5, 5), f32(2, 3, 1, 1), nil, 2},
		{"NaN on the int8 tiles", "Conv", nil, true, true, nan, w16, nil, 2},
		{"type", "Conv", nil, false, false, f32(1, 3, 5, 5), tensor.From([]int{2, 3, 3, 3}, make([]float64, 54)), nil, 2},
		{"no weight", "Conv", nil, false, false, f32(1, 3, 5, 5), nil, nil, 2},
		{"transpose channels", "ConvTranspose", nil, false, false, f32(1, 3, 5, 5), f32(2, 3, 3, 3), nil, 2},
		{"transpose output_shape", "ConvTranspose", attr(opstest.AttrInts("output_shape", 4, 4, 4)), false, false, f32(1, 3, 5, 5), f32(3, 2, 3, 3), nil, 2},
		{"transpose negative output", "ConvTranspose", attr(opstest.AttrInts("pads", 9, 9, 9, 9)), false, false, f32(1, 3, 5, 5), f32(3, 2, 3, 3), nil, 2},
		{"transpose bias", "ConvTranspose", nil, false, false, f32(1, 3, 5, 5), f32(3, 2, 3, 3), f32(3), 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := spec{op: c.op, attrs: c.attrs, inputs: c.inputs, quantize: c.quant}
			if c.held {
				s.consts = []*tensor.Tensor{nil, c.w}
			}
			in := []*tensor.Tensor{c.x, c.w}
			if c.b != nil {
				in = append(in, c.b)
			}
			_, err := mustCompile(t, s).run(in...)
			if !errors.Is(err, ops.ErrInput) {
				t.Fatalf("error %v, want an input error", err)
			}
		})
	}
}

// TestConvBadAttributes builds malformed convolutions: refused at load.
func TestConvBadAttributes(t *testing.T) {
	w := tensor.From([]int{2, 3, 3, 3}, make([]float32, 54))
	for _, attrs := range [][]*onnxpb.Attribute{
		{opstest.AttrString("auto_pad", "SAME")},
		{opstest.AttrInts("strides", 0, 1)},
		{opstest.AttrInts("dilations", -1, 1)},
		{opstest.AttrInts("pads", -1, 0, 0, 0)},
		{opstest.AttrInts("pads", 1, 1, 1)},
		{opstest.AttrInt("group", 0)},
		{opstest.AttrInts("kernel_shape", 3, 2)}, // does not fit the held weight
		{opstest.AttrInt("not_an_attribute", 1)},
	} {
		for _, op := range []string{"Conv", "ConvTranspose"} {
			if _, err := compile(spec{op: op, attrs: attrs, inputs: 2, consts: []*tensor.Tensor{nil, w}}); err == nil {
				t.Errorf("%s %s: built", op, attrs[0].Name)
			}
		}
	}
	for _, attrs := range [][]*onnxpb.Attribute{
		{opstest.AttrInts("output_padding", -1, 0)},
		{opstest.AttrInts("output_shape", 1<<33, 4)},
	} {
		if _, err := compile(spec{op: "ConvTranspose", attrs: attrs, inputs: 2}); err == nil {
			t.Errorf("ConvTranspose %s: built", attrs[0].Name)
		}
	}
}

// TestConvEmpty runs convolutions with empty batches and channel sets.
func TestConvEmpty(t *testing.T) {
	f32 := func(shape ...int) *tensor.Tensor { return tensor.From(shape, make([]float32, ops.ProdInts(shape))) }
	for _, c := range []struct {
		op      string
		x, w    *tensor.Tensor
		want    []int
		quant   bool
		attrs   []*onnxpb.Attribute
		biasLen int
	}{
		{"Conv", f32(0, 3, 5, 5), f32(4, 3, 3, 3), []int{0, 4, 3, 3}, false, nil, 4},
		{"Conv", f32(2, 3, 5, 5), f32(0, 3, 3, 3), []int{2, 0, 3, 3}, false, nil, 0},
		{"Conv", f32(2, 0, 5, 5), f32(4, 0, 3, 3), []int{2, 4, 3, 3}, false, nil, 4},
		{"Conv", f32(0, 16, 5, 5), f32(16, 1, 3, 3), []int{0, 16, 3, 3}, true, []*onnxpb.Attribute{opstest.AttrInt("group", 16)}, 16},
		{"Conv", f32(1, 3, 0, 5), f32(4, 3, 1, 1), []int{1, 4, 0, 5}, false, nil, 4},
		{"Conv", f32(1, 3, 0, 5), f32(4, 3, 3, 3), []int{1, 4, 0, 5}, false, []*onnxpb.Attribute{opstest.AttrString("auto_pad", "SAME_UPPER")}, 4},
		{"ConvTranspose", f32(0, 3, 5, 5), f32(3, 4, 3, 3), []int{0, 4, 7, 7}, false, nil, 4},
		{"ConvTranspose", f32(2, 3, 5, 5), f32(3, 0, 3, 3), []int{2, 0, 7, 7}, false, nil, 0},
	} {
		for _, held := range []bool{false, true} {
			b := f32(c.biasLen)
			for i := range b.Data.([]float32) {
				b.Data.([]float32)[i] = 1.5
			}
			s := spec{op: c.op, attrs: c.attrs, inputs: 3, quantize: c.quant}
			if held {
				s.consts = []*tensor.Tensor{nil, c.w, b}
			}
			y, err := mustCompile(t, s).run1(c.x, c.w, b)
			if err != nil {
				t.Fatalf("%s %v × %v held=%v: %v", c.op, c.x.Shape, c.w.Shape, held, err)
			}
			if !ops.EqualShape(y.Shape, c.want) || y.Len() != ops.ProdInts(c.want) {
				t.Fatalf("%s %v × %v: output %v, want %v", c.op, c.x.Shape, c.w.Shape, y.Shape, c.want)
			}
			for _, v := range y.Data.([]float32) {
				if v != 1.5 { // no input channels: the bias alone
					t.Fatalf("%s %v × %v: output value %v, want the bias", c.op, c.x.Shape, c.w.Shape, v)
				}
			}
		}
	}
}

// TestConvMemoryIsBoundedByTiles runs a 3×3 32→32 convolution over a
// 96×96 image, whose whole im2col matrix is 9 images' size, and checks
// that a run allocates at most 3 images' worth (the output and the
// channels-last copy among them).
func TestConvMemoryIsBoundedByTiles(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers at random")
	}
	r := rand.New(rand.NewPCG(11, 11))
	xs, ws := []int{1, 32, 96, 96}, []int{32, 32, 3, 3}
	x := tensor.From(xs, randomFloats(r, xs))
	w := tensor.From(ws, randomFloats(r, ws))
	im2col := 96 * 96 * 32 * 9 * 4
	for _, q := range []bool{true, false} {
		cp := mustCompile(t, spec{op: "Conv", attrs: []*onnxpb.Attribute{opstest.AttrInts("pads", 1, 1, 1, 1)}, inputs: 2,
			consts: []*tensor.Tensor{nil, w}, quantize: q, scheme: quant.PerChannel})
		if _, err := cp.run(x, w); err != nil { // warm the buffer pools
			t.Fatal(err)
		}
		// The least of three runs: a collection between the warm-up and a
		// run may empty the pools, and that run allocates its buffers anew.
		alloc := math.MaxInt
		for range 3 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			if _, err := cp.run(x, w); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			alloc = min(alloc, int(after.TotalAlloc-before.TotalAlloc))
		}
		if limit := 3 * 4 * x.Len(); alloc > limit {
			t.Errorf("%s: a run allocated %d bytes, more than 3 images (%d); the im2col matrix is %d", cp.layers()[0], alloc, limit, im2col)
		}
		t.Logf("%s: %.2f MB allocated per run (image %.2f MB, im2col %.2f MB)", cp.layers()[0], float64(alloc)/1e6, float64(4*x.Len())/1e6, float64(im2col)/1e6)
	}
}

// TestConvPlanarWidths runs an image's first convolution (3 input
// channels, 8 outputs: plane by plane) on images of two widths in turn,
// and on both at once from several goroutines, against the definition:
// the weights it spreads along a row of one width are never read for
// the other.
func TestConvPlanarWidths(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	c := convCase{name: "planar", x: []int{1, 3, 12, 40}, w: []int{8, 3, 3, 3}, bias: true, strides: []int{2, 2}, pads: []int{1, 1, 1, 1}}
	w := tensor.From(c.w, randomFloats(r, c.w))
	bv := randomFloats(r, []int{8})
	b := tensor.From([]int{8}, bv)
	group, strides, dil, pads := c.axes()
	if !planar(c.w, 1) {
		t.Fatalf("weight %v does not run plane by plane", c.w)
	}
	cp := compileMode(t, "Conv", 22, c.attrs(), w, b, "held float32", gemm.Default())
	var xs []*tensor.Tensor
	var refs []refResult
	for _, width := range []int{40, 23} {
		shape := []int{2, 3, 12, width}
		x := tensor.From(shape, randomFloats(r, shape))
		xs = append(xs, x)
		refs = append(refs, refConvolve(x.Data.([]float32), shape, w.Data.([]float32), c.w, bv, group, strides, dil, pads, false))
	}
	for round := range 6 {
		i := round % 2
		y, err := cp.run1(xs[i], w, b)
		if err != nil {
			t.Fatal(err)
		}
		refs[i].check(t, y, false)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	ys := make([]*tensor.Tensor, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ys[g], errs[g] = cp.run1(xs[g%2], w, b)
		}()
	}
	wg.Wait()
	for g := range 8 {
		if errs[g] != nil {
			t.Fatal(errs[g])
		}
		refs[g%2].check(t, ys[g], false)
	}
}
