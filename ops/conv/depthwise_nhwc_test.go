package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// dwCase is a depthwise convolution: channels, batch, the input's
// spatial shape (one axis: 1-D), kernel, strides, dilations and pads
// (ONNX's order: every axis's begin, then every axis's end).
type dwCase struct {
	c, batch                  int
	in, kernel, strides, dils []int
	pads                      []int
}

func (d dwCase) String() string {
	return fmt.Sprintf("c%d_n%d_in%v_k%v_s%v_d%v_p%v", d.c, d.batch, d.in, d.kernel, d.strides, d.dils, d.pads)
}

func (d dwCase) attrs() []*onnxpb.Attribute {
	return []*onnxpb.Attribute{opstest.AttrInt("group", int64(d.c)), opstest.AttrInts("kernel_shape", ints64(d.kernel)...),
		opstest.AttrInts("strides", ints64(d.strides)...), opstest.AttrInts("dilations", ints64(d.dils)...), opstest.AttrInts("pads", ints64(d.pads)...)}
}

// outShape is the NCHW output shape.
func (d dwCase) outShape() []int {
	out := []int{d.batch, d.c}
	for i, n := range d.in {
		k := (d.kernel[i]-1)*d.dils[i] + 1
		out = append(out, (n+d.pads[i]+d.pads[len(d.in)+i]-k)/d.strides[i]+1)
	}
	return out
}

