package text

import (
	"fmt"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "TfIdfVectorizer", Since: 9, Fold: true}, buildTfIdfVectorizer)
}

// TfIdfVectorizerAttrs are TfIdfVectorizer's attributes.
type TfIdfVectorizerAttrs struct {
	MaxGramLength int64     `onnx:"max_gram_length"`
	MaxSkipCount  int64     `onnx:"max_skip_count"`
	MinGramLength int64     `onnx:"min_gram_length"`
	Mode          string    `onnx:"mode"`
	NgramCounts   []int64   `onnx:"ngram_counts"`
	NgramIndexes  []int64   `onnx:"ngram_indexes"`
	PoolInt64s    []int64   `onnx:"pool_int64s"`
	PoolStrings   []string  `onnx:"pool_strings"`
	Weights       []float32 `onnx:"weights"`
}

// ngramNode is a trie over n-gram items; id > 0 marks the end of a pool
// n-gram (its position in ngram_indexes, plus one).
type ngramNode struct {
	id   int
	next map[any]*ngramNode
}

func (t *ngramNode) child(k any) *ngramNode {
	if t.next == nil {
		t.next = map[any]*ngramNode{}
	}
	c, ok := t.next[k]
	if !ok {
		c = &ngramNode{}
		t.next[k] = c
	}
	return c
}

// tfIdfVectorizer counts the pool's n-grams (of minGram..maxGram items,
// up to maxSkip items apart) in each row and weighs the counts.
type tfIdfVectorizer struct {
	root       *ngramNode // the pool's n-grams of minGram..maxGram items
	stringPool bool       // the pool holds strings, not integers
	mode       string     // TF, IDF or TFIDF
	minGram    int
	maxGram    int
	maxSkip    int
	indexes    []int64   // ngram_indexes: the output column of each pool n-gram
	weights    []float32 // per output column; none weighs 1
	outSize    int       // the output's columns
}

// buildTfIdfVectorizer checks the attributes and builds the trie of the
// pool's n-grams.
func buildTfIdfVectorizer(n *ops.Node, at *TfIdfVectorizerAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	switch {
	case at.Mode != "TF" && at.Mode != "IDF" && at.Mode != "TFIDF":
		return nil, fmt.Errorf("mode %q is not TF, IDF or TFIDF", at.Mode)
	case at.MinGramLength < 1 || at.MaxGramLength < at.MinGramLength || at.MaxSkipCount < 0:
		return nil, fmt.Errorf("gram lengths %d..%d and max_skip_count %d are invalid", at.MinGramLength, at.MaxGramLength, at.MaxSkipCount)
	case (at.PoolInt64s == nil) == (at.PoolStrings == nil):
		return nil, fmt.Errorf("needs exactly one of pool_int64s and pool_strings")
	case len(at.NgramIndexes) == 0:
		return nil, fmt.Errorf("needs ngram_indexes")
	}
	pool := make([]any, 0, len(at.PoolInt64s)+len(at.PoolStrings))
	for _, v := range at.PoolInt64s {
		pool = append(pool, v)
	}
	for _, v := range at.PoolStrings {
		pool = append(pool, v)
	}
	outSize := 0
	for _, i := range at.NgramIndexes {
		if i < 0 || i >= tensor.MaxElements {
			return nil, fmt.Errorf("ngram_indexes holds %d", i)
		}
		outSize = max(outSize, int(i)+1)
	}
	if len(at.Weights) > 0 && len(at.Weights) < outSize {
		return nil, fmt.Errorf("weights has %d entries, the output %d", len(at.Weights), outSize)
	}
	root := &ngramNode{}
	id := 1
	for size := 1; size <= len(at.NgramCounts); size++ {
		start := int(at.NgramCounts[size-1])
		end := len(pool)
		if size < len(at.NgramCounts) {
			end = int(at.NgramCounts[size])
		}
		if start < 0 || end > len(pool) || start > end || (end-start)%size != 0 {
			return nil, fmt.Errorf("ngram_counts %v do not split a pool of %d", at.NgramCounts, len(pool))
		}
		for g := start; g < end; g += size {
			if size >= int(at.MinGramLength) && size <= int(at.MaxGramLength) {
				t := root
				for _, item := range pool[g : g+size] {
					t = t.child(item)
				}
				t.id = id
			}
			id++
		}
	}
	if id-1 > len(at.NgramIndexes) {
		return nil, fmt.Errorf("the pool holds %d n-grams, ngram_indexes %d", id-1, len(at.NgramIndexes))
	}
	return &tfIdfVectorizer{
		root:       root,
		stringPool: at.PoolStrings != nil,
		mode:       at.Mode,
		minGram:    int(at.MinGramLength),
		maxGram:    int(at.MaxGramLength),
		maxSkip:    int(at.MaxSkipCount),
		indexes:    slices.Clone(at.NgramIndexes),
		weights:    slices.Clone(at.Weights),
		outSize:    outSize,
	}, nil
}

func (op *tfIdfVectorizer) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	var items []any
	switch d := x.Data.(type) {
	case []string:
		if !op.stringPool {
			return nil, ops.InputErrorf("TfIdfVectorizer with an integer pool takes integers, got strings")
		}
		for _, v := range d {
			items = append(items, v)
		}
	case []int32, []int64:
		if op.stringPool {
			return nil, ops.InputErrorf("TfIdfVectorizer with a string pool takes strings, got %v", x.DType)
		}
		v, _ := x.Int64s()
		for _, e := range v {
			items = append(items, e)
		}
	default:
		return nil, ops.InputErrorf("TfIdfVectorizer takes INT32, INT64 or BYTES, got %v", x.DType)
	}
	outSize := op.outSize
	rows, cols := 1, len(items)
	shape := []int{outSize}
	switch x.Rank() {
	case 0, 1:
	case 2:
		rows, cols = x.Shape[0], x.Shape[1]
		shape = []int{rows, outSize}
	default:
		return nil, ops.InputErrorf("TfIdfVectorizer takes [C] or [B, C], got %s", tensor.ShapeString(x.Shape))
	}
	total, err := tensor.NumElements(shape)
	if err != nil {
		return nil, ops.InputErrorf("TfIdfVectorizer output %s: %v", tensor.ShapeString(shape), err)
	}
	freq := make([]int64, total)
	for r := 0; r < rows; r++ {
		row := items[r*cols : (r+1)*cols]
		minSize := op.minGram
		for skip := 1; skip <= op.maxSkip+1; skip++ {
			for start := 0; start < len(row); start++ {
				if start+skip*(minSize-1) >= len(row) {
					break
				}
				t := op.root
				for size, i := 1, start; size <= op.maxGram && i < len(row) && t.next != nil; size, i = size+1, i+skip {
					c, ok := t.next[row[i]]
					if !ok {
						break
					}
					if size >= minSize && c.id > 0 {
						freq[r*outSize+int(op.indexes[c.id-1])]++
					}
					t = c
				}
			}
			if minSize == 1 { // unigrams do not depend on the skip: count them once
				minSize = 2
				if minSize > op.maxGram {
					break
				}
			}
		}
	}
	out := make([]float32, total)
	for i, f := range freq {
		w := float32(1)
		if len(op.weights) > 0 {
			w = op.weights[i%outSize]
		}
		switch {
		case op.mode == "TF":
			out[i] = float32(f)
		case op.mode == "IDF" && f > 0:
			out[i] = w
		case op.mode == "TFIDF":
			out[i] = w * float32(f)
		}
	}
	return []*tensor.Tensor{tensor.From(shape, out)}, nil
}
