package model

import (
	"context"
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
	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/ops/matmul"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// convSpec describes one convolution node for tests.
type convSpec struct {
	op        string // Conv (default) or ConvTranspose
	opset     int64
	x, w      []int
	bias      bool
	constW    bool // the weight is an initializer (held by the kernels)
	attrs     []*onnxpb.Attribute
	dtype     tensor.DataType
	batchDyn  bool // the batch dimension is dynamic
	xInitSeed uint64
}

func convInts(name string, v ...int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInts, Ints: v}
}

func convInt(name string, v int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInt, I: v}
}

func convStr(name, v string) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrString, S: []byte(v)}
}

func convRandom(r *rand.Rand, shape []int) []float32 {
	n := convProd(shape)
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// convModelBytes writes a one-node model: inputs x (and w, b when not
// constant), output y.
func convModelBytes(s convSpec, w, b *tensor.Tensor) []byte {
	op := s.op
	if op == "" {
		op = "Conv"
	}
	opset := s.opset
	if opset == 0 {
		opset = 22
	}
	dt := s.dtype
	if dt == 0 {
		dt = tensor.Float32
	}
	vi := func(name string, shape []int) *onnxpb.ValueInfo {
		t := &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: DataTypeToONNX(dt), HasShape: shape != nil}
		for i, d := range shape {
			if i == 0 && s.batchDyn && name == "x" {
				t.Shape = append(t.Shape, onnxpb.Dim{Param: "N"})
				continue
			}
			t.Shape = append(t.Shape, onnxpb.Dim{Value: int64(d), HasValue: true})
		}
		return &onnxpb.ValueInfo{Name: name, Type: t}
	}
	g := &onnxpb.Graph{Name: "conv"}
	g.Inputs = append(g.Inputs, vi("x", s.x))
	inputs := []string{"x", "w"}
	if s.constW {
		g.Initializers = append(g.Initializers, TensorToONNX("w", w))
	} else {
		g.Inputs = append(g.Inputs, vi("w", w.Shape))
	}
	if b != nil {
		inputs = append(inputs, "b")
		if s.constW {
			g.Initializers = append(g.Initializers, TensorToONNX("b", b))
		} else {
			g.Inputs = append(g.Inputs, vi("b", b.Shape))
		}
	}
	g.Nodes = []*onnxpb.Node{{OpType: op, Name: "conv", Inputs: inputs, Outputs: []string{"y"}, Attributes: s.attrs}}
	g.Outputs = []*onnxpb.ValueInfo{vi("y", nil)}
	return onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: opset}}, Graph: g})
}

// BenchmarkConv runs ResNet-style convolutions of one image through a
// compiled model on the default kernels with every core: int8 (weights
// quantized per channel at load) and float32, beside the bare product of
// the same shape on the same kernels (its im2col matrix built beforehand),
// the bound an implicit GEMM approaches. The depthwise layer runs on the
// vector twin and on the Go one (the generic table). It reports GOP/s (2
// operations per multiply-add) of wall time and, for shared machines, per
// CPU-second the process used.
func BenchmarkConv(b *testing.B) {
	layers := []struct {
		name  string
		x, w  []int
		attrs []*onnxpb.Attribute
	}{
		{"3x3_64-64_56x56", []int{1, 64, 56, 56}, []int{64, 64, 3, 3}, []*onnxpb.Attribute{convInts("pads", 1, 1, 1, 1)}},
		{"1x1_256-64_56x56", []int{1, 256, 56, 56}, []int{64, 256, 1, 1}, nil},
		{"7x7s2_3-64_224x224", []int{1, 3, 224, 224}, []int{64, 3, 7, 7}, []*onnxpb.Attribute{convInts("pads", 3, 3, 3, 3), convInts("strides", 2, 2)}},
		{"dw3x3_64_56x56", []int{1, 64, 56, 56}, []int{64, 1, 3, 3}, []*onnxpb.Attribute{convInts("pads", 1, 1, 1, 1), convInt("group", 64)}},
	}
	e := gemm.Default()
	generic := gemm.New(dispatch.Reference(), e.Threads())
	measure := func(b *testing.B, macs float64, f func() error) {
		b.ReportAllocs()
		cpu0 := convCPUTime()
		for b.Loop() {
			if err := f(); err != nil {
				b.Fatal(err)
			}
		}
		ops := 2 * macs * float64(b.N)
		b.ReportMetric(ops/b.Elapsed().Seconds()/1e9, "GOP/s")
		if cpu := (convCPUTime() - cpu0).Seconds(); cpu > 0 {
			b.ReportMetric(ops/cpu/1e9, "GOP/cpu-s")
		}
	}
	for _, l := range layers {
		r := rand.New(rand.NewPCG(1, 2))
		w := tensor.From(l.w, convRandom(r, l.w))
		bias := tensor.From([]int{l.w[0]}, convRandom(r, []int{l.w[0]}))
		x := tensor.From(l.x, convRandom(r, l.x))
		data := convModelBytes(convSpec{x: l.x, constW: true, attrs: l.attrs}, w, bias)
		depthwise := l.w[1] == 1
		type run struct {
			name  string
			opts  Options
			layer string
		}
		runs := []run{{"int8", Options{Exec: e, Quantize: true, Scheme: quant.PerChannel}, ""}, {"float32", Options{Exec: e}, ""}}
		if depthwise && generic != nil {
			runs = []run{{"vector", Options{Exec: e}, ""}, {"go", Options{Exec: generic}, ""}}
		}
		var macs float64
		for _, rn := range runs {
			m, err := LoadWith(data, rn.opts)
			if err != nil {
				b.Fatal(err)
			}
			in := map[string]*tensor.Tensor{"x": x}
			y, err := convRun1(m, in)
			if err != nil {
				b.Fatal(err)
			}
			macs = float64(y.Len()) * float64(convProd(l.w[1:]))
			b.Run(l.name+"/conv_"+rn.name, func(b *testing.B) {
				b.Logf("layer runs %s", m.Layers[0].Kernels)
				measure(b, macs, func() error { _, err := convRun1(m, in); return err })
			})
		}
		if depthwise {
			continue
		}
		// The bare products: the same M×K×N on the same kernels.
		k, n := convProd(l.w[1:]), l.w[0]
		mrows := int(macs) / (k * n)
		a := convRandom(r, []int{mrows, k})
		c := make([]float32, mrows*n)
		wm := convRandom(r, []int{k, n})
		qw, _ := quant.QuantizeWeights(wm, k, n, quant.PerChannel)
		pq, _ := gemm.PackQ(qw)
		pf := gemm.PackF(k, n, wm, n)
		b.Run(l.name+"/gemm_int8", func(b *testing.B) {
			measure(b, macs, func() error { return e.QMatMul(a, mrows, pq, c) })
		})
		b.Run(l.name+"/gemm_float32", func(b *testing.B) {
			measure(b, macs, func() error { return e.MatMul(a, mrows, pf, c) })
		})
	}
}

// refResult is a convolution computed by its definition in float64: the
// values, Σ|x·w| per element (the float tolerance's scale) and a bound on
// the error of the int8 kernels (half a quantization step of every
// activation and weight, summed over the element's terms).
type refResult struct {
	shape    []int
	y, mag   []float64
	int8Tol  []float64
	products int // terms per element, for the float tolerance
}

func convAbs(v float32) float64 { return math.Abs(float64(v)) }

