package contrib

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// embedDef computes EmbedLayerNormalization by its definition: for each
// token, e = (word row + position row) + segment row in float32 (seg -1:
// none), then its layer normalization in float64. It returns the output
// and e.
func embedDef(word, pos, seg, gamma, beta *tensor.Tensor, wid, pid, sid []int, eps float64) (y []float64, sum []float64) {
	h := word.Shape[1]
	for tok := range wid {
		e := make([]float32, h)
		for j := range e {
			e[j] = float32(at(word, wid[tok]*h+j)) + float32(at(pos, pid[tok]*h+j))
			if sid[tok] >= 0 {
				e[j] += float32(at(seg, sid[tok]*h+j))
			}
		}
		var m, v float64
		for _, x := range e {
			m += float64(x) / float64(h)
		}
		for _, x := range e {
			v += (float64(x) - m) * (float64(x) - m) / float64(h)
		}
		for j, x := range e {
			y = append(y, (float64(x)-m)/math.Sqrt(v+eps)*at(gamma, j)+at(beta, j))
			sum = append(sum, float64(x))
		}
	}
	return y, sum
}

func ints(v ...int) []int { return v }

// TestEmbedLayerNormMatchesDefinition checks every output for BERT's
// form (segments, a mask), DistilBERT's (no segments), segment_embedding
// without segment_ids (its row 0), and position_ids of each shape.
func TestEmbedLayerNormMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	const b, s, h, vocab, positions, segs = 2, 3, 7, 11, 5, 3
	word, pos, seg := randn(r, 1, vocab, h), randn(r, 1, positions, h), randn(r, 1, segs, h)
	gamma, beta := randn(r, 0.5, h), randn(r, 0.5, h)
	ids := int32s([]int{b, s}, 3, 0, 10, 7, 7, 1)
	segIDs := int32s([]int{b, s}, 0, 1, 2, 2, 1, 0)
	mask := int32s([]int{b, s}, 1, 1, 0, 1, 2, -1)
	wid, tokPos := ints(3, 0, 10, 7, 7, 1), ints(0, 1, 2, 0, 1, 2)
	none := ints(-1, -1, -1, -1, -1, -1)
	for _, c := range []struct {
		name        string
		segIDs, seg *tensor.Tensor
		posIDs      *tensor.Tensor
		sid, pid    []int
		mask        *tensor.Tensor
		maskIndex   []int32
	}{
		{"segments and mask", segIDs, seg, nil, ints(0, 1, 2, 2, 1, 0), tokPos, mask, []int32{2, 1}},
		{"no segments", nil, nil, nil, none, tokPos, nil, []int32{0, 0}},
		{"segment row 0", nil, seg, nil, ints(0, 0, 0, 0, 0, 0), tokPos, mask, []int32{2, 1}},
		{"position_ids [1, seq]", segIDs, seg, int32s([]int{1, s}, 4, 0, 2), ints(0, 1, 2, 2, 1, 0), ints(4, 0, 2, 4, 0, 2), nil, []int32{0, 0}},
		{"position_ids [batch, seq]", nil, nil, int32s([]int{b, s}, 1, 1, 4, 3, 2, 0), none, ints(1, 1, 4, 3, 2, 0), mask, []int32{2, 1}},
	} {
		in := []*tensor.Tensor{ids, c.segIDs, word, pos, c.seg, gamma, beta, c.mask, c.posIDs}
		outs, err := opstest.Run(t, node("EmbedLayerNormalization", 3, floatAttr("epsilon", 1e-5)), in...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		y, sum := embedDef(word, pos, seg, gamma, beta, wid, c.pid, c.sid, float64(float32(1e-5)))
		checkNear(t, c.name+": output", outs[0], []int{b, s, h}, y)
		if !slices.Equal(outs[1].Shape, []int{b}) || !slices.Equal(outs[1].Data.([]int32), c.maskIndex) {
			t.Errorf("%s: mask_index %v %v, want %v", c.name, outs[1].Shape, outs[1].Data, c.maskIndex)
		}
		if err := near(outs[2], sum, 0, 0); err != nil || !slices.Equal(outs[2].Shape, []int{b, s, h}) {
			t.Errorf("%s: embedding_sum %v: %v", c.name, outs[2].Shape, err)
		}
	}
}

// TestEmbedLayerNormFloat16 computes FLOAT16 embeddings in float32 and
// float64 and rounds the outputs once.
func TestEmbedLayerNormFloat16(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	word, pos, gamma, beta := half(randn(r, 1, 6, 9)), half(randn(r, 1, 4, 9)), half(randn(r, 0.5, 9)), half(randn(r, 0.5, 9))
	outs, err := opstest.Run(t, node("EmbedLayerNormalization", 1), int32s([]int{1, 4}, 5, 0, 2, 2), nil, word, pos, nil, gamma, beta)
	if err != nil {
		t.Fatal(err)
	}
	y, _ := embedDef(word, pos, nil, gamma, beta, ints(5, 0, 2, 2), ints(0, 1, 2, 3), ints(-1, -1, -1, -1), float64(float32(1e-12)))
	if outs[0].DType != tensor.Float16 {
		t.Fatalf("output %v, want FLOAT16", outs[0].DType)
	}
	if err := near(outs[0], y, halfRTol, halfATol); err != nil {
		t.Error(err)
	}
}