func dwCases() []dwCase {
	return []dwCase{
		{c: 8, batch: 1, in: []int{6, 10}, kernel: []int{3, 3}, strides: []int{1, 1}, dils: []int{1, 1}, pads: []int{1, 1, 1, 1}},
		{c: 16, batch: 2, in: []int{7, 9}, kernel: []int{3, 3}, strides: []int{2, 2}, dils: []int{1, 1}, pads: []int{1, 1, 1, 1}},
		{c: 12, batch: 1, in: []int{5, 11}, kernel: []int{3, 3}, strides: []int{1, 1}, dils: []int{2, 2}, pads: []int{2, 2, 2, 2}},
		{c: 20, batch: 3, in: []int{8, 8}, kernel: []int{5, 5}, strides: []int{2, 2}, dils: []int{1, 1}, pads: []int{1, 2, 2, 1}},
		{c: 9, batch: 2, in: []int{4, 13}, kernel: []int{3, 1}, strides: []int{1, 2}, dils: []int{1, 1}, pads: []int{1, 0, 1, 0}},
		{c: 40, batch: 1, in: []int{6, 7}, kernel: []int{3, 3}, strides: []int{1, 1}, dils: []int{1, 1}, pads: []int{0, 0, 0, 0}},
		{c: 24, batch: 2, in: []int{9, 9}, kernel: []int{3, 3}, strides: []int{2, 2}, dils: []int{1, 1}, pads: []int{0, 0, 0, 0}},
		{c: 16, batch: 2, in: []int{20}, kernel: []int{3}, strides: []int{2}, dils: []int{1}, pads: []int{1, 1}},
		{c: 5, batch: 1, in: []int{17}, kernel: []int{5}, strides: []int{1}, dils: []int{2}, pads: []int{3, 4}},
		{c: 33, batch: 1, in: []int{3, 12}, kernel: []int{1, 1}, strides: []int{1, 1}, dils: []int{1, 1}, pads: []int{0, 0, 0, 0}},
		// Odd multiples of 8 channels, which the AVX-512 tables end on a
		// half vector (and rounded up to 16 before), read channels-last
		// or NCHW, strided. (20 and 33 above are rounded up to 24 and 40.)
		{c: 88, batch: 2, in: []int{3, 20}, kernel: []int{5, 5}, strides: []int{1, 1}, dils: []int{1, 1}, pads: []int{2, 2, 2, 2}},
		{c: 56, batch: 1, in: []int{7, 9}, kernel: []int{3, 3}, strides: []int{2, 1}, dils: []int{1, 1}, pads: []int{1, 0, 2, 1}},
		{c: 200, batch: 1, in: []int{2, 19}, kernel: []int{5, 5}, strides: []int{1, 1}, dils: []int{1, 1}, pads: []int{2, 2, 2, 2}},
		// Rows of taps above or below the image are not run: windows that
		// start between two dilated rows, pads of a whole kernel (output
		// rows that read no input row: the bias alone), a few rows under
		// a 5×5 kernel, strided.
		{c: 8, batch: 1, in: []int{7, 8}, kernel: []int{3, 3}, strides: []int{1, 1}, dils: []int{2, 2}, pads: []int{1, 1, 3, 3}},
		{c: 16, batch: 2, in: []int{2, 9}, kernel: []int{3, 3}, strides: []int{1, 1}, dils: []int{1, 1}, pads: []int{3, 1, 4, 1}},
		{c: 40, batch: 2, in: []int{3, 30}, kernel: []int{5, 5}, strides: []int{2, 1}, dils: []int{1, 1}, pads: []int{2, 2, 2, 2}},
		// Rows of the padded copy in pieces (wide rows, few of them), a
		// piece of padding alone among them.
		{c: 72, batch: 1, in: []int{2, 170}, kernel: []int{5, 5}, strides: []int{1, 1}, dils: []int{1, 1}, pads: []int{2, 2, 2, 2}},
		{c: 24, batch: 1, in: []int{2, 100}, kernel: []int{1, 3}, strides: []int{1, 1}, dils: []int{1, 1}, pads: []int{0, 300, 0, 300}},
		// Batches of two images a core and more: split by images.
		{c: 24, batch: 4, in: []int{5, 9}, kernel: []int{3, 3}, strides: []int{2, 1}, dils: []int{1, 1}, pads: []int{1, 1, 1, 1}},
		{c: 56, batch: 5, in: []int{2, 11}, kernel: []int{5, 5}, strides: []int{1, 1}, dils: []int{1, 1}, pads: []int{2, 2, 2, 2}},
		{c: 16, batch: 4, in: []int{4, 6}, kernel: []int{3, 3}, strides: []int{1, 1}, dils: []int{1, 1}, pads: []int{0, 0, 0, 0}},
		{c: 32, batch: 4, in: []int{3, 64}, kernel: []int{3, 3}, strides: []int{1, 1}, dils: []int{1, 1}, pads: []int{1, 1, 1, 1}}, // strips inside the columns
		// The strip inside the columns read where x is, strided and dilated
		// both ways, its first and last output rows' outer rows of taps
		// skipped: by images, and (two images) by strips.
		{c: 32, batch: 4, in: []int{5, 70}, kernel: []int{3, 3}, strides: []int{2, 2}, dils: []int{2, 2}, pads: []int{2, 2, 2, 2}},
		{c: 40, batch: 2, in: []int{5, 70}, kernel: []int{3, 3}, strides: []int{2, 2}, dils: []int{2, 2}, pads: []int{2, 2, 2, 2}},
		// One image read where it is, by blocks of its rows (no copy of
		// it whole): each block's side pixels read their taps' windows,
		// padded, asymmetric and dilated; PaddleOCR's first depthwise
		// layer (8 channels, strides 2 and 1) in two blocks a row.
		{c: 16, batch: 1, in: []int{5, 40}, kernel: []int{3, 5}, strides: []int{2, 1}, dils: []int{1, 2}, pads: []int{1, 3, 1, 2}},
		{c: 8, batch: 1, in: []int{6, 70}, kernel: []int{3, 3}, strides: []int{2, 1}, dils: []int{1, 1}, pads: []int{1, 1, 1, 1}},
		{c: 8, batch: 1, in: []int{4, 3}, kernel: []int{3, 5}, strides: []int{1, 2}, dils: []int{1, 1}, pads: []int{1, 4, 1, 3}}, // no pixel inside
		// Images of more than padBudget values read where they are, two a
		// core and more: by images, each by blocks of rows.
		{c: 24, batch: 4, in: []int{60, 48}, kernel: []int{3, 3}, strides: []int{2, 1}, dils: []int{1, 1}, pads: []int{1, 1, 1, 1}},
		// Padded images over padBudget: one image at a time.
		{c: 64, batch: 3, in: []int{24, 40}, kernel: []int{3, 3}, strides: []int{1, 1}, dils: []int{1, 1}, pads: []int{1, 1, 1, 1}},
	}
}