// refConvolve is Conv by its definition: y[b][m][o] = bias[m] +
// Σ_{ci,k} x[b][g·Cg+ci][o·s − pBegin + k·d] · w[m][ci][k], pads = begins
// then ends. perTensor selects the weight scale the int8 bound assumes.
func refConvolve(x []float32, xs []int, w []float32, ws []int, bias []float32, group int, strides, dil, pads []int, perTensor bool) refResult {
	d := len(ws) - 2
	n, c, m, cg := xs[0], xs[1], ws[0], ws[1]
	mg := m / group
	in, k := xs[2:], ws[2:]
	out := make([]int, d)
	for i := range out {
		ext := (k[i]-1)*dil[i] + 1
		out[i] = (in[i]+pads[i]+pads[i+d]-ext)/strides[i] + 1
	}
	osz, ksz, isz := convProd(out), convProd(k), convProd(in)
	maxW := make([]float64, m)
	var maxAll float64
	for mm := 0; mm < m; mm++ {
		for _, v := range w[mm*cg*ksz : (mm+1)*cg*ksz] {
			maxW[mm] = math.Max(maxW[mm], convAbs(v))
		}
		maxAll = math.Max(maxAll, maxW[mm])
	}
	r := refResult{shape: append([]int{n, m}, out...), products: cg * ksz}
	r.y = make([]float64, n*m*osz)
	r.mag = make([]float64, len(r.y))
	r.int8Tol = make([]float64, len(r.y))
	oc, kc := make([]int, d), make([]int, d)
	for b := 0; b < n; b++ {
		for mm := 0; mm < m; mm++ {
			gi := mm / mg
			for o := 0; o < osz; o++ {
				rem := o
				for i := d - 1; i >= 0; i-- {
					oc[i], rem = rem%out[i], rem/out[i]
				}
				var s, mag, sx, sw, mx float64
				for ci := 0; ci < cg; ci++ {
					for kidx := 0; kidx < ksz; kidx++ {
						rem := kidx
						for i := d - 1; i >= 0; i-- {
							kc[i], rem = rem%k[i], rem/k[i]
						}
						wv := w[(mm*cg+ci)*ksz+kidx]
						sw += convAbs(wv)
						lin, ok := 0, true
						for i := 0; i < d; i++ {
							v := oc[i]*strides[i] - pads[i] + kc[i]*dil[i]
							if v < 0 || v >= in[i] {
								ok = false
								break
							}
							lin = lin*in[i] + v
						}
						if !ok {
							continue
						}
						xv := x[(b*c+gi*cg+ci)*isz+lin]
						s += float64(xv) * float64(wv)
						mag += convAbs(xv) * convAbs(wv)
						sx += convAbs(xv)
						mx = math.Max(mx, convAbs(xv))
					}
				}
				if bias != nil {
					s += float64(bias[mm])
				}
				i := (b*m+mm)*osz + o
				mw := maxW[mm]
				if perTensor {
					mw = maxAll
				}
				r.y[i], r.mag[i] = s, mag
				r.int8Tol[i] = 0.5*(sx*mw/127+sw*mx/64)*1.01 + 1e-5*(1+math.Abs(s))
			}
		}
	}
	return r
}

// refConvTranspose is ConvTranspose by its definition: every input value
// x[b][m][i] adds x·w[m][co][k] to y[b][g·Cog+co][i·s − pBegin + k·d]
// inside out.
func refConvTranspose(x []float32, xs []int, w []float32, ws []int, bias []float32, group int, strides, dil, padBegin, out []int) refResult {
	d := len(ws) - 2
	n, cin, cog := xs[0], xs[1], ws[1]
	cout := cog * group
	mgIn := cin / group
	in, k := xs[2:], ws[2:]
	osz, ksz, isz := convProd(out), convProd(k), convProd(in)
	r := refResult{shape: append([]int{n, cout}, out...), products: mgIn * ksz}
	r.y = make([]float64, n*cout*osz)
	r.mag = make([]float64, len(r.y))
	r.int8Tol = make([]float64, len(r.y))
	// int8: rows are input positions (quantized over the group's input
	// channels), columns (co, k) pairs (quantized over the group's input
	// channels too).
	colMax := make([]float64, cout*ksz)
	for mm := 0; mm < cin; mm++ {
		gi := mm / mgIn
		for co := 0; co < cog; co++ {
			for kidx := 0; kidx < ksz; kidx++ {
				j := (gi*cog+co)*ksz + kidx
				colMax[j] = math.Max(colMax[j], convAbs(w[(mm*cog+co)*ksz+kidx]))
			}
		}
	}
	ic, kc := make([]int, d), make([]int, d)
	for b := 0; b < n; b++ {
		for i := 0; i < isz; i++ {
			rem := i
			for a := d - 1; a >= 0; a-- {
				ic[a], rem = rem%in[a], rem/in[a]
			}
			for gi := 0; gi < group; gi++ {
				var rowMax float64
				for mm := gi * mgIn; mm < (gi+1)*mgIn; mm++ {
					rowMax = math.Max(rowMax, convAbs(x[(b*cin+mm)*isz+i]))
				}
				for mm := gi * mgIn; mm < (gi+1)*mgIn; mm++ {
					xv := x[(b*cin+mm)*isz+i]
					for co := 0; co < cog; co++ {
						for kidx := 0; kidx < ksz; kidx++ {
							rem := kidx
							for a := d - 1; a >= 0; a-- {
								kc[a], rem = rem%k[a], rem/k[a]
							}
							lin, ok := 0, true
							for a := 0; a < d; a++ {
								v := ic[a]*strides[a] - padBegin[a] + kc[a]*dil[a]
								if v < 0 || v >= out[a] {
									ok = false
									break
								}
								lin = lin*out[a] + v
							}
							if !ok {
								continue
							}
							wv := w[(mm*cog+co)*ksz+kidx]
							j := (b*cout+gi*cog+co)*osz + lin
							r.y[j] += float64(xv) * float64(wv)
							r.mag[j] += convAbs(xv) * convAbs(wv)
							r.int8Tol[j] += 0.5 * (convAbs(xv)*colMax[(gi*cog+co)*ksz+kidx]/127 + convAbs(wv)*rowMax/64)
						}
					}
				}
			}
		}
	}
	for j := range r.y {
		if bias != nil {
			r.y[j] += float64(bias[j/osz%cout])
		}
		r.int8Tol[j] = r.int8Tol[j]*1.01 + 1e-5*(1+math.Abs(r.y[j]))
	}
	return r
}

// check compares got with the reference: within the float32 rounding of
// its terms, or with int8 set, within the int8 bound.
func (r refResult) check(t *testing.T, got *tensor.Tensor, int8 bool) {
	t.Helper()
	if !equalShape(got.Shape, r.shape) {
		t.Fatalf("shape %v, want %v", got.Shape, r.shape)
	}
	g := got.Float64s()
	for i, want := range r.y {
		tol := 4e-7*float64(r.products+2)*r.mag[i] + 1e-6
		if int8 {
			tol = r.int8Tol[i]
		}
		if !(math.Abs(g[i]-want) <= tol) {
			t.Fatalf("y[%d] = %v, want %v ± %v (int8 %v)", i, g[i], want, tol, int8)
		}
	}
}

// convExecs returns an Exec for every kernel table this CPU runs, with one
// and two cores.
var convExecs = sync.OnceValue(func() []*gemm.Engine {
	var es []*gemm.Engine
	for _, tb := range dispatch.Available() {
		es = append(es, gemm.New(tb, 1), gemm.New(tb, 2))
	}
	return es
})

func convExecName(e *gemm.Engine) string { return fmt.Sprintf("%s×%d", e.Table().Name, e.Threads()) }

type convCase struct {
	name                string
	x, w                []int
	group               int
	strides, dil, pads  []int
	bias                bool
	outPad, outShape    []int // ConvTranspose
	wantOut, wantPBegin []int // ConvTranspose: the output size and pads the spec gives
	autoPad             string
	opset               int64
}

func (c convCase) attrs() []*onnxpb.Attribute {
	var a []*onnxpb.Attribute
	i64 := func(v []int) []int64 {
		r := make([]int64, len(v))
		for i, x := range v {
			r[i] = int64(x)
		}
		return r
	}
	if c.group > 1 {
		a = append(a, convInt("group", int64(c.group)))
	}
	if c.strides != nil {
		a = append(a, convInts("strides", i64(c.strides)...))
	}
	if c.dil != nil {
		a = append(a, convInts("dilations", i64(c.dil)...))
	}
	if c.pads != nil {
		a = append(a, convInts("pads", i64(c.pads)...))
	}
	if c.outPad != nil {
		a = append(a, convInts("output_padding", i64(c.outPad)...))
	}
	if c.outShape != nil {
		a = append(a, convInts("output_shape", i64(c.outShape)...))
	}
	if c.autoPad != "" {
		a = append(a, convStr("auto_pad", c.autoPad))
	}
	return a
}

func (c convCase) axes() (group int, strides, dil, pads []int) {
	d := len(c.w) - 2
	group, strides, dil, pads = max(c.group, 1), c.strides, c.dil, c.pads
	ones := func() []int {
		v := make([]int, d)
		for i := range v {
			v[i] = 1
		}
		return v
	}
	if strides == nil {
		strides = ones()
	}
	if dil == nil {
		dil = ones()
	}
	if pads == nil {
		pads = make([]int, 2*d)
	}
	return
}

