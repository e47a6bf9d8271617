package conv

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/matmul"
	"github.com/quantserve/quantserve/ops/opstest"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

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
	n := ops.ProdInts(shape)
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
	t, _ := tensorops.CastTo(tensor.From(shape, f), dt)
	return t
}

// convIntNode compiles ConvInteger (qlinear false) or QLinearConv for
// case c: the weight w and its zero points wzp constants when held, the
// other operands (extra) constants always, and returns the operator with
// its inputs, x first.
func convIntNode(t *testing.T, c convIntCase, held, qlinear bool, w, wzp, x *tensor.Tensor, extra map[string]*tensor.Tensor, e *gemm.Engine) (*compiled, []*tensor.Tensor) {
	t.Helper()
	var attrs []*onnxpb.Attribute
	if c.group > 1 {
		attrs = append(attrs, opstest.AttrInt("group", int64(c.group)))
	}
	if c.pads != nil {
		attrs = append(attrs, opstest.AttrInts("pads", ints64(c.pads)...))
	}
	var in []*tensor.Tensor
	var consts []*tensor.Tensor
	heldIf := func(v *tensor.Tensor) *tensor.Tensor {
		if held {
			return v
		}
		return nil
	}
	op := "ConvInteger"
	if qlinear {
		op = "QLinearConv"
		in = []*tensor.Tensor{x, extra["xs"], extra["xzp"], w, extra["ws"], wzp, extra["ys"], extra["yzp"], extra["bias"]}
		consts = []*tensor.Tensor{nil, extra["xs"], extra["xzp"], heldIf(w), extra["ws"], heldIf(wzp), extra["ys"], extra["yzp"], extra["bias"]}
	} else {
		in = []*tensor.Tensor{x, w, extra["xzp"]}
		consts = []*tensor.Tensor{nil, heldIf(w), extra["xzp"]}
		if wzp != nil {
			in, consts = append(in, wzp), append(consts, heldIf(wzp))
		}
	}
	return mustCompile(t, spec{op: op, opset: 13, attrs: attrs, inputs: len(in), consts: consts, engine: e}), in
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
				w = castTo(t, tensor.From(c.w, f), c.wType)
			}
			want := convIntRef(c, x, w)
			wzp := convZP(c.wType, c.wzp)
			extra := map[string]*tensor.Tensor{"xzp": convZP(c.xType, []int64{c.xzp})}
			for _, e := range engines() {
				for _, held := range []bool{true, false} {
					cp, in := convIntNode(t, c, held, false, w, wzp, x, extra, e)
					if held && (len(cp.layers()) != 1 || !strings.Contains(cp.layers()[0], " int8 exact")) {
						t.Errorf("layers %q", cp.layers())
					}
					if held && !slices.Equal(cp.host.held, []int{1, 3}) {
						t.Errorf("holds inputs %v, want [1 3]", cp.host.held)
					}
					y, err := cp.run1(in...)
					if err != nil {
						t.Fatalf("%s held=%v: %v", engineName(e), held, err)
					}
					if !ops.EqualShape(y.Shape, want.shape) || y.DType != tensor.Int32 {
						t.Fatalf("output %v%v, want INT32%v", y.DType, y.Shape, want.shape)
					}
					for i, v := range y.Data.([]int32) {
						if float64(v) != want.y[i] {
							t.Fatalf("%s held=%v: y[%d] = %d, want %v", engineName(e), held, i, v, want.y[i])
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
			cp, in := convIntNode(t, c, held, true, w, wzp, x, extra, nil)
			if held && !slices.Equal(cp.host.held, []int{3, 5}) {
				t.Errorf("holds inputs %v, want [3 5]", cp.host.held)
			}
			y, err := cp.run1(in...)
			if err != nil {
				t.Fatal(err)
			}
			if y.DType != yType || !ops.EqualShape(y.Shape, sums.shape) {
				t.Fatalf("output %v%v", y.DType, y.Shape)
			}
			lo, hi, _ := matmul.IntRange(yType)
			got := y.Float64s()
			size := ops.ProdInts(sums.shape[2:])
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
