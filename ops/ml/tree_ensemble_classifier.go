package ml

import (
	"fmt"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: domain, Type: "TreeEnsembleClassifier", Since: 1, Until: 2, Fold: true}, buildTreeEnsembleClassifier1)
	ops.Register(ops.Descriptor{Domain: domain, Type: "TreeEnsembleClassifier", Since: 3, Fold: true}, buildTreeEnsembleClassifier3)
}

// TreeEnsembleClassifier1Attrs are TreeEnsembleClassifier-1's attributes.
type TreeEnsembleClassifier1Attrs struct {
	TreeEnsembleNodesAttrs
	ClassIDs           []int64   `onnx:"class_ids"`
	ClassNodeIDs       []int64   `onnx:"class_nodeids"`
	ClassTreeIDs       []int64   `onnx:"class_treeids"`
	ClassWeights       []float32 `onnx:"class_weights"`
	ClasslabelsInt64s  []int64   `onnx:"classlabels_int64s"`
	ClasslabelsStrings []string  `onnx:"classlabels_strings"`
}

// TreeEnsembleClassifierAttrs are TreeEnsembleClassifier-3's attributes.
type TreeEnsembleClassifierAttrs struct {
	TreeEnsembleClassifier1Attrs
	TreeEnsembleTensorAttrs
	ClassWeightsAsTensor *tensor.Tensor `onnx:"class_weights_as_tensor"`
}

// treeEnsembleClassifier is a compiled TreeEnsembleClassifier: its forest
// over nc classes, and for a binary classifier the class id its weights
// score (else -1), whether they are probabilities and the base value
// added to them.
type treeEnsembleClassifier struct {
	fo     *forest
	post   postTransform
	labels classLabels
	base   []float64
	nc     int
	binary int
	probs  bool
	bias   float64
}

func buildTreeEnsembleClassifier1(n *ops.Node, a *TreeEnsembleClassifier1Attrs) (ops.Operator, error) {
	return buildTreeEnsembleClassifier3(n, &TreeEnsembleClassifierAttrs{TreeEnsembleClassifier1Attrs: *a})
}

// buildTreeEnsembleClassifier3 compiles a classifier. Its class scores
// are the sums of the leaves' weights plus base_values, post-transformed;
// its label is the class of the highest score among the classes some leaf
// or base value scored. Two classes whose weights all name one class id
// make a binary classifier scoring the positive class: its score s plus
// the base value becomes the pair [1−s, s] when every weight is positive
// (probabilities) or the transform is PROBIT, and [−s, s] otherwise, each
// side then transformed; the label is positive when s > 0.5
// (probabilities) or s > 0, as ONNX Runtime decides it.
func buildTreeEnsembleClassifier3(n *ops.Node, a *TreeEnsembleClassifierAttrs) (ops.Operator, error) {
	if err := arity(n, 1, 1, 1, 2); err != nil {
		return nil, err
	}
	post, err := parsePost(a.PostTransform)
	if err != nil {
		return nil, err
	}
	labels, err := newClassLabels(a.ClasslabelsInt64s, a.ClasslabelsStrings)
	if err != nil {
		return nil, err
	}
	nc := labels.n()
	if nc < 2 {
		return nil, ops.Unsupportedf("a TreeEnsembleClassifier of fewer than two classes")
	}
	weights, err := floatsOr("class_weights", a.ClassWeights, a.ClassWeightsAsTensor)
	if err != nil {
		return nil, err
	}
	base, err := floatsOr("base_values", a.BaseValues, a.BaseValuesAsTensor)
	if err != nil {
		return nil, err
	}
	fo, err := forestV3(&a.TreeEnsembleNodesAttrs, &a.TreeEnsembleTensorAttrs, a.ClassTreeIDs, a.ClassNodeIDs, a.ClassIDs, weights, nc)
	if err != nil {
		return nil, err
	}
	binary := -1 // the one class id of a binary classifier
	if nc == 2 && len(a.ClassIDs) > 0 && !slices.ContainsFunc(a.ClassIDs, func(c int64) bool { return c != a.ClassIDs[0] }) {
		binary = int(a.ClassIDs[0])
	}
	probs := !slices.ContainsFunc(weights, func(w float64) bool { return w < 0 })
	bias := 0.0
	switch {
	case binary >= 0 && len(base) == 2:
		bias = base[binary]
	case binary >= 0 && len(base) == 1:
		bias = base[0]
	case len(base) != 0 && len(base) != nc:
		return nil, fmt.Errorf("has %d base_values for %d classes", len(base), nc)
	}
	return &treeEnsembleClassifier{fo: fo, post: post, labels: labels, base: base, nc: nc, binary: binary, probs: probs, bias: bias}, nil
}

func (m *treeEnsembleClassifier) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	fo, post, base, nc, binary := m.fo, m.post, m.base, m.nc, m.binary
	vs, rows, f, err := fo.rows("TreeEnsembleClassifier", in[0], numeric...)
	if err != nil {
		return nil, err
	}
	if err := outputShape("TreeEnsembleClassifier", rows, nc); err != nil {
		return nil, err
	}
	z := make([]float32, rows*nc)
	idx := make([]int, rows)
	all, hasAll := make([]float64, rows*nc), make([]bool, rows*nc)
	fo.predict(vs, rows, f, aggSum, all, hasAll)
	for r := range rows {
		s, has := all[r*nc:(r+1)*nc], hasAll[r*nc:(r+1)*nc]
		if binary >= 0 {
			v := s[binary] + m.bias
			th := 0.0
			if m.probs {
				th = 0.5
			}
			idx[r] = 0
			if v > th {
				idx[r] = 1
			}
			if m.probs && post == postNone || post == postProbit {
				s[0], s[1] = 1-v, v
			} else {
				s[0], s[1] = -v, v
			}
			post.apply(s)
		} else {
			for j := range base {
				s[j] += base[j]
				has[j] = true
			}
			best := -1
			for j, v := range s {
				if has[j] && (best < 0 || v > s[best]) {
					best = j
				}
			}
			if best < 0 {
				best = argmax(s)
			}
			idx[r] = best
			post.apply(s)
		}
		for j, v := range s {
			z[r*nc+j] = float32(v)
		}
	}
	return []*tensor.Tensor{m.labels.tensor(idx), tensor.From([]int{rows, nc}, z)}, nil
}