func convTestCases() []convCase {
	return []convCase{
		{name: "1-D", x: []int{2, 4, 11}, w: []int{6, 4, 3}, strides: []int{2}, pads: []int{1, 2}, bias: true},
		{name: "2-D", x: []int{1, 3, 9, 8}, w: []int{5, 3, 3, 3}, pads: []int{1, 1, 1, 1}},
		{name: "2-D strided dilated asymmetric", x: []int{2, 6, 13, 11}, w: []int{8, 6, 3, 2}, strides: []int{2, 3}, dil: []int{2, 1}, pads: []int{0, 2, 1, 0}, bias: true},
		{name: "3-D", x: []int{1, 4, 6, 5, 7}, w: []int{6, 4, 3, 2, 3}, strides: []int{1, 2, 1}, pads: []int{1, 0, 1, 1, 1, 0}, bias: true},
		{name: "groups", x: []int{2, 8, 10, 10}, w: []int{12, 2, 3, 3}, group: 4, pads: []int{1, 1, 1, 1}, bias: true},
		{name: "depthwise", x: []int{2, 16, 15, 14}, w: []int{16, 1, 3, 3}, group: 16, strides: []int{2, 2}, pads: []int{1, 1, 1, 1}, bias: true},
		{name: "depthwise multiplier dilated", x: []int{1, 8, 9, 9}, w: []int{16, 1, 5, 5}, group: 8, dil: []int{1, 2}, pads: []int{2, 2, 2, 2}},
		{name: "depthwise 1-D", x: []int{2, 6, 20}, w: []int{6, 1, 4}, group: 6, pads: []int{3, 0}, bias: true},
		{name: "depthwise strided dilated", x: []int{1, 4, 17, 19}, w: []int{4, 1, 3, 4}, group: 4, strides: []int{2, 3}, dil: []int{2, 2}, pads: []int{1, 2, 0, 3}, bias: true},
		{name: "depthwise wide rows", x: []int{1, 3, 5, 100}, w: []int{3, 1, 3, 3}, group: 3, pads: []int{1, 1, 1, 1}},
		{name: "depthwise dilated same", x: []int{2, 4, 10, 12}, w: []int{4, 1, 3, 3}, group: 4, dil: []int{2, 2}, pads: []int{2, 1, 2, 3}, bias: true},
		{name: "depthwise many planes", x: []int{2, 32, 48, 48}, w: []int{32, 1, 3, 3}, group: 32, pads: []int{1, 1, 1, 1}, bias: true},
		{name: "depthwise kernel wider than the row", x: []int{1, 2, 4, 3}, w: []int{2, 1, 3, 5}, group: 2, pads: []int{1, 2, 1, 2}},
		{name: "depthwise 3-D", x: []int{1, 4, 5, 6, 5}, w: []int{4, 1, 3, 3, 3}, group: 4, pads: []int{1, 1, 1, 1, 1, 1}},
		{name: "1x1", x: []int{2, 32, 12, 12}, w: []int{24, 32, 1, 1}, bias: true},
		{name: "1x1 strided", x: []int{1, 32, 12, 12}, w: []int{16, 32, 1, 1}, strides: []int{2, 2}},
		{name: "many tiles", x: []int{2, 16, 30, 30}, w: []int{32, 16, 3, 3}, pads: []int{1, 1, 1, 1}, bias: true},
		{name: "wide K", x: []int{1, 300, 6, 6}, w: []int{20, 300, 3, 3}, pads: []int{1, 1, 1, 1}},
		{name: "kernel covers the input", x: []int{1, 3, 5, 5}, w: []int{4, 3, 5, 5}},
		{name: "input layer", x: []int{1, 3, 30, 30}, w: []int{16, 3, 7, 7}, strides: []int{2, 2}, pads: []int{3, 3, 3, 3}, bias: true},
	}
}

// TestConvMatchesDefinition runs every case on every kernel table, one and
// two cores, with the weight held by the kernels (float32 and int8) and
// with the weight as an input, against the definition.
func TestConvMatchesDefinition(t *testing.T) {
	for _, c := range convTestCases() {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(len(c.name)), 5))
			x := tensor.From(c.x, convRandom(r, c.x))
			w := tensor.From(c.w, convRandom(r, c.w))
			var b *tensor.Tensor
			var bv []float32
			if c.bias {
				bv = convRandom(r, []int{c.w[0]})
				b = tensor.From([]int{c.w[0]}, bv)
			}
			group, strides, dil, pads := c.axes()
			ref := refConvolve(x.Data.([]float32), c.x, w.Data.([]float32), c.w, bv, group, strides, dil, pads, false)
			var int8Ref *tensor.Tensor
			for _, e := range convExecs() {
				for _, mode := range []string{"held float32", "held int8", "input weight"} {
					s := convSpec{x: c.x, constW: mode != "input weight", attrs: c.attrs()}
					m, err := LoadWith(convModelBytes(s, w, b), Options{Exec: e, Quantize: mode == "held int8", Scheme: quant.PerChannel})
					if err != nil {
						t.Fatal(err)
					}
					in := map[string]*tensor.Tensor{"x": x}
					if !s.constW {
						in["w"] = w
						if b != nil {
							in["b"] = b
						}
					}
					out, err := m.Run(context.Background(), in, nil)
					if err != nil {
						t.Fatalf("%s %s: %v", convExecName(e), mode, err)
					}
					int8 := false
					if s.constW {
						if len(m.Layers) != 1 {
							t.Fatalf("%s: layers %+v", mode, m.Layers)
						}
						int8 = strings.HasPrefix(m.Layers[0].Kernels, "int8")
						if want := mode == "held int8" && !strings.Contains(m.Layers[0].Kernels, "("); int8 != want && !strings.HasPrefix(m.Layers[0].Kernels, "depthwise") {
							t.Errorf("%s: layer runs %q", mode, m.Layers[0].Kernels)
						}
					}
					t.Run(convExecName(e)+" "+mode, func(t *testing.T) { ref.check(t, out["y"], int8) })
					if int8 { // every table, any number of cores: the same bits
						if int8Ref == nil {
							int8Ref = out["y"]
						} else if !slices.Equal(int8Ref.Data.([]float32), out["y"].Data.([]float32)) {
							t.Errorf("%s: int8 results differ from the first table's", convExecName(e))
						}
					}
				}
			}
		})
	}
}

func convTransposeCases() []convCase {
	return []convCase{
		{name: "2-D output_padding", x: []int{1, 2, 5, 5}, w: []int{2, 3, 3, 3}, strides: []int{2, 2}, pads: []int{1, 1, 1, 1}, outPad: []int{1, 1}, bias: true, wantOut: []int{10, 10}, wantPBegin: []int{1, 1}},
		{name: "1-D dilated", x: []int{2, 3, 7}, w: []int{3, 2, 4}, strides: []int{3}, dil: []int{2}, wantOut: []int{25}, wantPBegin: []int{0}},
		{name: "3-D", x: []int{1, 2, 3, 4, 3}, w: []int{2, 2, 2, 3, 2}, strides: []int{2, 1, 2}, wantOut: []int{6, 6, 6}, wantPBegin: []int{0, 0, 0}},
		{name: "groups", x: []int{2, 4, 6, 6}, w: []int{4, 3, 3, 3}, group: 2, strides: []int{2, 2}, pads: []int{0, 1, 1, 0}, bias: true, wantOut: []int{12, 12}, wantPBegin: []int{0, 1}},
		{name: "depthwise", x: []int{1, 4, 5, 5}, w: []int{4, 1, 3, 3}, group: 4, strides: []int{2, 2}, wantOut: []int{11, 11}, wantPBegin: []int{0, 0}},
		{name: "many tiles", x: []int{1, 64, 20, 20}, w: []int{64, 32, 4, 4}, strides: []int{2, 2}, pads: []int{1, 1, 1, 1}, bias: true, wantOut: []int{40, 40}, wantPBegin: []int{1, 1}},
		{name: "output_shape beyond the natural size", x: []int{1, 2, 4, 4}, w: []int{2, 2, 3, 3}, strides: []int{2, 2}, outShape: []int{10, 9}, wantOut: []int{10, 9}, wantPBegin: []int{0, 0}},
		{name: "output_shape within it", x: []int{1, 2, 4, 4}, w: []int{2, 2, 3, 3}, strides: []int{2, 2}, outShape: []int{7, 8}, wantOut: []int{7, 8}, wantPBegin: []int{0, 0}},
		// 3 inputs, kernel 3, stride 2: 7 outputs in full, 6 kept; the odd
		// padding goes last for SAME_UPPER from opset 11, first before it.
		{name: "SAME_UPPER", x: []int{1, 2, 3, 3}, w: []int{2, 1, 3, 3}, strides: []int{2, 2}, autoPad: "SAME_UPPER", wantOut: []int{6, 6}, wantPBegin: []int{0, 0}},
		{name: "SAME_LOWER", x: []int{1, 2, 3, 3}, w: []int{2, 1, 3, 3}, strides: []int{2, 2}, autoPad: "SAME_LOWER", wantOut: []int{6, 6}, wantPBegin: []int{1, 1}},
		{name: "SAME_UPPER opset 10", opset: 10, x: []int{1, 2, 3, 3}, w: []int{2, 1, 3, 3}, strides: []int{2, 2}, autoPad: "SAME_UPPER", wantOut: []int{6, 6}, wantPBegin: []int{1, 1}},
		{name: "SAME_LOWER opset 10", opset: 10, x: []int{1, 2, 3, 3}, w: []int{2, 1, 3, 3}, strides: []int{2, 2}, autoPad: "SAME_LOWER", wantOut: []int{6, 6}, wantPBegin: []int{0, 0}},
		{name: "SAME_UPPER output_shape", x: []int{1, 2, 3, 3}, w: []int{2, 1, 3, 3}, strides: []int{2, 2}, autoPad: "SAME_UPPER", outShape: []int{5, 4}, wantOut: []int{5, 4}, wantPBegin: []int{1, 1}},
	}
}