// dwClose fails unless got is within float32 rounding of want: the two
// paths add the same terms in the same order, fused or not as the table's
// kernels do.
func dwClose(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(g) != math.IsNaN(w) || !(math.Abs(g-w) <= tol*(1+math.Abs(w))) && !math.IsNaN(w) {
			t.Fatalf("%s: [%d] = %v, NCHW path %v", what, i, got[i], want[i])
		}
	}
}

// dirtyScratch leaves NaNs in recycled scratch buffers of every size up
// to 128 Ki values (a padBudget and more), which a convolution's next scratch most likely is
// (sync.Pool keeps the last buffer freed on a core for the next Get
// there): a padded copy whose padding is not written then shows.
func dirtyScratch() {
	var c *ops.Context
	for n := 1 << 8; n <= 1<<17; n <<= 1 {
		b := c.Scratch(n)
		for i := range b {
			b[i] = float32(math.NaN())
		}
		c.Free(b)
	}
}

// TestDepthwiseNHWC runs depthwise FusedConvs channels-last (input,
// output or both, the residual in the output's layout or NCHW) against
// the same node in NCHW on the same inputs: strides 1 and 2, dilations,
// symmetric, asymmetric and no padding, 1-D, batches, with and without
// bias, residual and activation (a QDQ output stage among them), on the
// reference table and the best this CPU runs.
func TestDepthwiseNHWC(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 7))
	acts := []struct {
		name string
		p    []float32
	}{{"", nil}, {"Relu", nil}, {"HardSwish", nil}, {"LeakyRelu", []float32{0.1}}, {"Clip", []float32{-0.5, 0.5}}}
	tables := []*dispatch.Table{dispatch.Reference()}
	if dispatch.Default() != dispatch.Reference() {
		tables = append(tables, dispatch.Default())
	}
	for ci, d := range dwCases() {
		xs := append([]int{d.batch, d.c}, d.in...)
		ws := append([]int{d.c, 1}, d.kernel...)
		ys := d.outShape()
		x := tensor.From(xs, randomFloats(r, xs))
		w := tensor.From(ws, randomFloats(r, ws))
		bias := tensor.From([]int{d.c}, randomFloats(r, []int{d.c}))
		res := tensor.From(ys, randomFloats(r, ys))
		for vi, v := range []struct {
			bias, res, qdq bool
		}{{true, false, false}, {false, false, false}, {true, true, false}, {true, true, true}, {true, false, true}} {
			act := acts[(ci+vi)%len(acts)]
			attrs := d.attrs()
			if act.name != "" {
				attrs = append(attrs, opstest.AttrString("activation", act.name))
				if act.p != nil {
					attrs = append(attrs, opstest.AttrFloats("activation_params", act.p...))
				}
			}
			tol := 1e-5
			if v.qdq {
				attrs = append(attrs, qdqAttrs([]float32{0.05, 0.05}, []int64{128, 128}, "uint8")...)
				tol = 0.051 // a value on a step's edge may land on either side
			}
			in := make([]*tensor.Tensor, FusedInputs)
			in[FusedX], in[FusedW] = x, w
			consts := make([]*tensor.Tensor, FusedInputs)
			consts[FusedW] = w
			absent := []int{FusedBNScale, FusedBNBias, FusedBNMean, FusedBNVar, FusedXScale}
			if v.bias {
				in[FusedB], consts[FusedB] = bias, bias
			} else {
				absent = append(absent, FusedB)
			}
			if v.res {
				in[FusedResidual] = res
			} else {
				absent = append(absent, FusedResidual)
			}
			for _, tb := range tables {
				e := gemm.New(tb, 1)
				node := func(extra ...*onnxpb.Attribute) *compiled {
					return mustCompile(t, spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, inputs: FusedInputs,
						consts: consts, absent: absent, engine: e, attrs: append(slices.Clone(attrs), extra...)})
				}
				want, err := node().run1(in...)
				if err != nil {
					t.Fatalf("%v NCHW: %v", d, err)
				}
				wantNHWC := toNHWC(want).Data.([]float32)
				for _, lay := range []struct {
					in, out, res bool
				}{{true, false, false}, {false, true, true}, {true, true, true}, {true, true, false}, {false, true, false}} {
					if lay.res && !v.res {
						continue
					}
					var extra []*onnxpb.Attribute
					lin := slices.Clone(in)
					if lay.in {
						extra = append(extra, opstest.AttrInt("nhwc_in", 1))
						lin[FusedX] = toNHWC(x)
					}
					if lay.out {
						extra = append(extra, opstest.AttrInt("nhwc_out", 1))
					}
					if lay.res {
						extra = append(extra, opstest.AttrInt("nhwc_residual", 1))
						lin[FusedResidual] = toNHWC(res)
					}
					what := fmt.Sprintf("%v %s bias=%v res=%v qdq=%v %s in=%v out=%v res=%v", d, act.name, v.bias, v.res, v.qdq, tb, lay.in, lay.out, lay.res)
					for run := 0; run < 2; run++ { // the second on the kept geometry and plan
						dirtyScratch()
						got, err := node(extra...).run1(lin...)
						if err != nil {
							t.Fatalf("%s: %v", what, err)
						}
						wv, ws := want.Data.([]float32), want.Shape
						if lay.out {
							wv, ws = wantNHWC, nhwcShape(want.Shape)
						}
						if !slices.Equal(got.Shape, ws) {
							t.Fatalf("%s: shape %v, want %v", what, got.Shape, ws)
						}
						dwClose(t, what, got.Data.([]float32), wv, tol)
					}
				}
				e.Close()
			}
		}
	}
}

