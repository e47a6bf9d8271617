package conv

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// compilerNode stands in for the graph compiler's record of a node
// (ops.Node.Host): it keeps the inputs the operator holds and, in the
// model's list it shares with the records of the node's parts, the
// layers reported ("op K×N kernels").
type compilerNode struct {
	op     string
	layers *[]string
	held   []int
}

func (h *compilerNode) AddLayer(k, cols int, kernels string) {
	*h.layers = append(*h.layers, fmt.Sprintf("%s %d×%d %s", h.op, k, cols, kernels))
}

func (h *compilerNode) HoldInputs(i ...int) { h.held = append(h.held, i...) }

// spec is one node to compile as the graph compiler would.
type spec struct {
	domain   string
	op       string
	opset    int64 // 22 when 0
	attrs    []*onnxpb.Attribute
	inputs   int              // how many inputs
	consts   []*tensor.Tensor // inputs known at load (may be shorter)
	absent   []int            // inputs the node leaves out ("")
	engine   *gemm.Engine     // gemm.Default() when nil
	quantize bool             // the model's options
	scheme   quant.Scheme     // with quantize
}

// compiled is an operator compiled from a spec, with what it told the
// compiler.
type compiled struct {
	op   ops.Operator
	host *compilerNode
	e    *gemm.Engine
}

// layers returns the layers the node reported.
func (c *compiled) layers() []string { return *c.host.layers }

// compile builds s with the registry's operator.
func compile(s spec) (*compiled, error) {
	if s.opset == 0 {
		s.opset = 22
	}
	d, err := ops.Lookup(s.domain, s.op, s.opset)
	if err != nil {
		return nil, err
	}
	host := &compilerNode{op: s.op, layers: new([]string)}
	e := s.engine
	if e == nil {
		e = gemm.Default()
	}
	n := &ops.Node{Name: "conv", Type: s.op, Domain: ops.NormDomain(s.domain), Opset: s.opset, Attrs: map[string]*onnxpb.Attribute{},
		Consts: make([]*tensor.Tensor, s.inputs), Outputs: []string{"y"}, Engine: e, Quantize: s.quantize, Scheme: s.scheme, Host: host}
	n.PartHost = func(p *ops.Node) any { return &compilerNode{op: p.Type, layers: host.layers} }
	copy(n.Consts, s.consts)
	for i := range s.inputs {
		n.Inputs = append(n.Inputs, fmt.Sprintf("in%d", i))
	}
	for _, i := range s.absent {
		n.Inputs[i] = ""
	}
	for _, a := range s.attrs {
		n.Attrs[a.Name] = a
	}
	attrs, err := d.Parse(n)
	if err != nil {
		return nil, err
	}
	op, err := d.Build(n, attrs)
	if err != nil {
		return nil, err
	}
	return &compiled{op: op, host: host, e: e}, nil
}

// mustCompile is compile that fails the test on an error.
func mustCompile(t testing.TB, s spec) *compiled {
	t.Helper()
	c, err := compile(s)
	if err != nil {
		t.Fatalf("%s: %v", s.op, err)
	}
	return c
}

// run runs the operator on in outside any request, as the graph compiler
// does: the inputs the operator holds are not fed (nil).
func (c *compiled) run(in ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	return c.runWith(ops.NewContext(context.Background(), c.e, false), in...)
}

// runWith is run under the Context oc.
func (c *compiled) runWith(oc *ops.Context, in ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	in = slices.Clone(in)
	for _, i := range c.host.held {
		if i < len(in) {
			in[i] = nil
		}
	}
	return c.op.Run(oc, in)
}