// TestConvTransposeMatchesDefinition runs ConvTranspose cases as
// TestConvMatchesDefinition runs Conv's.
func TestConvTransposeMatchesDefinition(t *testing.T) {
	for _, c := range convTransposeCases() {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(len(c.name)), 6))
			x := tensor.From(c.x, convRandom(r, c.x))
			w := tensor.From(c.w, convRandom(r, c.w))
			var b *tensor.Tensor
			var bv []float32
			if c.bias {
				bv = convRandom(r, []int{c.w[1] * max(c.group, 1)})
				b = tensor.From([]int{len(bv)}, bv)
			}
			group, strides, dil, _ := c.axes()
			ref := refConvTranspose(x.Data.([]float32), c.x, w.Data.([]float32), c.w, bv, group, strides, dil, c.wantPBegin, c.wantOut)
			var int8Ref *tensor.Tensor
			for _, e := range convExecs() {
				for _, mode := range []string{"held float32", "held int8", "input weight"} {
					s := convSpec{op: "ConvTranspose", opset: c.opset, x: c.x, constW: mode != "input weight", attrs: c.attrs()}
					m, err := LoadWith(convModelBytes(s, w, b), Options{Exec: e, Quantize: mode == "held int8", Scheme: quant.PerChannel})
					if err != nil {
						t.Fatal(err)
					}
					in := map[string]*tensor.Tensor{"x": x}
					if !s.constW {
						in["w"] = w
						if b != nil {
							in["b"] = b
						}
					}
					out, err := m.Run(context.Background(), in, nil)
					if err != nil {
						t.Fatalf("%s %s: %v", convExecName(e), mode, err)
					}
					int8 := s.constW && strings.HasPrefix(m.Layers[0].Kernels, "int8")
					t.Run(convExecName(e)+" "+mode, func(t *testing.T) { ref.check(t, out["y"], int8) })
					if int8 {
						if int8Ref == nil {
							int8Ref = out["y"]
						} else if !slices.Equal(int8Ref.Data.([]float32), out["y"].Data.([]float32)) {
							t.Errorf("%s: int8 results differ from the first table's", convExecName(e))
						}
					}
				}
			}
			if c.name == "many tiles" && int8Ref == nil {
				t.Error("no int8 run: the layer stayed float32")
			}
		})
	}
}

func convLoad(t *testing.T, s convSpec, w, b *tensor.Tensor, opts Options) *Model {
	t.Helper()
	m, err := LoadWith(convModelBytes(s, w, b), opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func convRun1(m *Model, in map[string]*tensor.Tensor) (*tensor.Tensor, error) {
	out, err := m.Run(context.Background(), in, nil)
	if err != nil {
		return nil, err
	}
	return out["y"], nil
}

// TestConvAutoPad checks Conv's auto_pad against the explicit pads the
// spec's formulas give: output ceil(in/stride), the odd padding last for
// SAME_UPPER and first for SAME_LOWER, none for VALID.
func TestConvAutoPad(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	xs, ws := []int{1, 2, 10, 9}, []int{3, 2, 4, 3}
	x := tensor.From(xs, convRandom(r, xs))
	w := tensor.From(ws, convRandom(r, ws))
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
		s := convSpec{x: xs, constW: true, attrs: []*onnxpb.Attribute{convStr("auto_pad", c.auto), convInts("strides", int64(c.strides[0]), int64(c.strides[1]))}}
		y, err := convRun1(convLoad(t, s, w, nil, Options{}), map[string]*tensor.Tensor{"x": x})
		if err != nil {
			t.Fatal(err)
		}
		ref := refConvolve(x.Data.([]float32), xs, w.Data.([]float32), ws, nil, 1, c.strides, []int{1, 1}, c.pads, false)
		t.Run(fmt.Sprint(c.auto, c.strides), func(t *testing.T) { ref.check(t, y, false) })
	}
}

// TestConvLayers checks what each convolution records about how it runs.
func TestConvLayers(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, c := range []struct {
		op     string
		x, w   []int
		attrs  []*onnxpb.Attribute
		opts   Options
		layer  Layer
		layers int
	}{
		{"Conv", []int{1, 16, 8, 8}, []int{64, 16, 3, 3}, nil, Options{Quantize: true, Scheme: quant.PerChannel}, Layer{Op: "Conv", K: 144, N: 64, Kernels: "int8 per_channel"}, 1},
		{"Conv", []int{1, 16, 8, 8}, []int{64, 16, 3, 3}, nil, Options{Quantize: true, Scheme: quant.PerBlock}, Layer{Op: "Conv", K: 144, N: 64, Kernels: "int8 per_block"}, 1},
		{"Conv", []int{1, 16, 8, 8}, []int{32, 16, 3, 3}, nil, Options{Quantize: true, Scheme: quant.PerChannel}, Layer{Op: "Conv", K: 144, N: 32, Kernels: "float32 (small weight)"}, 1},
		{"Conv", []int{1, 16, 8, 8}, []int{32, 16, 3, 3}, nil, Options{}, Layer{Op: "Conv", K: 144, N: 32, Kernels: "float32"}, 1},
		{"Conv", []int{1, 3, 8, 8}, []int{32, 3, 7, 7}, nil, Options{Quantize: true}, Layer{Op: "Conv", K: 147, N: 32, Kernels: "float32 (input layer: 3 input channels)"}, 1},
		{"Conv", []int{1, 8, 8, 8}, []int{8, 8, 1, 1}, nil, Options{Quantize: true}, Layer{Op: "Conv", K: 8, N: 8, Kernels: "float32 (small weight)"}, 1},
		{"Conv", []int{1, 16, 8, 8}, []int{16, 1, 3, 3}, []*onnxpb.Attribute{convInt("group", 16)}, Options{Quantize: true}, Layer{Op: "Conv", K: 9, N: 1, Kernels: "depthwise float32, 16 groups"}, 1},
		{"Conv", []int{1, 64, 8, 8}, []int{64, 32, 3, 3}, []*onnxpb.Attribute{convInt("group", 2)}, Options{Quantize: true}, Layer{Op: "Conv", K: 288, N: 32, Kernels: "int8 per_tensor, 2 groups"}, 1},
		{"ConvTranspose", []int{1, 32, 8, 8}, []int{32, 16, 4, 4}, nil, Options{Quantize: true, Scheme: quant.PerChannel}, Layer{Op: "ConvTranspose", K: 32, N: 256, Kernels: "int8 per_channel"}, 1},
	} {
		w := tensor.From(c.w, convRandom(r, c.w))
		m := convLoad(t, convSpec{op: c.op, x: c.x, constW: true, attrs: c.attrs}, w, nil, c.opts)
		c.layer.Node = "conv"
		if len(m.Layers) != c.layers || m.Layers[0] != c.layer {
			t.Errorf("%s %v %v: layers %+v, want %+v", c.op, c.w, c.opts, m.Layers, c.layer)
		}
		for _, cs := range m.constants {
			if cs.t.Len() == w.Len() && !dispatch.AutodiffBuilt {
				t.Errorf("%s %v: the float weight is still held beside the kernels' copy", c.op, c.w)
			}
		}
	}
}

// TestConvFloatTypes runs FP16, BF16 and FP64 convolutions against the
// definition.
func TestConvFloatTypes(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	xs := []int{2, 4, 7, 6}
	xv, bv := convRandom(r, xs), convRandom(r, []int{6})
	for _, dt := range []tensor.DataType{tensor.Float16, tensor.BFloat16, tensor.Float64} {
		for _, op := range []string{"Conv", "ConvTranspose"} {
			ws := []int{6, 2, 3, 3}
			if op == "ConvTranspose" {
				ws = []int{4, 3, 3, 3}
			}
			wv := convRandom(r, ws)
			for _, constW := range []bool{false, true} {
				x, w, b := tensor.From(xs, xv), tensor.From(ws, wv), tensor.From([]int{6}, bv)
				xc, _ := castTo(x, dt)
				wc, _ := castTo(w, dt)
				bc, _ := castTo(b, dt)
				// the reference sees the rounded values
				xr, _ := castTo(xc, tensor.Float32)
				wr, _ := castTo(wc, tensor.Float32)
				br, _ := castTo(bc, tensor.Float32)
				s := convSpec{op: op, x: xs, constW: constW, dtype: dt, attrs: []*onnxpb.Attribute{convInt("group", 2), convInts("pads", 1, 0, 1, 2), convInts("strides", 2, 1)}}
				m := convLoad(t, s, wc, bc, Options{Quantize: true})
				in := map[string]*tensor.Tensor{"x": xc}
				if !constW {
					in["w"], in["b"] = wc, bc
				}
				y, err := convRun1(m, in)
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
				if !equalShape(y.Shape, ref.shape) {
					t.Fatalf("%v %s: shape %v, want %v", dt, op, y.Shape, ref.shape)
				}
				rel := map[tensor.DataType]float64{tensor.Float16: 1e-3, tensor.BFloat16: 8e-3, tensor.Float64: 1e-6}[dt]
				for i, want := range ref.y {
					if d := math.Abs(g[i] - want); d > rel*(ref.mag[i]+math.Abs(want))+1e-6 {
						t.Fatalf("%v %s const=%v: y[%d] = %v, want %v", dt, op, constW, i, g[i], want)
					}
				}
			}
		}
	}
}

// convIntCase is an integer convolution: x and w values with their types
// and zero points.
type convIntCase struct {
	name       string
	x, w       []int
	xType      tensor.DataType
	wType      tensor.DataType
	xLo, xHi   int // x values drawn from [xLo, xHi]
	wLo, wHi   int // w values drawn from [wLo, wHi] (0, 0: the type's range)
	xzp        int64
	wzp        []int64 // nil: absent
	minusWeigh bool    // many weights at the type's low end
	group      int
	pads       []int
}

func convIntTensor(r *rand.Rand, dt tensor.DataType, shape []int, lo, hi int) *tensor.Tensor {
	n := convProd(shape)
	switch dt {
	case tensor.Uint8:
		v := make([]uint8, n)
		for i := range v {
			v[i] = uint8(lo + r.IntN(hi-lo+1))
		}
		return tensor.From(shape, v)
	default:
		v := make([]int8, n)
		for i := range v {
			v[i] = int8(lo + r.IntN(hi-lo+1))
		}
		return tensor.From(shape, v)
	}
}

func convZP(dt tensor.DataType, v []int64) *tensor.Tensor {
	if v == nil {
		return nil
	}
	shape := []int{len(v)}
	if len(v) == 1 {
		shape = nil
	}
	f := make([]float64, len(v))
	for i, z := range v {
		f[i] = float64(z)
	}
	t, _ := castTo(tensor.From(shape, f), dt)
	return t
}

// convIntModel writes ConvInteger (qlinear false) or QLinearConv over
// inputs x (and the others unless held).
func convIntModel(c convIntCase, held, qlinear bool, w, wzp *tensor.Tensor, extra map[string]*tensor.Tensor) []byte {
	g := &onnxpb.Graph{Name: "convint"}
	vi := func(name string, dt tensor.DataType) *onnxpb.ValueInfo {
		return &onnxpb.ValueInfo{Name: name, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: DataTypeToONNX(dt)}}
	}
	add := func(name string, t *tensor.Tensor, init bool) {
		if init {
			g.Initializers = append(g.Initializers, TensorToONNX(name, t))
		} else {
			g.Inputs = append(g.Inputs, vi(name, t.DType))
		}
	}
	g.Inputs = append(g.Inputs, vi("x", c.xType))
	var inputs []string
	if qlinear {
		inputs = []string{"x", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp", "bias"}
		add("xs", extra["xs"], true)
		add("xzp", extra["xzp"], true)
		add("w", w, held)
		add("ws", extra["ws"], true)
		add("wzp", wzp, held)
		add("ys", extra["ys"], true)
		add("yzp", extra["yzp"], true)
		add("bias", extra["bias"], true)
	} else {
		inputs = []string{"x", "w", "xzp"}
		add("w", w, held)
		add("xzp", extra["xzp"], true)
		if wzp != nil {
			inputs = append(inputs, "wzp")
			add("wzp", wzp, held)
		}
	}
	var attrs []*onnxpb.Attribute
	if c.group > 1 {
		attrs = append(attrs, convInt("group", int64(c.group)))
	}
	if c.pads != nil {
		p := make([]int64, len(c.pads))
		for i, v := range c.pads {
			p[i] = int64(v)
		}
		attrs = append(attrs, convInts("pads", p...))
	}
	op := "ConvInteger"
	if qlinear {
		op = "QLinearConv"
	}
	g.Nodes = []*onnxpb.Node{{OpType: op, Name: "conv", Inputs: inputs, Outputs: []string{"y"}, Attributes: attrs}}
	g.Outputs = []*onnxpb.ValueInfo{vi("y", tensor.Int32)}
	return onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: 13}}, Graph: g})
}