// TestDepthwiseNHWCEveryTable: channels-last depthwise convolutions give
// the same bits on every vector table this CPU runs, whether its vectors
// are 16 lanes (multiples of 16), end on 8 (odd multiples of 8 on the
// AVX-512 tables) or are 8 lanes throughout, and for channels the tables
// round up to their DepthwiseAlign alike (20 to 24, 36 to 40): a table
// that did not would add the last few channels' taps unfused
// (kernels.DepthwiseRowsCols), within DepthwiseRows's rounding only.
func TestDepthwiseNHWCEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 17))
	var tables []*dispatch.Table
	for _, tb := range dispatch.Available() {
		if tb != dispatch.Reference() {
			tables = append(tables, tb)
		}
	}
	if len(tables) < 2 {
		t.Skipf("one vector table on this CPU (%v): nothing to compare", tables)
	}
	for _, c := range []int{16, 20, 24, 36, 40, 88, 104, 200} {
		xs, ws := []int{2, 3, 21, c}, []int{c, 1, 5, 5}
		x := tensor.From(xs, randomFloats(r, xs))
		w := tensor.From(ws, randomFloats(r, ws))
		bias := tensor.From([]int{c}, randomFloats(r, []int{c}))
		attrs := []*onnxpb.Attribute{opstest.AttrInt("group", int64(c)), opstest.AttrInts("pads", 2, 2, 2, 2), opstest.AttrInts("strides", 2, 1),
			opstest.AttrString("activation", "HardSwish"), opstest.AttrInt("nhwc_in", 1), opstest.AttrInt("nhwc_out", 1)}
		var first []float32
		for _, tb := range tables {
			e := gemm.New(tb, 2)
			cp := mustCompile(t, spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, inputs: FusedInputs, engine: e, attrs: attrs,
				consts: []*tensor.Tensor{FusedW: w, FusedB: bias}, absent: []int{FusedBNScale, FusedBNBias, FusedBNMean, FusedBNVar, FusedResidual, FusedXScale}})
			y, err := cp.run1(x, w, bias)
			e.Close()
			if err != nil {
				t.Fatalf("%d channels, %v: %v", c, tb, err)
			}
			got := y.Data.([]float32)
			if first == nil {
				first = got
				continue
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(first[i]) {
					t.Fatalf("%d channels: %v gives y[%d] = %v, %v gives %v", c, tb, i, got[i], tables[0], first[i])
				}
			}
		}
	}
}

