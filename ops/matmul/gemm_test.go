package matmul

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// gemmRefer is alpha·A'·B' + beta·C by the definition, in float64: A is
// m×k or, transposed, k×m; B likewise; C broadcasts to m×n.
func gemmRefer(a, b []float32, m, k, n int, transA, transB bool, alpha, beta float64, c *tensor.Tensor) (y, mag []float64) {
	y, mag = make([]float64, m*n), make([]float64, m*n)
	var cv []float64
	if c != nil {
		cv = c.Float64s()
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, g float64
			for p := 0; p < k; p++ {
				av, bv := a[i*k+p], b[p*n+j]
				if transA {
					av = a[p*m+i]
				}
				if transB {
					bv = b[j*k+p]
				}
				s += float64(av) * float64(bv)
				g += math.Abs(float64(av) * float64(bv))
			}
			y[i*n+j], mag[i*n+j] = alpha*s, math.Abs(alpha)*g
			if cv != nil {
				ci := 0 // C broadcast: its last dimension runs along j, a first of size M along i
				switch {
				case c.Rank() == 2 && c.Shape[0] == m && c.Shape[1] == n:
					ci = i*n + j
				case c.Rank() == 2 && c.Shape[0] == m:
					ci = i
				case c.Rank() >= 1 && c.Shape[c.Rank()-1] == n:
					ci = j
				}
				y[i*n+j] += beta * cv[ci]
				mag[i*n+j] += math.Abs(beta * cv[ci])
			}
		}
	}
	return y, mag
}