func convIntCases() []convIntCase {
	return []convIntCase{
		{name: "uint8 full range", x: []int{1, 3, 7, 7}, w: []int{4, 3, 3, 3}, xType: tensor.Uint8, wType: tensor.Uint8, xLo: 0, xHi: 255, xzp: 7, wzp: []int64{131}, pads: []int{1, 1, 1, 1}},
		{name: "int8 with -128 weights per-channel zero points", x: []int{2, 4, 6, 6}, w: []int{6, 2, 3, 3}, xType: tensor.Int8, wType: tensor.Int8, xLo: -128, xHi: 127, xzp: -3, wzp: []int64{0, -128, 5, 127, -1, 2}, minusWeigh: true, group: 2},
		{name: "uint8 weights at 0", x: []int{1, 5, 5, 5}, w: []int{3, 5, 2, 2}, xType: tensor.Uint8, wType: tensor.Uint8, xLo: 0, xHi: 255, minusWeigh: true},
		{name: "small values in one pass", x: []int{1, 8, 6, 6}, w: []int{8, 8, 3, 3}, xType: tensor.Uint8, wType: tensor.Int8, xLo: 100, xHi: 160, xzp: 128, pads: []int{1, 1, 1, 1}},
		{name: "K over one chunk", x: []int{1, 256, 5, 5}, w: []int{8, 256, 3, 3}, xType: tensor.Uint8, wType: tensor.Int8, xLo: 0, xHi: 255, xzp: 0, wzp: []int64{-2}, pads: []int{1, 1, 1, 1}},
		{name: "many tiles", x: []int{2, 16, 30, 30}, w: []int{32, 16, 3, 3}, xType: tensor.Uint8, wType: tensor.Int8, xLo: 0, xHi: 255, xzp: 128, pads: []int{1, 1, 1, 1}},
		// Σ over K = 2304 of 255·127 (and of its parts) passes 2^24: the
		// chunks keep every float32 partial sum exact.
		{name: "extreme sums", x: []int{1, 256, 3, 3}, w: []int{4, 256, 3, 3}, xType: tensor.Uint8, wType: tensor.Int8, xLo: 250, xHi: 255, wLo: 120, wHi: 127},
		{name: "extreme single pass", x: []int{1, 256, 3, 3}, w: []int{4, 256, 3, 3}, xType: tensor.Int8, wType: tensor.Int8, xLo: 60, xHi: 64, wLo: 125, wHi: 127},
	}
}

// convIntRef returns the exact sums of case c in float64 (exact for these
// sizes) from the definition.
func convIntRef(c convIntCase, x, w *tensor.Tensor) refResult {
	xv, wv := x.Float64s(), w.Float64s()
	xf := make([]float32, len(xv))
	for i, v := range xv {
		xf[i] = float32(v - float64(c.xzp))
	}
	wf := make([]float32, len(wv))
	per := len(wv) / c.w[0]
	for i, v := range wv {
		z := int64(0)
		if c.wzp != nil {
			z = c.wzp[i/per%len(c.wzp)]
		}
		wf[i] = float32(v - float64(z))
	}
	d := len(c.x) - 2
	strides, dil := make([]int, d), make([]int, d)
	for i := range strides {
		strides[i], dil[i] = 1, 1
	}
	pads := c.pads
	if pads == nil {
		pads = make([]int, 2*d)
	}
	return refConvolve(xf, c.x, wf, c.w, nil, max(c.group, 1), strides, dil, pads, false)
}