// TestDepthwiseNHWCMultiplier: a depthwise weight of two output channels
// per input channel, given channels-last layouts, still gives the NCHW
// node's values (through the general path).
func TestDepthwiseNHWCMultiplier(t *testing.T) {
	r := rand.New(rand.NewPCG(32, 7))
	xs, ws := []int{2, 8, 6, 7}, []int{16, 1, 3, 3}
	x, w := tensor.From(xs, randomFloats(r, xs)), tensor.From(ws, randomFloats(r, ws))
	attrs := []*onnxpb.Attribute{opstest.AttrInt("group", 8), opstest.AttrInts("pads", 1, 1, 1, 1), opstest.AttrString("activation", "Relu")}
	in := make([]*tensor.Tensor, FusedInputs)
	in[FusedX], in[FusedW] = x, w
	absent := []int{FusedB, FusedBNScale, FusedBNBias, FusedBNMean, FusedBNVar, FusedResidual, FusedXScale}
	node := func(extra ...*onnxpb.Attribute) *compiled {
		return mustCompile(t, spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, inputs: FusedInputs,
			consts: []*tensor.Tensor{FusedW: w}, absent: absent, attrs: append(slices.Clone(attrs), extra...)})
	}
	want, err := node().run1(in...)
	if err != nil {
		t.Fatal(err)
	}
	lin := slices.Clone(in)
	lin[FusedX] = toNHWC(x)
	got, err := node(opstest.AttrInt("nhwc_in", 1), opstest.AttrInt("nhwc_out", 1)).run1(lin...)
	if err != nil {
		t.Fatal(err)
	}
	dwClose(t, "multiplier 2", got.Data.([]float32), toNHWC(want).Data.([]float32), 1e-5)
}

// TestDepthwiseNHWCSplit: channels-last depthwise convolutions of
// PaddleOCR's shapes, large enough to split, give the same bits on two
// threads as on one, with each run's loops splitting: a batch of one
// image by rows, of three by rows of each image in turn (fewer than two
// images a core), of four and eight by images, padded and not, and of
// one read where it is, by blocks of rows.
func TestDepthwiseNHWCSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 7))
	for _, c := range []struct {
		n, c, h, w, k, stride int
		in, out               bool
	}{
		{1, 32, 24, 96, 3, 1, true, true},
		{1, 64, 24, 96, 3, 2, true, false},
		{1, 96, 12, 48, 5, 1, false, true},
		{3, 88, 3, 96, 5, 1, true, true},
		{4, 40, 6, 48, 3, 2, false, false},
		{8, 200, 2, 96, 5, 1, true, true},
		{8, 24, 12, 48, 1, 1, true, true}, // no padding: the image itself
		{1, 8, 48, 96, 3, 1, true, true},  // one image read where it is, by blocks of rows
	} {
		xs, ws := []int{c.n, c.c, c.h, c.w}, []int{c.c, 1, c.k, c.k}
		x, w := tensor.From(xs, randomFloats(r, xs)), tensor.From(ws, randomFloats(r, ws))
		bias := tensor.From([]int{c.c}, randomFloats(r, []int{c.c}))
		p := int64(c.k / 2)
		attrs := []*onnxpb.Attribute{opstest.AttrInt("group", int64(c.c)), opstest.AttrInts("pads", p, p, p, p),
			opstest.AttrInts("strides", int64(c.stride), int64(c.stride)), opstest.AttrString("activation", "HardSwish")}
		in := make([]*tensor.Tensor, FusedInputs)
		in[FusedX] = x
		if c.in {
			attrs = append(attrs, opstest.AttrInt("nhwc_in", 1))
			in[FusedX] = toNHWC(x)
		}
		if c.out {
			attrs = append(attrs, opstest.AttrInt("nhwc_out", 1))
		}
		op := mustCompile(t, spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, inputs: FusedInputs,
			consts: []*tensor.Tensor{FusedW: w, FusedB: bias}, absent: []int{FusedBNScale, FusedBNBias, FusedBNMean, FusedBNVar, FusedResidual, FusedXScale}, attrs: attrs})
		opstest.SplitRun(t, fmt.Sprintf("%+v", c), op.op, in...)
	}
}

