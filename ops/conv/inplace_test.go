package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// TestFusedConvOverResidual: an int8 channels-last convolution that is
// its pooled residual's last reader writes its output over the residual
// (its buffer becomes the output's), with the bits of the same node
// writing a buffer of its own, on every table: 1×1 and 3×3 kernels, one
// group and two, a clamp, tiles of eight rows and shorter ones, a static
// QDQ file's pairs before the residual and after the activation (one
// group). A float one, a grouped one with a pair before its residual,
// and a trace (which keeps every value) write a buffer of their own.
func TestFusedConvOverResidual(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 41))
	for _, c := range []struct {
		c, m, k, group, h, w int
		act                  string
		pairs                bool // a static QDQ file's: before the residual, after the activation
		over                 bool // whether int8 writes over the residual
	}{
		{c: 128, m: 64, k: 1, group: 1, h: 9, w: 13, act: "Relu", over: true},
		{c: 16, m: 64, k: 3, group: 1, h: 7, w: 5, over: true},
		{c: 64, m: 64, k: 3, group: 2, h: 6, w: 11, act: "Relu", over: true},
		{c: 256, m: 40, k: 1, group: 1, h: 1, w: 3, over: true}, // one short tile, a padded panel
		{c: 128, m: 64, k: 1, group: 1, h: 9, w: 13, act: "Relu", pairs: true, over: true},
		{c: 64, m: 64, k: 3, group: 2, h: 6, w: 11, pairs: true}, // a group's rows are not a tile's
	} {
		const n = 2
		xs, ws, ys := []int{n, c.h, c.w, c.c}, []int{c.m, c.c / c.group, c.k, c.k}, []int{n, c.h, c.w, c.m}
		x := tensor.From(xs, randomFloats(r, xs))
		w := tensor.From(ws, randomFloats(r, ws))
		b := tensor.From([]int{c.m}, randomFloats(r, []int{c.m}))
		res := randomFloats(r, ys)
		p := int64(c.k / 2)
		attrs := []*onnxpb.Attribute{opstest.AttrInts("pads", p, p, p, p), opstest.AttrInt("group", int64(c.group)),
			opstest.AttrInt("nhwc_in", 1), opstest.AttrInt("nhwc_out", 1), opstest.AttrInt("nhwc_residual", 1), opstest.AttrInt("pooled_out", 1)}
		if c.act != "" {
			attrs = append(attrs, opstest.AttrString("activation", c.act))
		}
		if c.pairs {
			attrs = append(attrs, opstest.AttrFloats("residual_qdq_scales", 0.05, 0.05), opstest.AttrInts("residual_qdq_zero_points", 128, 128),
				opstest.AttrString("residual_qdq_type", "uint8"))
			attrs = append(attrs, qdqAttrs([]float32{0.04, 0.04}, []int64{120, 120}, "uint8")...)
		}
		absent := []int{FusedBNScale, FusedBNBias, FusedBNMean, FusedBNVar, FusedXScale}
		consts := make([]*tensor.Tensor, FusedInputs)
		consts[FusedW], consts[FusedB] = w, b
		for _, e := range engines() {
			for _, v := range []struct {
				q      bool
				scheme quant.Scheme
			}{{true, quant.PerChannel}, {true, quant.PerBlock}, {false, quant.PerChannel}} {
				q := v.q
				name := fmt.Sprintf("%v %s int8=%v %v", c, engineName(e), q, v.scheme)
				build := func(recycle bool) *compiled {
					at := attrs
					if recycle {
						at = append(slices.Clone(attrs), opstest.AttrInts("recycle_inputs", FusedResidual))
					}
					return mustCompile(t, spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, attrs: at, inputs: FusedInputs,
						consts: consts, absent: absent, engine: e, quantize: q, scheme: v.scheme})
				}
				run := func(cp *compiled, keep bool) (y, r []float32) {
					in := make([]*tensor.Tensor, FusedInputs)
					rb := getBuf(len(res)) // a pool's buffer, as a recycled residual is
					copy(rb, res)
					in[FusedX], in[FusedResidual] = x, tensor.From(ys, rb)
					out, err := cp.runWith(ops.NewContext(t.Context(), cp.e, keep), in...)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					return out[0].Data.([]float32), in[FusedResidual].Data.([]float32)
				}
				want, wantRes := run(build(false), false)
				if sameBuffer(want, wantRes) {
					t.Fatalf("%s: a node that does not recycle its residual wrote over it", name)
				}
				cp := build(true)
				got, gotRes := run(cp, false)
				if over := sameBuffer(got, gotRes); over != (q && c.over) {
					t.Fatalf("%s: output over the residual %v, want %v", name, over, q && c.over)
				}
				if d := getBuf(len(got)); sameBuffer(d, got) {
					t.Fatalf("%s: the output's buffer went back to the pool", name)
				} else {
					putBuf(d)
				}
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s: y[%d] = %v over the residual, %v apart", name, i, got[i], want[i])
					}
				}
				if traced, tracedRes := run(cp, true); sameBuffer(traced, tracedRes) || !slices.Equal(tracedRes, res) {
					t.Fatalf("%s: a trace wrote over its residual", name)
				}
				if c.c == c.m { // the image as its own residual, in two tensors
					in := make([]*tensor.Tensor, FusedInputs)
					v := slices.Clone(x.Data.([]float32))
					in[FusedX], in[FusedResidual] = tensor.From(xs, v), tensor.From(ys, v)
					apart, err := build(false).run(in[FusedX], nil, nil, nil, nil, nil, nil, tensor.From(ys, slices.Clone(v)))
					if err != nil {
						t.Fatal(err)
					}
					out, err := cp.run(in...)
					if err != nil {
						t.Fatal(err)
					}
					if got := out[0].Data.([]float32); sameBuffer(got, v) || !slices.Equal(got, apart[0].Data.([]float32)) {
						t.Fatalf("%s: a residual sharing the image's buffer was written over", name)
					}
				}
			}
		}
	}
}