// TestConvIntegerIsExact runs ConvInteger on every table, weight held and
// as an input, and demands the exact sums.
func TestConvIntegerIsExact(t *testing.T) {
	for _, c := range convIntCases() {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(len(c.name)), 8))
			x := convIntTensor(r, c.xType, c.x, c.xLo, c.xHi)
			lo, hi := 0, 255
			if c.wType == tensor.Int8 {
				lo, hi = -128, 127
			}
			if c.wLo != 0 || c.wHi != 0 {
				lo, hi = c.wLo, c.wHi
			}
			w := convIntTensor(r, c.wType, c.w, lo, hi)
			if c.minusWeigh { // a quarter of the weights at the type's lowest value
				wv, _ := w.Int64s()
				f := make([]float64, len(wv))
				for i, v := range wv {
					f[i] = float64(v)
					if i%4 == 0 {
						f[i] = float64(lo)
					}
				}
				w, _ = castTo(tensor.From(c.w, f), c.wType)
			}
			want := convIntRef(c, x, w)
			wzp := convZP(c.wType, c.wzp)
			extra := map[string]*tensor.Tensor{"xzp": convZP(c.xType, []int64{c.xzp})}
			for _, e := range convExecs() {
				for _, held := range []bool{true, false} {
					m, err := LoadWith(convIntModel(c, held, false, w, wzp, extra), Options{Exec: e})
					if err != nil {
						t.Fatal(err)
					}
					if held && (len(m.Layers) != 1 || !strings.HasPrefix(m.Layers[0].Kernels, "int8 exact")) {
						t.Errorf("layers %+v", m.Layers)
					}
					in := map[string]*tensor.Tensor{"x": x}
					if !held {
						in["w"] = w
						if wzp != nil {
							in["wzp"] = wzp
						}
					}
					y, err := convRun1(m, in)
					if err != nil {
						t.Fatalf("%s held=%v: %v", convExecName(e), held, err)
					}
					if !equalShape(y.Shape, want.shape) || y.DType != tensor.Int32 {
						t.Fatalf("output %v%v, want INT32%v", y.DType, y.Shape, want.shape)
					}
					for i, v := range y.Data.([]int32) {
						if float64(v) != want.y[i] {
							t.Fatalf("%s held=%v: y[%d] = %d, want %v", convExecName(e), held, i, v, want.y[i])
						}
					}
				}
			}
		})
	}
}

// TestQLinearConv checks QLinearConv against its definition on the exact
// sums: round-half-even of sum·(x_scale·w_scale/y_scale) + y_zero_point,
// saturated.
func TestQLinearConv(t *testing.T) {
	c := convIntCase{name: "q", x: []int{2, 8, 9, 9}, w: []int{6, 4, 3, 3}, xType: tensor.Uint8, wType: tensor.Int8, xLo: 0, xHi: 255, xzp: 120, wzp: []int64{0, 0, 0, 0, 0, 0}, group: 2, pads: []int{1, 0, 1, 0}}
	r := rand.New(rand.NewPCG(9, 9))
	x := convIntTensor(r, c.xType, c.x, c.xLo, c.xHi)
	w := convIntTensor(r, c.wType, c.w, -127, 127)
	sums := convIntRef(c, x, w)
	ws := []float32{0.002, 0.004, 0.001, 0.003, 0.0025, 0.0015}
	bias := []int32{100, -2000, 0, 3000, -50, 7}
	for _, yType := range []tensor.DataType{tensor.Uint8, tensor.Int8} {
		yzp := map[tensor.DataType]int64{tensor.Uint8: 128, tensor.Int8: -5}[yType]
		extra := map[string]*tensor.Tensor{
			"xs": tensor.Scalar(float32(0.05)), "xzp": convZP(c.xType, []int64{c.xzp}),
			"ws": tensor.From([]int{6}, ws), "ys": tensor.Scalar(float32(0.7)), "yzp": convZP(yType, []int64{yzp}),
			"bias": tensor.From([]int{6}, bias),
		}
		for _, held := range []bool{true, false} {
			wzp := convZP(c.wType, c.wzp)
			m, err := LoadWith(convIntModel(c, held, true, w, wzp, extra), Options{})
			if err != nil {
				t.Fatal(err)
			}
			in := map[string]*tensor.Tensor{"x": x}
			if !held {
				in["w"], in["wzp"] = w, wzp
			}
			y, err := convRun1(m, in)
			if err != nil {
				t.Fatal(err)
			}
			if y.DType != yType || !equalShape(y.Shape, sums.shape) {
				t.Fatalf("output %v%v", y.DType, y.Shape)
			}
			lo, hi, _ := matmul.IntRange(yType)
			got := y.Float64s()
			size := convProd(sums.shape[2:])
			for i, s := range sums.y {
				ch := i / size % 6
				mult := float64(float32(0.05) * ws[ch] / float32(0.7))
				want := min(max(math.RoundToEven((s+float64(bias[ch]))*mult+float64(yzp)), lo), hi)
				if got[i] != want {
					t.Fatalf("%v held=%v: y[%d] = %v, want %v", yType, held, i, got[i], want)
				}
			}
		}
	}
}

