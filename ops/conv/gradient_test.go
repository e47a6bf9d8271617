package conv

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// refWeightGradient is dW[m][ci][k] = Σ_b Σ_o dy[b][m][o] ·
// x[b][g·Cg+ci][o·s − p + k·d] by the definition, in float64, with Σ|·|
// of its terms.
func refWeightGradient(g *Geometry, x, dy []float32) (dw, mag []float64) {
	d := len(g.In)
	inSize, outSize, kk := g.InSize(), g.OutSize(), g.KernelSize()
	cg, mg := g.cg(), g.mg()
	dw, mag = make([]float64, g.M*cg*kk), make([]float64, g.M*cg*kk)
	oc, kc := make([]int, d), make([]int, d)
	for b := 0; b < g.Batch; b++ {
		for m := 0; m < g.M; m++ {
			gi := m / mg
			for o := 0; o < outSize; o++ {
				rem := o
				for i := d - 1; i >= 0; i-- {
					oc[i], rem = rem%g.Out[i], rem/g.Out[i]
				}
				dv := float64(dy[(b*g.M+m)*outSize+o])
				for ci := 0; ci < cg; ci++ {
					for kidx := 0; kidx < kk; kidx++ {
						rem := kidx
						for i := d - 1; i >= 0; i-- {
							kc[i], rem = rem%g.Kernel[i], rem/g.Kernel[i]
						}
						lin, ok := 0, true
						for i := 0; i < d; i++ {
							v := oc[i]*g.Strides[i] - g.PadBegin[i] + kc[i]*g.Dilations[i]
							if v < 0 || v >= g.In[i] {
								ok = false
								break
							}
							lin = lin*g.In[i] + v
						}
						if ok {
							xv := float64(x[(b*g.C+gi*cg+ci)*inSize+lin])
							j := (m*cg+ci)*kk + kidx
							dw[j] += dv * xv
							mag[j] += math.Abs(dv * xv)
						}
					}
				}
			}
		}
	}
	return dw, mag
}

// TestGradientProducts checks the products the backward passes run on
// every table, against the definitions: Forward is Conv without bias,
// Adjoint is ConvTranspose, WeightGradient the weight gradient.
func TestGradientProducts(t *testing.T) {
	for _, c := range convTestCases() {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(len(c.name)), 41))
			group, strides, dil, pads := c.axes()
			at := &ConvAttrs{Group: int64(group), Strides: ints64(strides), Dilations: ints64(dil), Pads: ints64(pads)}
			g, err := at.Geometry(c.x, c.w)
			if err != nil {
				t.Fatal(err)
			}
			x, w := randomFloats(r, c.x), randomFloats(r, c.w)
			ys := append([]int{g.Batch, g.M}, g.Out...)
			dy := randomFloats(r, ys)
			fwd := refConvolve(x, c.x, w, c.w, nil, group, strides, dil, pads, false)
			adj := refConvTranspose(dy, ys, w, c.w, nil, group, strides, dil, g.PadBegin, g.In)
			dwRef, dwMag := refWeightGradient(g, x, dy)
			for _, e := range engines() {
				y, err := Forward(e, g, x, w)
				if err != nil {
					t.Fatal(err)
				}
				fwd.check(t, tensor.From(ys, y), false)
				dx, err := Adjoint(e, g, dy, w)
				if err != nil {
					t.Fatal(err)
				}
				adj.check(t, tensor.From(c.x, dx), false)
				dw, err := WeightGradient(e, g, x, dy)
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range dw {
					if d := math.Abs(float64(v) - dwRef[i]); !(d <= 1e-5*(dwMag[i]+1)) {
						t.Fatalf("%s: dW[%d] = %v, want %v", engineName(e), i, v, dwRef[i])
					}
				}
			}
		})
	}
	g := &Geometry{Batch: 1, C: 2, M: 2, Group: 1, In: []int{3}, Out: []int{3}, Kernel: []int{1}, Strides: []int{1}, Dilations: []int{1}, PadBegin: []int{0}}
	if _, err := Forward(nil, g, make([]float32, 5), make([]float32, 4)); err == nil {
		t.Error("Forward of 5 values for 6: no error")
	}
	if _, err := WeightGradient(nil, g, make([]float32, 6), make([]float32, 5)); err == nil {
		t.Error("WeightGradient of 5 values of dy for 6: no error")
	}
}

// TestHeldWeight: the operators give the gradient code their geometry
// and, in builds with the autodiff tag, the weight their kernels hold
// (dequantized when int8); nil for a weight given at run time.
func TestHeldWeight(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 42))
	ws := []int{64, 16, 3, 3}
	w := tensor.From(ws, randomFloats(r, ws))
	for _, q := range []bool{false, true} {
		cp := mustCompile(t, spec{op: "Conv", inputs: 2, consts: []*tensor.Tensor{nil, w}, quantize: q})
		op := cp.op.(*Convolution)
		g, err := op.Geometry([]int{1, 16, 8, 8}, ws)
		if err != nil || g.M != 64 || g.C != 16 || g.OutSize() != 36 {
			t.Fatalf("geometry %+v, %v", g, err)
		}
		h := op.HeldWeight()
		if !dispatch.AutodiffBuilt {
			if h != nil {
				t.Errorf("int8=%v: a held weight without the autodiff tag", q)
			}
			continue
		}
		if h == nil || !ops.EqualShape(h.Shape, ws) {
			t.Fatalf("int8=%v: held weight %v", q, h)
		}
		same := true
		for i, v := range h.Data.([]float32) {
			same = same && v == w.Data.([]float32)[i]
		}
		if same == q {
			t.Errorf("int8=%v: the held weight equals the file's: %v", q, same)
		}
	}
	op := mustCompile(t, spec{op: "Conv", inputs: 2}).op.(*Convolution)
	if op.HeldWeight() != nil {
		t.Error("a weight given at run time is held")
	}
	top := mustCompile(t, spec{op: "ConvTranspose", inputs: 2}).op.(*Transposed)
	if top.HeldWeight() != nil {
		t.Error("a ConvTranspose weight given at run time is held")
	}
}
