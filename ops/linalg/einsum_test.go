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
	"github.com/quantserve/quantserve/onnx/onnxpb"
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
	eq := []*onnxpb.Attribute{opstest.AttrString("equation", "bhqd, bhkd -> bhqk")}
	q, k := f32(randF64(r, 1, 2, 5, 8)), f32(randF64(r, 1, 2, 6, 8))
	y := opstest.Run1(t, opstest.Node{Op: "Einsum", Opset: 12, Attrs: eq}, q, k)
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
	if !slices.Equal(y.Shape, []int{1, 2, 5, 6}) {
		t.Fatalf("Einsum QKᵀ has shape %v, want [1 2 5 6]", y.Shape)
	}
	opstest.Close(t, "Einsum QKᵀ", y.Data.([]float32), want, 1e-5)
	// ellipses broadcast [2,1] with [3]
	a, b := opstest.Seq(2, 1, 2, 2), opstest.Seq(3, 2, 1)
	y = opstest.Run1(t, opstest.Node{Op: "Einsum", Opset: 12, Attrs: []*onnxpb.Attribute{opstest.AttrString("equation", "...ij,...jk->...ik")}}, a, b)
	ae := opstest.Run1(t, opstest.Node{Op: "Expand", Opset: 13}, a, opstest.I64s(2, 3, 2, 2))
	be := opstest.Run1(t, opstest.Node{Op: "Expand", Opset: 13}, b, opstest.I64s(2, 3, 2, 1))
	want2 := opstest.Run1(t, opstest.Node{Op: "Einsum", Opset: 12, Attrs: []*onnxpb.Attribute{opstest.AttrString("equation", "...ij,...jk->...ik")}}, ae, be)
	opstest.Check(t, "broadcast ellipsis", y, []int{2, 3, 2, 1}, want2.Data)
	i8 := tensor.From([]int{2}, []int8{100, 100})
	opstest.Check(t, "INT8 wraps", opstest.Run1(t, opstest.Node{Op: "Einsum", Opset: 12, Attrs: []*onnxpb.Attribute{opstest.AttrString("equation", "i,i")}}, i8, i8), nil, []int8{32}) // 20000 mod 256
	h := tensor.From([]int{2}, tensor.Float32ToHalf[tensor.F16]([]float32{1.5, 2}))
	opstest.Check(t, "FP16", opstest.Run1(t, opstest.Node{Op: "Einsum", Opset: 12, Attrs: []*onnxpb.Attribute{opstest.AttrString("equation", "i,i->")}}, h, h), nil, tensor.Float32ToHalf[tensor.F16]([]float32{6.25}))
	opstest.WantInputError(t, opstest.Node{Op: "Einsum", Opset: 12, Attrs: []*onnxpb.Attribute{opstest.AttrString("equation", "ij,jk")}}, "sizes differ", opstest.Seq(2, 3), opstest.Seq(4, 2))
	opstest.WantInputError(t, opstest.Node{Op: "Einsum", Opset: 12, Attrs: []*onnxpb.Attribute{opstest.AttrString("equation", "ij,jk")}}, "rank 3", opstest.Seq(2, 3, 1), opstest.Seq(3, 2))
	// a broadcast walk, and an intermediate product, beyond tensor.MaxElements
	opstest.WantInputError(t, opstest.Node{Op: "Einsum", Opset: 12, Attrs: []*onnxpb.Attribute{opstest.AttrString("equation", "i,j,ij->")}}, "too many label combinations", opstest.Seq(1<<16), opstest.Seq(1<<16), opstest.Seq(1, 1))
	opstest.WantInputError(t, opstest.Node{Op: "Einsum", Opset: 12, Attrs: []*onnxpb.Attribute{opstest.AttrString("equation", "i,j,ik,jk->")}}, "intermediate product", opstest.Seq(1<<16), opstest.Seq(1<<16), opstest.Seq(1<<16, 1), opstest.Seq(1<<16, 1))
	for _, bad := range []string{"ij,jk->iz", "i$->i", "ii->ii", "i,j"} {
		if _, _, err := opstest.Compile(opstest.Node{Op: "Einsum", Opset: 12, Attrs: []*onnxpb.Attribute{opstest.AttrString("equation", bad)}}, 1); err == nil {
			t.Errorf("Einsum %q compiled", bad)
		}
	}
}

// TestEinsumCancelled: the general walk stops once the request ends.
func TestEinsumCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	op, _, err := opstest.Compile(opstest.Node{Op: "Einsum", Opset: 12, Attrs: []*onnxpb.Attribute{opstest.AttrString("equation", "i,j,ij->")}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	_, err = op.Run(ops.NewContext(ctx, gemm.Default(), false), []*tensor.Tensor{opstest.Seq(512), opstest.Seq(512), opstest.Seq(1, 1)})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Einsum under a cancelled request: %v, want context.Canceled", err)
	}
}

func f32(x *tensor.Tensor) *tensor.Tensor {
	y, _ := tensorops.CastTo(x, tensor.Float32)
	return y
}