// run1 runs the operator and returns its output, or its error.
func (c *compiled) run1(in ...*tensor.Tensor) (*tensor.Tensor, error) {
	out, err := c.run(in...)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// engines returns an engine for every kernel table this CPU runs, with
// one and two threads.
var engines = sync.OnceValue(func() []*gemm.Engine {
	var es []*gemm.Engine
	for _, tb := range dispatch.Available() {
		es = append(es, gemm.New(tb, 1), gemm.New(tb, 2))
	}
	return es
})

// absentInputs returns the positions of the nil inputs in in: the
// optional inputs an operator under test is compiled without.
func absentInputs(in []*tensor.Tensor) []int {
	var absent []int
	for i, v := range in {
		if v == nil {
			absent = append(absent, i)
		}
	}
	return absent
}

func engineName(e *gemm.Engine) string { return fmt.Sprintf("%s×%d", e.Table().Name, e.Threads()) }

func randomFloats(r *rand.Rand, shape []int) []float32 {
	v := make([]float32, ops.ProdInts(shape))
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// castTo converts x to dt.
func castTo(t testing.TB, x *tensor.Tensor, dt tensor.DataType) *tensor.Tensor {
	t.Helper()
	y, err := tensorops.CastTo(x, dt)
	if err != nil {
		t.Fatal(err)
	}
	return y
}

// ints64 returns v as int64s.
func ints64(v []int) []int64 {
	r := make([]int64, len(v))
	for i, x := range v {
		r[i] = int64(x)
	}
	return r
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

func absf(v float32) float64 { return math.Abs(float64(v)) }

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
	osz, ksz, isz := ops.ProdInts(out), ops.ProdInts(k), ops.ProdInts(in)
	maxW := make([]float64, m)
	var maxAll float64
	for mm := 0; mm < m; mm++ {
		for _, v := range w[mm*cg*ksz : (mm+1)*cg*ksz] {
			maxW[mm] = math.Max(maxW[mm], absf(v))
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
						sw += absf(wv)
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
						mag += absf(xv) * absf(wv)
						sx += absf(xv)
						mx = math.Max(mx, absf(xv))
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
	osz, ksz, isz := ops.ProdInts(out), ops.ProdInts(k), ops.ProdInts(in)
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
				colMax[j] = math.Max(colMax[j], absf(w[(mm*cog+co)*ksz+kidx]))
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
					rowMax = math.Max(rowMax, absf(x[(b*cin+mm)*isz+i]))
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
							r.mag[j] += absf(xv) * absf(wv)
							r.int8Tol[j] += 0.5 * (absf(xv)*colMax[(gi*cog+co)*ksz+kidx]/127 + absf(wv)*rowMax/64)
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
	if !ops.EqualShape(got.Shape, r.shape) {
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
	i64 := ints64
	if c.group > 1 {
		a = append(a, opstest.AttrInt("group", int64(c.group)))
	}
	if c.strides != nil {
		a = append(a, opstest.AttrInts("strides", i64(c.strides)...))
	}
	if c.dil != nil {
		a = append(a, opstest.AttrInts("dilations", i64(c.dil)...))
	}
	if c.pads != nil {
		a = append(a, opstest.AttrInts("pads", i64(c.pads)...))
	}
	if c.outPad != nil {
		a = append(a, opstest.AttrInts("output_padding", i64(c.outPad)...))
	}
	if c.outShape != nil {
		a = append(a, opstest.AttrInts("output_shape", i64(c.outShape)...))
	}
	if c.autoPad != "" {
		a = append(a, opstest.AttrString("auto_pad", c.autoPad))
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
		// Plane by plane (a few input channels, a few outputs): strides and
		// dilations whose taps fall in different column phases, rows wider
		// than the kernels' vectors with a tail, padding past the plane.
		{name: "input layer strided dilated asymmetric", x: []int{2, 2, 13, 47}, w: []int{3, 2, 3, 4}, strides: []int{2, 3}, dil: []int{2, 1}, pads: []int{0, 2, 1, 4}, bias: true},
		{name: "input layer 1-D", x: []int{2, 1, 41}, w: []int{4, 1, 5}, strides: []int{2}, dil: []int{2}, pads: []int{3, 1}},
		{name: "input layer text line", x: []int{1, 3, 12, 58}, w: []int{8, 3, 3, 3}, strides: []int{2, 2}, pads: []int{1, 1, 1, 1}, bias: true},
		{name: "input layer padding wider than the plane", x: []int{1, 3, 2, 3}, w: []int{2, 3, 3, 3}, strides: []int{1, 2}, pads: []int{3, 4, 2, 5}},
	}
}