// TestConvBadInputs sends operands that cannot flow through each
// convolution: each is an input error (HTTP 400), never a panic.
func TestConvBadInputs(t *testing.T) {
	f32 := func(shape ...int) *tensor.Tensor { return tensor.From(shape, make([]float32, convProd(shape))) }
	nan := f32(1, 16, 4, 4)
	nan.Data.([]float32)[5] = float32(math.NaN())
	w16 := tensor.From([]int{64, 16, 3, 3}, convRandom(rand.New(rand.NewPCG(1, 1)), []int{64, 16, 3, 3}))
	for _, c := range []struct {
		name string
		s    convSpec
		w, b *tensor.Tensor
		in   map[string]*tensor.Tensor
		opts Options
	}{
		{"channels", convSpec{}, f32(2, 3, 3, 3), nil, map[string]*tensor.Tensor{"x": f32(1, 4, 5, 5), "w": f32(2, 3, 3, 3)}, Options{}},
		{"channels held", convSpec{constW: true}, f32(2, 3, 3, 3), nil, map[string]*tensor.Tensor{"x": f32(1, 4, 5, 5)}, Options{}},
		{"rank", convSpec{}, f32(2, 3, 3, 3), nil, map[string]*tensor.Tensor{"x": f32(1, 3, 5), "w": f32(2, 3, 3, 3)}, Options{}},
		{"weight rank", convSpec{}, f32(2, 3), nil, map[string]*tensor.Tensor{"x": f32(1, 3, 5), "w": f32(2, 3)}, Options{}},
		{"kernel beyond the input", convSpec{}, f32(2, 3, 3, 3), nil, map[string]*tensor.Tensor{"x": f32(1, 3, 2, 2), "w": f32(2, 3, 3, 3)}, Options{}},
		{"bias length", convSpec{}, f32(2, 3, 3, 3), f32(3), map[string]*tensor.Tensor{"x": f32(1, 3, 5, 5), "w": f32(2, 3, 3, 3), "b": f32(3)}, Options{}},
		{"groups", convSpec{attrs: []*onnxpb.Attribute{convInt("group", 2)}}, f32(3, 2, 3, 3), nil, map[string]*tensor.Tensor{"x": f32(1, 4, 5, 5), "w": f32(3, 2, 3, 3)}, Options{}},
		{"strides length", convSpec{attrs: []*onnxpb.Attribute{convInts("strides", 1, 1, 1)}}, f32(2, 3, 3, 3), nil, map[string]*tensor.Tensor{"x": f32(1, 3, 5, 5), "w": f32(2, 3, 3, 3)}, Options{}},
		{"kernel_shape", convSpec{attrs: []*onnxpb.Attribute{convInts("kernel_shape", 2, 2)}}, f32(2, 3, 3, 3), nil, map[string]*tensor.Tensor{"x": f32(1, 3, 5, 5), "w": f32(2, 3, 3, 3)}, Options{}},
		{"huge output", convSpec{attrs: []*onnxpb.Attribute{convInts("pads", 1<<31, 1<<31, 1<<31, 1<<31)}}, f32(2, 3, 1, 1), nil, map[string]*tensor.Tensor{"x": f32(1, 3, 5, 5), "w": f32(2, 3, 1, 1)}, Options{}},
		{"NaN on the int8 tiles", convSpec{constW: true}, w16, nil, map[string]*tensor.Tensor{"x": nan}, Options{Quantize: true}},
		{"type", convSpec{}, f32(2, 3, 3, 3), nil, map[string]*tensor.Tensor{"x": f32(1, 3, 5, 5), "w": tensor.From([]int{2, 3, 3, 3}, make([]float64, 54))}, Options{}},
		{"transpose channels", convSpec{op: "ConvTranspose"}, f32(2, 3, 3, 3), nil, map[string]*tensor.Tensor{"x": f32(1, 3, 5, 5), "w": f32(2, 3, 3, 3)}, Options{}},
		{"transpose output_shape", convSpec{op: "ConvTranspose", attrs: []*onnxpb.Attribute{convInts("output_shape", 4, 4, 4)}}, f32(3, 2, 3, 3), nil, map[string]*tensor.Tensor{"x": f32(1, 3, 5, 5), "w": f32(3, 2, 3, 3)}, Options{}},
		{"transpose negative output", convSpec{op: "ConvTranspose", attrs: []*onnxpb.Attribute{convInts("pads", 9, 9, 9, 9)}}, f32(3, 2, 3, 3), nil, map[string]*tensor.Tensor{"x": f32(1, 3, 5, 5), "w": f32(3, 2, 3, 3)}, Options{}},
		{"transpose bias", convSpec{op: "ConvTranspose"}, f32(3, 2, 3, 3), f32(3), map[string]*tensor.Tensor{"x": f32(1, 3, 5, 5), "w": f32(3, 2, 3, 3), "b": f32(3)}, Options{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.s.x = nil
			m, err := LoadWith(convModelBytes(c.s, c.w, c.b), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.Run(context.Background(), c.in, nil)
			if !errors.Is(err, ErrInput) {
				t.Fatalf("error %v, want an input error", err)
			}
		})
	}
}

// TestConvBadAttributes loads malformed convolutions: refused at load.
func TestConvBadAttributes(t *testing.T) {
	w := tensor.From([]int{2, 3, 3, 3}, make([]float32, 54))
	for _, attrs := range [][]*onnxpb.Attribute{
		{convStr("auto_pad", "SAME")},
		{convInts("strides", 0, 1)},
		{convInts("dilations", -1, 1)},
		{convInts("pads", -1, 0, 0, 0)},
		{convInts("pads", 1, 1, 1)},
		{convInt("group", 0)},
		{convInts("kernel_shape", 3, 2)}, // does not fit the held weight
		{convInt("not_an_attribute", 1)},
	} {
		for _, op := range []string{"Conv", "ConvTranspose"} {
			if _, err := LoadWith(convModelBytes(convSpec{op: op, constW: true, attrs: attrs}, w, nil), Options{}); err == nil {
				t.Errorf("%s %s: loaded", op, attrs[0].Name)
			}
		}
	}
}

// TestConvEmpty runs convolutions with empty batches and channel sets.
func TestConvEmpty(t *testing.T) {
	f32 := func(shape ...int) *tensor.Tensor { return tensor.From(shape, make([]float32, convProd(shape))) }
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
		{"Conv", f32(0, 16, 5, 5), f32(16, 1, 3, 3), []int{0, 16, 3, 3}, true, []*onnxpb.Attribute{convInt("group", 16)}, 16},
		{"Conv", f32(1, 3, 0, 5), f32(4, 3, 1, 1), []int{1, 4, 0, 5}, false, nil, 4},
		{"Conv", f32(1, 3, 0, 5), f32(4, 3, 3, 3), []int{1, 4, 0, 5}, false, []*onnxpb.Attribute{convStr("auto_pad", "SAME_UPPER")}, 4},
		{"ConvTranspose", f32(0, 3, 5, 5), f32(3, 4, 3, 3), []int{0, 4, 7, 7}, false, nil, 4},
		{"ConvTranspose", f32(2, 3, 5, 5), f32(3, 0, 3, 3), []int{2, 0, 7, 7}, false, nil, 0},
	} {
		for _, held := range []bool{false, true} {
			b := f32(c.biasLen)
			for i := range b.Data.([]float32) {
				b.Data.([]float32)[i] = 1.5
			}
			s := convSpec{op: c.op, constW: held, attrs: c.attrs}
			m, err := LoadWith(convModelBytes(s, c.w, b), Options{Quantize: c.quant})
			if err != nil {
				t.Fatal(err)
			}
			in := map[string]*tensor.Tensor{"x": c.x}
			if !held {
				in["w"], in["b"] = c.w, b
			}
			y, err := convRun1(m, in)
			if err != nil {
				t.Fatalf("%s %v × %v held=%v: %v", c.op, c.x.Shape, c.w.Shape, held, err)
			}
			if !equalShape(y.Shape, c.want) || y.Len() != convProd(c.want) {
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

// deformModel writes DeformConv over graph inputs x, w, offset, b, mask.
func deformModel(attrs []*onnxpb.Attribute, withMask bool) []byte {
	vi := func(name string) *onnxpb.ValueInfo {
		return &onnxpb.ValueInfo{Name: name, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float}}
	}
	inputs := []string{"x", "w", "offset", "b"}
	if withMask {
		inputs = append(inputs, "mask")
	}
	g := &onnxpb.Graph{Name: "deform", Outputs: []*onnxpb.ValueInfo{vi("y")}}
	for _, n := range inputs {
		g.Inputs = append(g.Inputs, vi(n))
	}
	g.Nodes = []*onnxpb.Node{{OpType: "DeformConv", Name: "conv", Inputs: inputs, Outputs: []string{"y"}, Attributes: attrs}}
	return onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: 19}}, Graph: g})
}

// TestDeformConv checks DeformConv against Conv: zero offsets sample the
// grid (Conv), a mask scales every tap, a whole-pixel offset shifts the
// input, and a half-pixel offset interpolates halfway.
func TestDeformConv(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	for _, c := range []struct {
		name        string
		x, w        []int
		group, og   int
		strides     []int
		pads        []int
		shift, mask float32 // offset along the last axis; mask value (0: none)
	}{
		{"grid 2-D groups", []int{2, 4, 7, 6}, []int{6, 2, 3, 2}, 2, 2, []int{2, 1}, []int{1, 1, 1, 0}, 0, 0},
		{"grid 1-D", []int{1, 3, 9}, []int{2, 3, 3}, 1, 3, []int{1}, []int{1, 1}, 0, 0},
		{"grid 3-D", []int{1, 2, 4, 5, 4}, []int{3, 2, 2, 3, 2}, 1, 1, []int{1, 1, 1}, []int{0, 1, 0, 1, 1, 1}, 0, 0},
		{"mask", []int{1, 4, 6, 6}, []int{4, 4, 3, 3}, 1, 2, []int{1, 1}, []int{1, 1, 1, 1}, 0, 0.5},
		{"whole-pixel offset", []int{1, 2, 6, 7}, []int{3, 2, 3, 3}, 1, 1, []int{1, 1}, []int{1, 1, 1, 1}, 1, 0},
		{"half-pixel offset", []int{1, 2, 6, 7}, []int{3, 2, 3, 3}, 1, 1, []int{1, 1}, []int{1, 1, 1, 1}, 0.5, 0.75},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := len(c.x) - 2
			xv, wv, bv := convRandom(r, c.x), convRandom(r, c.w), convRandom(r, []int{c.w[0]})
			dil := make([]int, d)
			for i := range dil {
				dil[i] = 1
			}
			conv := func(shiftPads int) refResult {
				p := slices.Clone(c.pads)
				p[d-1] -= shiftPads
				p[2*d-1] += shiftPads
				return refConvolve(xv, c.x, wv, c.w, bv, c.group, c.strides, dil, p, false)
			}
			base := conv(0)
			out := base.shape[2:]
			kk := convProd(c.w[2:])
			offShape := append([]int{c.x[0], c.og * kk * d}, out...)
			off := make([]float32, convProd(offShape))
			osz := convProd(out)
			for i := range off {
				if (i/osz)%d == d-1 {
					off[i] = c.shift
				}
			}
			i64 := func(v []int) []int64 {
				r := make([]int64, len(v))
				for i, x := range v {
					r[i] = int64(x)
				}
				return r
			}
			attrs := []*onnxpb.Attribute{convInt("group", int64(c.group)), convInt("offset_group", int64(c.og)), convInts("strides", i64(c.strides)...), convInts("pads", i64(c.pads)...), convInts("kernel_shape", i64(c.w[2:])...)}
			in := map[string]*tensor.Tensor{"x": tensor.From(c.x, xv), "w": tensor.From(c.w, wv), "offset": tensor.From(offShape, off), "b": tensor.From([]int{c.w[0]}, bv)}
			if c.mask != 0 {
				ms := append([]int{c.x[0], c.og * kk}, out...)
				mv := make([]float32, convProd(ms))
				for i := range mv {
					mv[i] = c.mask
				}
				in["mask"] = tensor.From(ms, mv)
			}
			m, err := Load(deformModel(attrs, c.mask != 0))
			if err != nil {
				t.Fatal(err)
			}
			y, err := convRun1(m, in)
			if err != nil {
				t.Fatal(err)
			}
			want := base
			scale := 1.0
			if c.mask != 0 {
				scale = float64(c.mask)
			}
			switch c.shift {
			case 1:
				want = conv(1)
			case 0.5:
				s1 := conv(1)
				want.y = slices.Clone(base.y)
				for i := range want.y {
					want.y[i] = (base.y[i] + s1.y[i]) / 2
					want.mag[i] = base.mag[i] + s1.mag[i]
				}
			}
			if scale != 1 {
				want.y = slices.Clone(want.y)
				for i := range want.y {
					b := float64(bv[i/osz%c.w[0]])
					want.y[i] = (want.y[i]-b)*scale + b
				}
			}
			want.check(t, y, false)
		})
	}
	// an offset of the wrong shape is an input error
	m, err := Load(deformModel(nil, false))
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Run(context.Background(), map[string]*tensor.Tensor{
		"x": tensor.From([]int{1, 1, 3, 3}, make([]float32, 9)), "w": tensor.From([]int{1, 1, 2, 2}, make([]float32, 4)),
		"offset": tensor.From([]int{1, 4, 2, 2}, make([]float32, 16)), "b": tensor.From([]int{1}, make([]float32, 1)),
	}, nil)
	if !errors.Is(err, ErrInput) {
		t.Errorf("offset of 4 channels for 8: %v, want an input error", err)
	}
}