// TestOverResidualNotTouched: an int8 convolution whose output is cold
// (coldOutput) touches its tiles' output and residual rows before writing
// them, but one writing over its residual touches none of that buffer:
// each of its lines is read before it is written. A 1×1 kernel over one
// image row of 600 positions makes tiles of at most 240 rows (tileRows)
// of 256 values, under gemm.TouchMin: the convolution's own touch is
// what runs.
func TestOverResidualNotTouched(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 43))
	const c, m, h, w = 64, 256, 1, 600
	xs, ws, ys := []int{1, h, w, c}, []int{m, c, 1, 1}, []int{1, h, w, m}
	if h*w*m*4 < coldOutput {
		t.Fatalf("an output of %v is not cold", ys)
	}
	x := tensor.From(xs, randomFloats(r, xs))
	consts := make([]*tensor.Tensor, FusedInputs)
	consts[FusedW], consts[FusedB] = tensor.From(ws, randomFloats(r, ws)), tensor.From([]int{m}, randomFloats(r, []int{m}))
	attrs := []*onnxpb.Attribute{opstest.AttrInt("nhwc_in", 1), opstest.AttrInt("nhwc_out", 1), opstest.AttrInt("nhwc_residual", 1),
		opstest.AttrInt("pooled_out", 1), opstest.AttrString("activation", "Relu")}
	absent := []int{FusedBNScale, FusedBNBias, FusedBNMean, FusedBNVar, FusedXScale}
	for _, recycle := range []bool{false, true} {
		tb := *gemm.Default().Table()
		var touched [][2]uintptr // the addresses of the first and last value of each row touched
		tb.TouchRows = func(p []float32, ld, rows, cols int) {
			for i := range rows {
				row := p[i*ld : i*ld+cols]
				touched = append(touched, [2]uintptr{uintptr(unsafe.Pointer(&row[0])), uintptr(unsafe.Pointer(&row[cols-1]))})
			}
		}
		e := gemm.New(&tb, 1)
		at := attrs
		if recycle {
			at = append(slices.Clone(attrs), opstest.AttrInts("recycle_inputs", FusedResidual))
		}
		cp := mustCompile(t, spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, attrs: at, inputs: FusedInputs,
			consts: consts, absent: absent, engine: e, quantize: true, scheme: quant.PerChannel})
		rb := getBuf(h * w * m)
		copy(rb, randomFloats(r, ys))
		in := make([]*tensor.Tensor, FusedInputs)
		in[FusedX], in[FusedResidual] = x, tensor.From(ys, rb)
		out, err := cp.runWith(ops.NewContext(t.Context(), e, false), in...)
		e.Close()
		if err != nil {
			t.Fatal(err)
		}
		y := out[0].Data.([]float32)
		if over := sameBuffer(y, rb); over != recycle {
			t.Fatalf("recycling its residual %v: output over it %v", recycle, over)
		}
		lo, hi := uintptr(unsafe.Pointer(&rb[0])), uintptr(unsafe.Pointer(&rb[len(rb)-1]))
		hits := 0
		for _, span := range touched {
			if span[0] <= hi && span[1] >= lo {
				hits++
			}
		}
		if recycle && hits > 0 {
			t.Errorf("written over, its residual's buffer had %d rows touched", hits)
		}
		if !recycle && hits == 0 {
			t.Errorf("with an output of its own, its cold residual had no row touched (%d rows touched in all)", len(touched))
		}
	}
}