// TestDepthwiseNHWCRowsWork: the output rows of PaddleOCR's first
// depthwise layer (one image of 8 channels, 24×96, strides 2 and 1),
// read channels-last where it is and written channels-last, are work
// enough to split across cores (gemm.MinParallelWork) on a table of
// DepthwiseAlign 8, a pixel of 8 channels costing what one of 16 does
// (rowsWork): counted at 8 lanes they were not, and ran on one core.
func TestDepthwiseNHWCRowsWork(t *testing.T) {
	at := &ConvAttrs{Group: 8, Strides: []int64{2, 1}, Pads: []int64{1, 1, 1, 1}}
	g, err := at.Geometry([]int{1, 8, 24, 96}, []int{8, 1, 3, 3})
	if err != nil {
		t.Fatal(err)
	}
	pl := newDWPlan(g, true, make([]float32, 8*9), 8)
	if work := pl.rowsWork(&output{nhwcIn: true, nhwcOut: true}); work < gemm.MinParallelWork {
		t.Errorf("rowsWork = %d, under gemm.MinParallelWork %d: the layer's rows would not split", work, gemm.MinParallelWork)
	}
}

// BenchmarkDepthwiseLayouts runs the depthwise convolutions of PaddleOCR's
// text-direction classifier (batch 1, HardSwish, on GOMAXPROCS threads of
// the default kernels: -test.cpu N, one value an invocation, as a list
// measures its first value under the GOMAXPROCS it leaves) in NCHW, on the planes, and channels-last, on
// DepthwiseRows, side by side. It reports GOP/s (2 operations per
// multiply-add) of wall time and per CPU-second the process used.
func BenchmarkDepthwiseLayouts(b *testing.B) {
	e := gemm.New(dispatch.Default(), runtime.GOMAXPROCS(0))
	defer e.Close()
	for _, l := range []struct {
		c, h, w, k, sh int
	}{
		{8, 24, 96, 3, 2}, {32, 6, 96, 3, 1}, {88, 3, 96, 5, 1}, {200, 2, 96, 5, 1},
	} {
		r := rand.New(rand.NewPCG(1, 2))
		xs, ws := []int{1, l.c, l.h, l.w}, []int{l.c, 1, l.k, l.k}
		x, w := tensor.From(xs, randomFloats(r, xs)), tensor.From(ws, randomFloats(r, ws))
		bias := tensor.From([]int{l.c}, randomFloats(r, []int{l.c}))
		p := int64(l.k / 2)
		attrs := []*onnxpb.Attribute{opstest.AttrInt("group", int64(l.c)), opstest.AttrInts("pads", p, p, p, p),
			opstest.AttrInts("strides", int64(l.sh), 1), opstest.AttrString("activation", "HardSwish")}
		for _, nhwc := range []bool{false, true} {
			a, in := slices.Clone(attrs), make([]*tensor.Tensor, FusedInputs)
			in[FusedX] = x
			name := "nchw"
			if nhwc {
				a = append(a, opstest.AttrInt("nhwc_in", 1), opstest.AttrInt("nhwc_out", 1))
				in[FusedX], name = toNHWC(x), "nhwc"
			}
			op := mustCompile(b, spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, inputs: FusedInputs, engine: e,
				consts: []*tensor.Tensor{FusedW: w, FusedB: bias}, absent: []int{FusedBNScale, FusedBNBias, FusedBNMean, FusedBNVar, FusedResidual, FusedXScale}, attrs: a})
			y, err := op.run1(in...)
			if err != nil {
				b.Fatal(err)
			}
			macs := float64(y.Len() * l.k * l.k)
			b.Run(fmt.Sprintf("c%d_%dx%d_k%d_s%d/%s", l.c, l.h, l.w, l.k, l.sh, name), func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := cpuTime()
				for b.Loop() {
					y, err := op.run1(in...)
					if err != nil {
						b.Fatal(err)
					}
					if nhwc {
						putBuf(y.Data.([]float32))
					}
				}
				n := 2 * macs * float64(b.N)
				b.ReportMetric(n/b.Elapsed().Seconds()/1e9, "GOP/s")
				if cpu := (cpuTime() - cpu0).Seconds(); cpu > 0 {
					b.ReportMetric(n/cpu/1e9, "GOP/cpu-s")
				}
			})
		}
	}
}