// TestConvMemoryIsBoundedByTiles runs a 3×3 32→32 convolution over a
// 96×96 image, whose whole im2col matrix is 9 images' size, and checks
// that a run allocates at most 3 images' worth (the output and the
// channels-last copy among them).
func TestConvMemoryIsBoundedByTiles(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	xs, ws := []int{1, 32, 96, 96}, []int{32, 32, 3, 3}
	x := tensor.From(xs, convRandom(r, xs))
	w := tensor.From(ws, convRandom(r, ws))
	im2col := 96 * 96 * 32 * 9 * 4
	for _, q := range []bool{true, false} {
		m := convLoad(t, convSpec{x: xs, constW: true, attrs: []*onnxpb.Attribute{convInts("pads", 1, 1, 1, 1)}}, w, nil, Options{Quantize: q, Scheme: quant.PerChannel})
		in := map[string]*tensor.Tensor{"x": x}
		if _, err := convRun1(m, in); err != nil { // warm the buffer pools
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := convRun1(m, in); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		alloc := int(after.TotalAlloc - before.TotalAlloc)
		if limit := 3 * 4 * x.Len(); alloc > limit {
			t.Errorf("%s: a run allocated %d bytes, more than 3 images (%d); the im2col matrix is %d", m.Layers[0].Kernels, alloc, limit, im2col)
		}
		t.Logf("%s: %.2f MB allocated per run (image %.2f MB, im2col %.2f MB)", m.Layers[0].Kernels, float64(alloc)/1e6, float64(4*x.Len())/1e6, float64(im2col)/1e6)
	}
}

// convPoint is one output of a 2-D, one-group, undilated convolution by
// its definition: its value and Σ|x·w|.
func convPoint(x []float32, xs []int, w []float32, ws []int, bias []float32, strides, pads []int, b, m, oy, ox int) (float64, float64) {
	c, h, wd := xs[1], xs[2], xs[3]
	kh, kw := ws[2], ws[3]
	s := float64(bias[m])
	var mag float64
	for ci := 0; ci < c; ci++ {
		for ky := 0; ky < kh; ky++ {
			iy := oy*strides[0] - pads[0] + ky
			if iy < 0 || iy >= h {
				continue
			}
			for kx := 0; kx < kw; kx++ {
				ix := ox*strides[1] - pads[1] + kx
				if ix < 0 || ix >= wd {
					continue
				}
				xv := x[((b*c+ci)*h+iy)*wd+ix]
				wv := w[((m*c+ci)*kh+ky)*kw+kx]
				s += float64(xv) * float64(wv)
				mag += convAbs(xv) * convAbs(wv)
			}
		}
	}
	return s, mag
}

// TestConvReluConvChain runs Conv→Relu→Conv over 224×224 images at batch 1
// and 8: outputs sampled across the image match the definition (float32),
// every image of the batch gives the bits it gives alone, and int8 stays
// within 2% of the output range of float32.
func TestConvReluConvChain(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	w1s, w2s := []int{16, 3, 3, 3}, []int{64, 16, 3, 3}
	w1, w2 := tensor.From(w1s, convRandom(r, w1s)), tensor.From(w2s, convRandom(r, w2s))
	b1, b2 := tensor.From([]int{16}, convRandom(r, []int{16})), tensor.From([]int{64}, convRandom(r, []int{64}))
	vi := func(name string, shape ...int) *onnxpb.ValueInfo {
		t := &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float, HasShape: true}
		for i, d := range shape {
			if i == 0 {
				t.Shape = append(t.Shape, onnxpb.Dim{Param: "N"})
			} else {
				t.Shape = append(t.Shape, onnxpb.Dim{Value: int64(d), HasValue: true})
			}
		}
		return &onnxpb.ValueInfo{Name: name, Type: t}
	}
	const side, out = 224, 56 // the second convolution has stride 4
	g := &onnxpb.Graph{
		Name:    "chain",
		Inputs:  []*onnxpb.ValueInfo{vi("x", -1, 3, side, side)},
		Outputs: []*onnxpb.ValueInfo{vi("y", -1, 64, out, out)},
		Initializers: []*onnxpb.Tensor{
			TensorToONNX("w1", w1), TensorToONNX("b1", b1), TensorToONNX("w2", w2), TensorToONNX("b2", b2),
		},
		Nodes: []*onnxpb.Node{
			{OpType: "Conv", Name: "conv1", Inputs: []string{"x", "w1", "b1"}, Outputs: []string{"h"}, Attributes: []*onnxpb.Attribute{convInts("pads", 1, 1, 1, 1)}},
			{OpType: "Relu", Name: "relu", Inputs: []string{"h"}, Outputs: []string{"hr"}},
			{OpType: "Conv", Name: "conv2", Inputs: []string{"hr", "w2", "b2"}, Outputs: []string{"y"}, Attributes: []*onnxpb.Attribute{convInts("pads", 1, 1, 1, 1), convInts("strides", 4, 4)}},
		},
	}
	data := onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: 17}}, Graph: g})
	const batch = 8
	xs := []int{batch, 3, side, side}
	xv := convRandom(r, xs)
	image := 3 * side * side
	outImage := 64 * out * out
	// relu(conv1) at one position, every channel, by the definition
	hr := func(b, y, x int) []float32 {
		v := make([]float32, 16)
		if y < 0 || y >= side || x < 0 || x >= side {
			return v // conv2's padding
		}
		for c := range v {
			s, _ := convPoint(xv, xs, w1.Data.([]float32), w1s, b1.Data.([]float32), []int{1, 1}, []int{1, 1}, b, c, y, x)
			v[c] = float32(max(s, 0))
		}
		return v
	}
	var float8 []float32
	for _, q := range []bool{false, true} {
		m, err := LoadWith(data, Options{Quantize: q, Scheme: quant.PerChannel})
		if err != nil {
			t.Fatal(err)
		}
		if q && (m.Layers[0].Kernels != "float32 (input layer: 3 input channels)" || m.Layers[1].Kernels != "int8 per_channel") {
			t.Fatalf("layers %+v", m.Layers)
		}
		all, err := convRun1(m, map[string]*tensor.Tensor{"x": tensor.From(xs, xv)})
		if err != nil {
			t.Fatal(err)
		}
		if !equalShape(all.Shape, []int{batch, 64, out, out}) {
			t.Fatalf("batch output %v", all.Shape)
		}
		yv := all.Data.([]float32)
		for _, i := range []int{0, 5} {
			one, err := convRun1(m, map[string]*tensor.Tensor{"x": tensor.From([]int{1, 3, side, side}, xv[i*image:(i+1)*image])})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(one.Data.([]float32), yv[i*outImage:(i+1)*outImage]) {
				t.Errorf("int8=%v: image %d of the batch differs from the image alone", q, i)
			}
		}
		if !q { // sampled outputs of images 0 and 7 against the definition
			for _, b := range []int{0, batch - 1} {
				for o := 0; o < out*out; o += 37 {
					oy, ox := o/out, o%out
					m := (o / 37) % 64
					want, mag := float64(b2.Data.([]float32)[m]), 0.0
					for ky := 0; ky < 3; ky++ {
						for kx := 0; kx < 3; kx++ {
							h := hr(b, oy*4-1+ky, ox*4-1+kx)
							for c, v := range h {
								wv := w2.Data.([]float32)[((m*16+c)*3+ky)*3+kx]
								want += float64(v) * float64(wv)
								mag += convAbs(v) * convAbs(wv)
							}
						}
					}
					got := yv[((b*64+m)*out+oy)*out+ox]
					if d := math.Abs(float64(got) - want); d > 1e-5*(mag+1)*2 {
						t.Fatalf("image %d y[%d][%d][%d] = %v, want %v", b, m, oy, ox, got, want)
					}
				}
			}
			float8 = yv
			continue
		}
		lo, hi := slices.Min(float8), slices.Max(float8)
		for j, v := range yv {
			if math.Abs(float64(v-float8[j])) > 0.02*float64(hi-lo) {
				t.Fatalf("int8 y[%d] = %v, float32 %v: beyond 2%% of the range [%v, %v]", j, v, float8[j], lo, hi)
			}
		}
	}
}