// TestGemm: every transposition and shape of C, B at run time and B
// constant (transposed once at load, held by the float kernels): the
// same bits either way, and the definition's values.
func TestGemm(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	const m, k, n = 5, 13, 9
	for _, transA := range []bool{false, true} {
		for _, transB := range []bool{false, true} {
			as, bs := []int{m, k}, []int{k, n}
			if transA {
				as = []int{k, m}
			}
			if transB {
				bs = []int{n, k}
			}
			a, b := randFloats(r, as...), randFloats(r, bs...)
			for _, c := range []*tensor.Tensor{nil, randFloats(r, n), randFloats(r, 1, n), randFloats(r, m, 1), randFloats(r), randFloats(r, m, n)} {
				attrs := []*onnxpb.Attribute{attrInt("transA", b2i(transA)), attrInt("transB", b2i(transB)), attrFloat("alpha", 2), attrFloat("beta", 0.5)}
				in := []*tensor.Tensor{a, b}
				if c != nil {
					in = append(in, c)
				}
				general, _ := mustCompile(t, spec{op: "Gemm", opset: 13, attrs: attrs, inputs: len(in)})
				held, host := mustCompile(t, spec{op: "Gemm", opset: 13, attrs: attrs, inputs: len(in), consts: []*tensor.Tensor{nil, b}})
				if lin := WeightOf(held); lin == nil || lin.K() != k || lin.N() != n || !slices.Equal(host.held, []int{1}) {
					t.Fatalf("transB %v: constant B not held: %+v, held %v", transB, lin, host.held)
				}
				y := run1(t, general, nil, in...)
				heldIn := slices.Clone(in)
				heldIn[1] = nil // the compiler feeds nothing for a held input
				z := run1(t, held, nil, heldIn...)
				if !slices.Equal(y.Shape, []int{m, n}) || !slices.Equal(z.Shape, []int{m, n}) {
					t.Fatalf("shapes %v and %v", y.Shape, z.Shape)
				}
				for i, v := range y.Data.([]float32) {
					if math.Float32bits(v) != math.Float32bits(z.Data.([]float32)[i]) {
						t.Fatalf("transA %v transB %v C %v: y[%d] = %v with B at run time, %v held", transA, transB, shapeOf(c), i, v, z.Data.([]float32)[i])
					}
				}
				want, mag := gemmRefer(a.Data.([]float32), b.Data.([]float32), m, k, n, transA, transB, 2, 0.5, c)
				within(t, "Gemm", y.Data.([]float32), want, mag, floatTol)
			}
		}
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func shapeOf(t *tensor.Tensor) []int {
	if t == nil {
		return nil
	}
	return t.Shape
}

// TestGemmConstantTransposedB: a worked example, x·wᵀ = [6, 15], then
// 2·that + 0.5·c.
func TestGemmConstantTransposedB(t *testing.T) {
	w := tensor.From([]int{2, 3}, []float32{1, 2, 3, 4, 5, 6}) // [N=2, K=3]
	c := tensor.From([]int{2}, []float32{100, 200})
	op, _ := mustCompile(t, spec{op: "Gemm", opset: 13, inputs: 3, consts: []*tensor.Tensor{nil, w, c},
		attrs: []*onnxpb.Attribute{attrInt("transB", 1), attrFloat("alpha", 2), attrFloat("beta", 0.5)}})
	y := run1(t, op, nil, tensor.From([]int{1, 3}, []float32{1, 1, 1}), nil, c)
	if !slices.Equal(y.Data.([]float32), []float32{62, 130}) {
		t.Errorf("got %v", y.Data)
	}
}

// TestGemmIntegers: integer Gemm (a constant B transposed at load, or B
// at run time) is exact, alpha and beta truncated to the type.
func TestGemmIntegers(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	const m, k, n = 3, 4, 5
	for _, dt := range []tensor.DataType{tensor.Int32, tensor.Int64, tensor.Float64} {
		av, bv, cv := make([]float64, m*k), make([]float64, n*k), make([]float64, n)
		for _, v := range [][]float64{av, bv, cv} {
			for i := range v {
				v[i] = float64(r.IntN(11) - 5)
			}
		}
		a, b, c := cast(t, tensor.From([]int{m, k}, av), dt), cast(t, tensor.From([]int{n, k}, bv), dt), cast(t, tensor.From([]int{n}, cv), dt)
		attrs := []*onnxpb.Attribute{attrInt("transB", 1), attrFloat("alpha", 3), attrFloat("beta", 2)}
		want, _ := gemmRefer(toF32(av), toF32(bv), m, k, n, false, true, 3, 2, tensor.From([]int{n}, cv))
		for _, consts := range [][]*tensor.Tensor{nil, {nil, b}} {
			op, host := mustCompile(t, spec{op: "Gemm", opset: 13, attrs: attrs, inputs: 3, consts: consts})
			if WeightOf(op) != nil || len(host.held) != 0 {
				t.Fatalf("%v: a weight the float kernels do not take is held", dt)
			}
			y := run1(t, op, nil, a, b, c)
			if got := cast(t, y, tensor.Float64).Data.([]float64); y.DType != dt || !slices.Equal(got, want) {
				t.Fatalf("%v (B constant %v): %v %v, want %v", dt, consts != nil, y.DType, got, want)
			}
		}
	}
}

func toF32(v []float64) []float32 {
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	return f
}

// TestGemmErrors: operands Gemm cannot take are the request's error.
func TestGemmErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	w := randFloats(r, 4, 3)
	for _, consts := range [][]*tensor.Tensor{nil, {nil, w}} {
		op, _ := mustCompile(t, spec{op: "Gemm", opset: 13, inputs: 3, consts: consts})
		for _, c := range []struct {
			name    string
			a, b, c *tensor.Tensor
		}{
			{"3-D A", randFloats(r, 1, 2, 4), w, nil},
			{"A of another type", tensor.From([]int{2, 4}, make([]float64, 8)), w, nil},
			{"C of another type", randFloats(r, 2, 4), w, tensor.From([]int{3}, make([]float64, 3))},
			{"C that does not broadcast", randFloats(r, 2, 4), w, randFloats(r, 4)},
			{"inner dimensions", randFloats(r, 2, 5), w, nil},
		} {
			if _, err := run(op, nil, c.a, c.b, c.c); !errors.Is(err, ops.ErrInput) {
				t.Errorf("B constant %v, %s: %v, want an input error", consts != nil, c.name, err)
			}
		}
	}
}
