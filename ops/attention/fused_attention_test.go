package attention

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// fusedNode is a quantserve.Attention node.
func fusedNode(heads, size int64, scale float32) opstest.Node {
	return opstest.Node{Domain: "quantserve", Op: "Attention", Opset: 1, Attrs: []*onnxpb.Attribute{
		attrInt("num_heads", heads), attrInt("head_size", size), attrFloat("scale", scale),
	}}
}

// TestFusedAttention checks quantserve.Attention against ai.onnx
// Attention's rank-3 form computed in float64 with the same heads and
// scale, and its errors.
func TestFusedAttention(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 36))
	const heads, size = 3, 5
	q, k, v := randTensor(r, 2, 7, heads*size), randTensor(r, 2, 9, heads*size), randTensor(r, 2, 9, heads*size)
	scale := float32(0.37)
	want, err := attentionRun(t, &AttentionAttrs{QNumHeads: heads, KVNumHeads: heads, Scale: &scale}, gemm.Default())([]*tensor.Tensor{to64(q), to64(k), to64(v)})
	if err != nil {
		t.Fatal(err)
	}
	op := compiled(compile(t, fusedNode(heads, size, scale), 3), nil)
	got, err := op([]*tensor.Tensor{q, k, v})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 1 || got[0].DType != tensor.Float32 {
		t.Fatalf("outputs %v", got)
	}
	compareOutputs(t, "fused", got, want[:1], 2e-5)
	for name, in := range map[string][]*tensor.Tensor{
		"width":  {q, k, randTensor(r, 2, 9, heads*size+heads)},
		"rank 4": {randTensor(r, 2, heads, 7, size), randTensor(r, 2, heads, 9, size), randTensor(r, 2, heads, 9, size)},
	} {
		if _, err := op(in); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
	for _, n := range []opstest.Node{fusedNode(0, size, 1), fusedNode(heads, -1, 1)} {
		if _, _, err := opstest.Compile(n, 3); err == nil {
			t.Errorf("%v accepted", n.Attrs)
		}
	}
	if _, _, err := opstest.Compile(fusedNode(heads, size, 1), 4); err == nil {
		t.Error("4 inputs accepted")
	}
}

// TestFusedAttentionPacked: quantserve.Attention with packed set reads Q,
// K and V as the column blocks of one input and computes what it does
// on the three tensors, bit for bit; an input of another width is an
// input error, and a packed node takes one input.
func TestFusedAttentionPacked(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 38))
	const heads, size, batch, seq = 3, 5, 2, 7
	const width = heads * size
	qkv := randTensor(r, batch, seq, 3*width)
	blocks := make([]*tensor.Tensor, 3)
	for i := range blocks {
		d := make([]float32, batch*seq*width)
		for row := range batch * seq {
			copy(d[row*width:(row+1)*width], qkv.Data.([]float32)[row*3*width+i*width:])
		}
		blocks[i] = tensor.From([]int{batch, seq, width}, d)
	}
	scale := float32(0.37)
	want, err := compiled(compile(t, fusedNode(heads, size, scale), 3), nil)(blocks)
	if err != nil {
		t.Fatal(err)
	}
	packed := fusedNode(heads, size, scale)
	packed.Attrs = append(packed.Attrs, attrInt("packed", 1))
	op := compiled(compile(t, packed, 1), nil)
	got, err := op([]*tensor.Tensor{qkv})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got[0].Shape, want[0].Shape) || !slices.Equal(got[0].Data.([]float32), want[0].Data.([]float32)) {
		t.Errorf("packed: %v, three inputs: %v", got[0], want[0])
	}
	if _, err := op([]*tensor.Tensor{randTensor(r, batch, seq, 3*width+3)}); !errors.Is(err, ops.ErrInput) {
		t.Errorf("width %d: %v, want an input error", 3*width+3, err)
	}
	if _, _, err := opstest.Compile(packed, 3); err == nil {
		t.Error("a packed node of 3 inputs accepted")
	}
}

// TestFusedAttentionPackedEmpty: a packed input of no batch or no
// sequence gives an empty output of its shape, as three inputs do.
func TestFusedAttentionPackedEmpty(t *testing.T) {
	const heads, size = 3, 4
	packed := fusedNode(heads, size, 0.5)
	packed.Attrs = append(packed.Attrs, attrInt("packed", 1))
	op := compiled(compile(t, packed, 1), nil)
	three := compiled(compile(t, fusedNode(heads, size, 0.5), 3), nil)
	for _, sh := range [][2]int{{0, 9}, {2, 0}} {
		got, err := op([]*tensor.Tensor{tensor.From([]int{sh[0], sh[1], 3 * heads * size}, []float32{})})
		if err != nil {
			t.Fatalf("batch %d, seq %d: %v", sh[0], sh[1], err)
		}
		e := tensor.From([]int{sh[0], sh[1], heads * size}, []float32{})
		want, err := three([]*tensor.Tensor{e, e, e})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[0].Shape, want[0].Shape) || got[0].Len() != 0 {
			t.Errorf("batch %d, seq %d: output %v, three inputs give %v", sh[0], sh[1], got[0].Shape, want[0].Shape)
		}
	}
}
