package linalg

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

// einsumEquations are equations the lowering to matrix products must
// agree with the strided walk on.
var einsumEquations = []string{
	"ij,jk->ik", "bij,bjk->bik", "i,i", "ij->ji", "ii->i", "...ii->...i", "ij->i", "ij,ij->ij",
	"ij,kj->ik", "abc,cd,de->abe", "i,j->ij", "ab,b", "...ij,...jk", "ijk,ikl->jl", "ii", ",i->i",
	"bhqd,bhkd->bhqk", "bhqk,bhkd->bhqd", "ij,jk,kl->il", "aab,bc->ac", "ab,cd->", "Ab,bA->A",
}

func TestEinsumLoweringMatchesGeneralWalk(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	c := ops.NewContext(context.Background(), gemm.Default(), false)
	for _, eq := range einsumEquations {
		for trial := 0; trial < 3; trial++ {
			size := map[byte]int{}
			lhs, _, _ := strings.Cut(eq, "->")
			terms := strings.Split(lhs, ",")
			var ins []*tensor.Tensor
			for _, term := range terms {
				var shape []int
				for i := 0; i < len(term); i++ {
					if term[i] == '.' {
						shape = append(shape, 2, 3)
						i += 2
						continue
					}
					if _, ok := size[term[i]]; !ok {
						size[term[i]] = 1 + r.IntN(4)
					}
					shape = append(shape, size[term[i]])
				}
				ins = append(ins, randF64(r, shape...))
			}
			sp, err := parseEinsum(eq, len(ins))
			if err != nil {
				t.Fatal(err)
			}
			products := 0
			got, err := einsum(c, sp, ins, func(a, b *tensor.Tensor) (*tensor.Tensor, error) {
				products++
				return batchedProduct(c, a, b)
			})
			if err != nil {
				t.Fatalf("%s: %v", eq, err)
			}
			opnds, out, sz, broadcast, err := einsumBind(sp, ins)
			if err != nil || broadcast {
				t.Fatalf("%s: bind: %v (broadcast %v)", eq, err, broadcast)
			}
			want, err := einsumGeneral(c, opnds, out, sz)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Shape, want.Shape) {
				t.Fatalf("%s: shape %v, want %v", eq, got.Shape, want.Shape)
			}
			g, w := got.Data.([]float64), want.Data.([]float64)
			for i := range w {
				if math.Abs(g[i]-w[i]) > 1e-9*(1+math.Abs(w[i])) {
					t.Fatalf("%s: [%d] = %v, want %v", eq, i, g[i], w[i])
				}
			}
			if len(ins) > 1 && products != len(ins)-1 {
				t.Errorf("%s: %d matrix products for %d operands", eq, products, len(ins))
			}
		}
	}
}

// TestEinsumNode runs Einsum as a node: FP32 batched products on the
// float kernels, broadcast ellipses on the general walk, narrow integers
// and FP16, and its input errors.
func TestEinsumNode(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	eq := []*onnxpb.Attribute{strAttr("equation", "bhqd, bhkd -> bhqk")}
	q, k := f32(randF64(r, 1, 2, 5, 8)), f32(randF64(r, 1, 2, 6, 8))
	y := run1(t, 12, "Einsum", eq, q, k)
	// the reference: Q·Kᵀ, one head at a time, in float64
	qd, kd := q.Data.([]float32), k.Data.([]float32)
	want := make([]float32, 2*5*6)
	for h := 0; h < 2; h++ {
		for i := 0; i < 5; i++ {
			for j := 0; j < 6; j++ {
				var s float64
				for d := 0; d < 8; d++ {
					s += float64(qd[(h*5+i)*8+d]) * float64(kd[(h*6+j)*8+d])
				}
				want[(h*5+i)*6+j] = float32(s)
			}
		}
	}
	if !slices.Equal(y.Shape, []int{1, 2, 5, 6}) || !closeTo(y.Data.([]float32), want, 1e-5) {
		t.Errorf("Einsum QKᵀ differs from the reference: %v", y.Shape)
	}
	// ellipses broadcast [2,1] with [3]
	a, b := seq(2, 1, 2, 2), seq(3, 2, 1)
	y = run1(t, 12, "Einsum", []*onnxpb.Attribute{strAttr("equation", "...ij,...jk->...ik")}, a, b)
	ae := run1(t, 13, "Expand", nil, a, i64s(2, 3, 2, 2))
	be := run1(t, 13, "Expand", nil, b, i64s(2, 3, 2, 1))
	want2 := run1(t, 12, "Einsum", []*onnxpb.Attribute{strAttr("equation", "...ij,...jk->...ik")}, ae, be)
	check(t, "broadcast ellipsis", y, []int{2, 3, 2, 1}, want2.Data)
	i8 := tensor.From([]int{2}, []int8{100, 100})
	check(t, "INT8 wraps", run1(t, 12, "Einsum", []*onnxpb.Attribute{strAttr("equation", "i,i")}, i8, i8), nil, []int8{32}) // 20000 mod 256
	h := tensor.From([]int{2}, tensor.Float32ToHalf[tensor.F16]([]float32{1.5, 2}))
	check(t, "FP16", run1(t, 12, "Einsum", []*onnxpb.Attribute{strAttr("equation", "i,i->")}, h, h), nil, tensor.Float32ToHalf[tensor.F16]([]float32{6.25}))
	wantInputError(t, 12, "Einsum", []*onnxpb.Attribute{strAttr("equation", "ij,jk")}, []*tensor.Tensor{seq(2, 3), seq(4, 2)}, "sizes differ")
	wantInputError(t, 12, "Einsum", []*onnxpb.Attribute{strAttr("equation", "ij,jk")}, []*tensor.Tensor{seq(2, 3, 1), seq(3, 2)}, "rank 3")
	// a broadcast walk, and an intermediate product, beyond tensor.MaxElements
	wantInputError(t, 12, "Einsum", []*onnxpb.Attribute{strAttr("equation", "i,j,ij->")}, []*tensor.Tensor{seq(1 << 16), seq(1 << 16), seq(1, 1)}, "too many label combinations")
	wantInputError(t, 12, "Einsum", []*onnxpb.Attribute{strAttr("equation", "i,j,ik,jk->")}, []*tensor.Tensor{seq(1 << 16), seq(1 << 16), seq(1<<16, 1), seq(1<<16, 1)}, "intermediate product")
	for _, bad := range []string{"ij,jk->iz", "i$->i", "ii->ii", "i,j"} {
		if _, _, err := opstest.Compile(opstest.Node{Op: "Einsum", Opset: 12, Attrs: []*onnxpb.Attribute{strAttr("equation", bad)}}, 1); err == nil {
			t.Errorf("Einsum %q compiled", bad)
		}
	}
}

// TestEinsumCancelled: the general walk stops once the request ends.
func TestEinsumCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	op, _, err := opstest.Compile(opstest.Node{Op: "Einsum", Opset: 12, Attrs: []*onnxpb.Attribute{strAttr("equation", "i,j,ij->")}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	_, err = op.Run(ops.NewContext(ctx, gemm.Default(), false), []*tensor.Tensor{seq(512), seq(512), seq(1, 1)})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Einsum under a cancelled request: %v, want context.Canceled", err)
	}
}

func f32(x *tensor.Tensor) *tensor.Tensor {
	y, _ := tensorops.CastTo(x, tensor.Float32)
	return y
}

func closeTo(a, b []float32, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > tol*(1+math.Abs(float64(b[i]))) {
			return false
		}
	}
	return true
}
