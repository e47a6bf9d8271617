package ml

import (
	"fmt"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: domain, Type: "TreeEnsembleRegressor", Since: 1, Until: 2, Fold: true}, buildTreeEnsembleRegressor1)
	ops.Register(ops.Descriptor{Domain: domain, Type: "TreeEnsembleRegressor", Since: 3, Fold: true}, buildTreeEnsembleRegressor3)
}

// TreeEnsembleRegressor1Attrs are TreeEnsembleRegressor-1's attributes.
type TreeEnsembleRegressor1Attrs struct {
	TreeEnsembleNodesAttrs
	AggregateFunction string    `onnx:"aggregate_function" default:"SUM"`
	NTargets          *int64    `onnx:"n_targets"`
	TargetIDs         []int64   `onnx:"target_ids"`
	TargetNodeIDs     []int64   `onnx:"target_nodeids"`
	TargetTreeIDs     []int64   `onnx:"target_treeids"`
	TargetWeights     []float32 `onnx:"target_weights"`
}

// TreeEnsembleRegressorAttrs are TreeEnsembleRegressor-3's attributes.
type TreeEnsembleRegressorAttrs struct {
	TreeEnsembleRegressor1Attrs
	TreeEnsembleTensorAttrs
	TargetWeightsAsTensor *tensor.Tensor `onnx:"target_weights_as_tensor"`
}

// treeEnsembleRegressor is a compiled TreeEnsembleRegressor: its forest
// of nt targets, how leaves aggregate, the base values added and the
// transform applied to each row.
type treeEnsembleRegressor struct {
	fo   *forest
	post postTransform
	agg  aggregate
	base []float64
	nt   int
}

func buildTreeEnsembleRegressor1(n *ops.Node, a *TreeEnsembleRegressor1Attrs) (ops.Operator, error) {
	return buildTreeEnsembleRegressor3(n, &TreeEnsembleRegressorAttrs{TreeEnsembleRegressor1Attrs: *a})
}

func buildTreeEnsembleRegressor3(n *ops.Node, a *TreeEnsembleRegressorAttrs) (ops.Operator, error) {
	if err := arity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	post, err := parsePost(a.PostTransform)
	if err != nil {
		return nil, err
	}
	agg, err := parseAggregate(a.AggregateFunction)
	if err != nil {
		return nil, err
	}
	weights, err := floatsOr("target_weights", a.TargetWeights, a.TargetWeightsAsTensor)
	if err != nil {
		return nil, err
	}
	base, err := floatsOr("base_values", a.BaseValues, a.BaseValuesAsTensor)
	if err != nil {
		return nil, err
	}
	nt := 1
	if a.NTargets != nil {
		if *a.NTargets < 1 || *a.NTargets > maxTargets {
			return nil, fmt.Errorf("n_targets %d is out of range", *a.NTargets)
		}
		nt = int(*a.NTargets)
	} else if len(a.TargetIDs) > 0 {
		nt = int(min(max(slices.Max(a.TargetIDs), 0), maxTargets-1)) + 1
	}
	if len(base) != 0 && len(base) != nt {
		return nil, fmt.Errorf("has %d base_values for %d targets", len(base), nt)
	}
	fo, err := forestV3(&a.TreeEnsembleNodesAttrs, &a.TreeEnsembleTensorAttrs, a.TargetTreeIDs, a.TargetNodeIDs, a.TargetIDs, weights, nt)
	if err != nil {
		return nil, err
	}
	return &treeEnsembleRegressor{fo: fo, post: post, agg: agg, base: base, nt: nt}, nil
}

func (m *treeEnsembleRegressor) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	fo, post, base, nt := m.fo, m.post, m.base, m.nt
	vs, rows, f, err := fo.rows("TreeEnsembleRegressor", in[0], numeric...)
	if err != nil {
		return nil, err
	}
	if err := outputShape("TreeEnsembleRegressor", rows, nt); err != nil {
		return nil, err
	}
	y := make([]float32, rows*nt)
	all, has := make([]float64, rows*nt), make([]bool, rows*nt)
	fo.predict(vs, rows, f, m.agg, all, has)
	for r := range rows {
		s := all[r*nt : (r+1)*nt]
		for j := range base {
			s[j] += base[j]
		}
		post.apply(s)
		for j, v := range s {
			y[r*nt+j] = float32(v)
		}
	}
	return []*tensor.Tensor{tensor.From([]int{rows, nt}, y)}, nil
}
