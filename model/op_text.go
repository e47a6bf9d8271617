package model

import (
	"fmt"

	"github.com/quantserve/quantserve/tensor"
)

// Text features.

func init() {
	register(Descriptor{Type: "TfIdfVectorizer", Since: 9, Fold: true}, buildTfIdfVectorizer)
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

// buildTfIdfVectorizer counts the pool's n-grams (of min..max length,
// items up to max_skip_count apart) in each row and weighs the counts.
func buildTfIdfVectorizer(n *node, at *TfIdfVectorizerAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
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
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		var items []any
		switch d := x.Data.(type) {
		case []string:
			if at.PoolStrings == nil {
				return nil, inputErrorf("TfIdfVectorizer with an integer pool takes integers, got strings")
			}
			for _, v := range d {
				items = append(items, v)
			}
		case []int32, []int64:
			if at.PoolInt64s == nil {
				return nil, inputErrorf("TfIdfVectorizer with a string pool takes strings, got %v", x.DType)
			}
			v, _ := x.Int64s()
			for _, e := range v {
				items = append(items, e)
			}
		default:
			return nil, inputErrorf("TfIdfVectorizer takes INT32, INT64 or BYTES, got %v", x.DType)
		}
		rows, cols := 1, len(items)
		shape := []int{outSize}
		switch x.Rank() {
		case 0, 1:
		case 2:
			rows, cols = x.Shape[0], x.Shape[1]
			shape = []int{rows, outSize}
		default:
			return nil, inputErrorf("TfIdfVectorizer takes [C] or [B, C], got %s", tensor.ShapeString(x.Shape))
		}
		total, err := tensor.NumElements(shape)
		if err != nil {
			return nil, inputErrorf("TfIdfVectorizer output %s: %v", tensor.ShapeString(shape), err)
		}
		freq := make([]int64, total)
		for r := 0; r < rows; r++ {
			row := items[r*cols : (r+1)*cols]
			minSize := int(at.MinGramLength)
			for skip := 1; skip <= int(at.MaxSkipCount)+1; skip++ {
				for start := 0; start < len(row); start++ {
					if start+skip*(minSize-1) >= len(row) {
						break
					}
					t := root
					for size, i := 1, start; size <= int(at.MaxGramLength) && i < len(row) && t.next != nil; size, i = size+1, i+skip {
						c, ok := t.next[row[i]]
						if !ok {
							break
						}
						if size >= minSize && c.id > 0 {
							freq[r*outSize+int(at.NgramIndexes[c.id-1])]++
						}
						t = c
					}
				}
				if minSize == 1 { // unigrams do not depend on the skip: count them once
					minSize = 2
					if minSize > int(at.MaxGramLength) {
						break
					}
				}
			}
		}
		out := make([]float32, total)
		for i, f := range freq {
			w := float32(1)
			if len(at.Weights) > 0 {
				w = at.Weights[i%outSize]
			}
			switch {
			case at.Mode == "TF":
				out[i] = float32(f)
			case at.Mode == "IDF" && f > 0:
				out[i] = w
			case at.Mode == "TFIDF":
				out[i] = w * float32(f)
			}
		}
		return tensor.From(shape, out), nil
	}), nil
}