// TestEmbedLayerNormIDsOutOfRange: an id outside its embedding's rows,
// or a sequence longer than the positions, is an input error, not a
// panic.
func TestEmbedLayerNormIDsOutOfRange(t *testing.T) {
	r := rand.New(rand.NewPCG(55, 56))
	word, pos, seg, gamma, beta := randn(r, 1, 4, 3), randn(r, 1, 3, 3), randn(r, 1, 2, 3), randn(r, 1, 3), randn(r, 1, 3)
	ok := int32s([]int{1, 3}, 0, 1, 2)
	for name, in := range map[string][]*tensor.Tensor{
		"word id 4":                 {int32s([]int{1, 3}, 0, 4, 1), nil, word, pos, nil, gamma, beta},
		"word id -1":                {int32s([]int{1, 3}, 0, -1, 1), nil, word, pos, nil, gamma, beta},
		"segment id 2":              {ok, int32s([]int{1, 3}, 0, 2, 1), word, pos, seg, gamma, beta},
		"segment id -1":             {ok, int32s([]int{1, 3}, -1, 0, 1), word, pos, seg, gamma, beta},
		"segment ids, no embedding": {ok, ok, word, pos, nil, gamma, beta},
		"segment embedding empty":   {ok, nil, word, pos, randn(r, 1, 0, 3), gamma, beta},
		"position id 3":             {ok, nil, word, pos, nil, gamma, beta, nil, int32s([]int{1, 3}, 0, 3, 1)},
		"position id -1":            {ok, nil, word, pos, nil, gamma, beta, nil, int32s([]int{1, 3}, 0, -1, 1)},
		"sequence past positions":   {int32s([]int{1, 4}, 0, 1, 2, 3), nil, word, pos, nil, gamma, beta},
	} {
		if _, err := opstest.Run(t, node("EmbedLayerNormalization", 1), in...); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
}

// TestEmbedLayerNormInputErrors: inputs of wrong shapes or types are
// input errors.
func TestEmbedLayerNormInputErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(57, 58))
	word, pos, seg, gamma, beta := randn(r, 1, 4, 3), randn(r, 1, 3, 3), randn(r, 1, 2, 3), randn(r, 1, 3), randn(r, 1, 3)
	ids := int32s([]int{1, 2}, 0, 1)
	for name, in := range map[string][]*tensor.Tensor{
		"input_ids 1-D":          {int32s([]int{2}, 0, 1), nil, word, pos, nil, gamma, beta},
		"input_ids INT64":        {tensor.From([]int{1, 2}, []int64{0, 1}), nil, word, pos, nil, gamma, beta},
		"segment_ids shape":      {ids, int32s([]int{2, 1}, 0, 1), word, pos, seg, gamma, beta},
		"mask shape":             {ids, nil, word, pos, nil, gamma, beta, int32s([]int{2}, 1, 1)},
		"mask FLOAT":             {ids, nil, word, pos, nil, gamma, beta, tensor.From([]int{1, 2}, []float32{1, 1})},
		"position_ids 1-D":       {ids, nil, word, pos, nil, gamma, beta, nil, int32s([]int{2}, 0, 1)},
		"position_ids batch":     {ids, nil, word, pos, nil, gamma, beta, nil, int32s([]int{2, 2}, 0, 1, 0, 1)},
		"word_embedding 1-D":     {ids, nil, randn(r, 1, 12), pos, nil, gamma, beta},
		"position hidden":        {ids, nil, word, randn(r, 1, 3, 4), nil, gamma, beta},
		"segment hidden":         {ids, nil, word, pos, randn(r, 1, 2, 2), gamma, beta},
		"gamma size":             {ids, nil, word, pos, nil, randn(r, 1, 4), beta},
		"beta 2-D":               {ids, nil, word, pos, nil, gamma, randn(r, 1, 1, 3)},
		"FLOAT16 position":       {ids, nil, word, half(pos), nil, gamma, beta},
		"DOUBLE":                 {int32s([]int{1, 2}, 0, 0), nil, tensor.From([]int{1, 1}, []float64{1}), tensor.From([]int{2, 1}, []float64{1, 2}), nil, tensor.From([]int{1}, []float64{1}), tensor.From([]int{1}, []float64{1})},
		"segment_ids FLOAT type": {ids, tensor.From([]int{1, 2}, []float32{0, 1}), word, pos, seg, gamma, beta},
	} {
		if _, err := opstest.Run(t, node("EmbedLayerNormalization", 1), in...); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
}

// TestEmbedLayerNormLoad: required inputs absent, a negative epsilon and
// a mask_index_type other than 0 or 1 are refused at load.
func TestEmbedLayerNormLoad(t *testing.T) {
	d, err := ops.Lookup(domain, "EmbedLayerNormalization", 1)
	if err != nil {
		t.Fatal(err)
	}
	compile := func(inputs []string, attrs ...*onnxpb.Attribute) error {
		n := &ops.Node{Type: "EmbedLayerNormalization", Domain: domain, Opset: 1, Inputs: inputs,
			Outputs: []string{"y"}, Attrs: map[string]*onnxpb.Attribute{}}
		for _, a := range attrs {
			n.Attrs[a.Name] = a
		}
		a, err := d.Parse(n)
		if err != nil {
			return err
		}
		_, err = d.Build(n, a)
		return err
	}
	full := []string{"ids", "seg", "w", "p", "s", "g", "b"}
	if err := compile(full, intAttr("mask_index_type", 0)); err != nil {
		t.Fatal(err)
	}
	if err := compile([]string{"ids", "", "w", "p", "", "g", "b", "", "pid"}); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2, 3, 5, 6} {
		in := slices.Clone(full)
		in[i] = ""
		if err := compile(in); err == nil {
			t.Errorf("input %d absent: compiled", i)
		}
	}
	if err := compile(full, floatAttr("epsilon", -1)); err == nil {
		t.Error("epsilon -1 compiled")
	}
	if err := compile(full, intAttr("mask_index_type", 2)); !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("mask_index_type 2: %v, want unsupported", err)
	}
}
