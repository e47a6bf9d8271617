package ml

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

// TreeEnsemble (opset 5) gives trees by node positions, with
// set-membership branches.
func init() {
	ops.Register(ops.Descriptor{Domain: domain, Type: "TreeEnsemble", Since: 5, Fold: true}, buildTreeEnsemble)
}

// TreeEnsembleAttrs are TreeEnsemble-5's attributes.
type TreeEnsembleAttrs struct {
	AggregateFunction           int64          `onnx:"aggregate_function" default:"1"`
	LeafTargetIDs               []int64        `onnx:"leaf_targetids"`
	LeafWeights                 *tensor.Tensor `onnx:"leaf_weights"`
	MembershipValues            *tensor.Tensor `onnx:"membership_values"`
	NTargets                    *int64         `onnx:"n_targets"`
	NodesFalseLeafs             []int64        `onnx:"nodes_falseleafs"`
	NodesFalseNodeIDs           []int64        `onnx:"nodes_falsenodeids"`
	NodesFeatureIDs             []int64        `onnx:"nodes_featureids"`
	NodesHitrates               *tensor.Tensor `onnx:"nodes_hitrates"`
	NodesMissingValueTracksTrue []int64        `onnx:"nodes_missing_value_tracks_true"`
	NodesModes                  *tensor.Tensor `onnx:"nodes_modes"`
	NodesSplits                 *tensor.Tensor `onnx:"nodes_splits"`
	NodesTrueLeafs              []int64        `onnx:"nodes_trueleafs"`
	NodesTrueNodeIDs            []int64        `onnx:"nodes_truenodeids"`
	PostTransform               int64          `onnx:"post_transform" default:"0"`
	TreeRoots                   []int64        `onnx:"tree_roots"`
}

// forestV5 compiles TreeEnsemble's attributes: branches are nodes
// 0..n−1, leaf j becomes node n+j.
func forestV5(a *TreeEnsembleAttrs) (*forest, error) {
	if a.NodesSplits == nil || a.NodesModes == nil || a.LeafWeights == nil {
		return nil, fmt.Errorf("needs nodes_splits, nodes_modes and leaf_weights")
	}
	if a.NTargets == nil || *a.NTargets < 1 || *a.NTargets > maxTargets {
		return nil, fmt.Errorf("needs n_targets between 1 and %d", maxTargets)
	}
	n, nl := len(a.NodesFeatureIDs), len(a.LeafTargetIDs)
	if n+nl > maxTreeNodes {
		return nil, ops.Unsupportedf("tree ensembles of more than %d nodes (this one has %d)", maxTreeNodes, n+nl)
	}
	if !a.NodesSplits.DType.IsFloat() || !a.LeafWeights.DType.IsFloat() {
		return nil, fmt.Errorf("nodes_splits and leaf_weights must be floats, are %v and %v", a.NodesSplits.DType, a.LeafWeights.DType)
	}
	modes, err := a.NodesModes.Int64s()
	if err != nil {
		return nil, fmt.Errorf("nodes_modes: %w", err)
	}
	splits, lw := a.NodesSplits.Float64s(), a.LeafWeights.Float64s()
	for name, l := range map[string]int{
		"nodes_splits": len(splits), "nodes_modes": len(modes), "nodes_truenodeids": len(a.NodesTrueNodeIDs),
		"nodes_falsenodeids": len(a.NodesFalseNodeIDs), "nodes_trueleafs": len(a.NodesTrueLeafs), "nodes_falseleafs": len(a.NodesFalseLeafs),
	} {
		if l != n {
			return nil, fmt.Errorf("has %d nodes_featureids and %d %s", n, l, name)
		}
	}
	if m := len(a.NodesMissingValueTracksTrue); m != 0 && m != n {
		return nil, fmt.Errorf("has %d nodes_featureids and %d nodes_missing_value_tracks_true", n, m)
	}
	if len(lw) != nl {
		return nil, fmt.Errorf("has %d leaf_targetids and %d leaf_weights", nl, len(lw))
	}
	var members []float64
	if a.MembershipValues != nil {
		members = a.MembershipValues.Float64s()
	}
	fo := &forest{nodes: make([]treeNode, n+nl), weights: make([]leafWeight, nl), nTargets: int(*a.NTargets)}
	child := func(id, leaf int64) (int32, error) {
		if leaf != 0 {
			if id < 0 || id >= int64(nl) {
				return 0, fmt.Errorf("a branch goes to leaf %d of %d", id, nl)
			}
			return int32(int64(n) + id), nil
		}
		if id < 0 || id >= int64(n) {
			return 0, fmt.Errorf("a branch goes to node %d of %d", id, n)
		}
		return int32(id), nil
	}
	for i := range n {
		nd := &fo.nodes[i]
		if modes[i] < 0 || modes[i] > int64(branchMember) {
			return nil, fmt.Errorf("node %d has mode %d", i, modes[i])
		}
		nd.mode = treeMode(modes[i])
		nd.value = splits[i]
		if f := a.NodesFeatureIDs[i]; f < 0 || f > math.MaxInt32 {
			return nil, fmt.Errorf("node %d reads feature %d", i, f)
		}
		nd.feature = int32(a.NodesFeatureIDs[i])
		nd.missingTrue = len(a.NodesMissingValueTracksTrue) > 0 && a.NodesMissingValueTracksTrue[i] != 0
		if nd.t, err = child(a.NodesTrueNodeIDs[i], a.NodesTrueLeafs[i]); err != nil {
			return nil, err
		}
		if nd.f, err = child(a.NodesFalseNodeIDs[i], a.NodesFalseLeafs[i]); err != nil {
			return nil, err
		}
		if nd.mode == branchMember {
			// This node's members run to the next NaN.
			end := slices.IndexFunc(members, math.IsNaN)
			if end < 0 {
				return nil, fmt.Errorf("membership_values has no NaN-terminated set for node %d", i)
			}
			set := slices.Clone(members[:end])
			slices.SortFunc(set, cmp.Compare[float64])
			nd.value = float64(len(fo.sets))
			fo.sets = append(fo.sets, set)
			members = members[end+1:]
		}
	}
	if len(members) > 0 {
		return nil, fmt.Errorf("membership_values has %d values no BRANCH_MEMBER node reads", len(members))
	}
	for j := range nl {
		fo.nodes[n+j] = treeNode{mode: modeLeaf, t: int32(j), f: int32(j + 1)}
		if a.LeafTargetIDs[j] < 0 || a.LeafTargetIDs[j] >= *a.NTargets {
			return nil, fmt.Errorf("leaf %d is for target %d, out of range for %d", j, a.LeafTargetIDs[j], *a.NTargets)
		}
		fo.weights[j] = leafWeight{target: int32(a.LeafTargetIDs[j]), w: lw[j]}
	}
	for _, r := range a.TreeRoots {
		if r < 0 || r >= int64(n) {
			return nil, fmt.Errorf("tree root %d of %d nodes", r, n)
		}
		if a.NodesTrueLeafs[r] != 0 && a.NodesFalseLeafs[r] != 0 && a.NodesTrueNodeIDs[r] == a.NodesFalseNodeIDs[r] {
			fo.roots = append(fo.roots, fo.nodes[r].t) // a tree that is one leaf
		} else {
			fo.roots = append(fo.roots, int32(r))
		}
	}
	return fo, fo.finish()
}

// treeEnsemble is a compiled TreeEnsemble: its forest, how leaves
// aggregate and the transform applied to each row.
type treeEnsemble struct {
	fo   *forest
	post postTransform
	agg  aggregate
}

func buildTreeEnsemble(n *ops.Node, a *TreeEnsembleAttrs) (ops.Operator, error) {
	if err := arity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	if a.PostTransform < 0 || a.PostTransform > int64(postProbit) {
		return nil, fmt.Errorf("post_transform %d is not one of 0–4", a.PostTransform)
	}
	if a.AggregateFunction < 0 || a.AggregateFunction > int64(aggMax) {
		return nil, fmt.Errorf("aggregate_function %d is not one of 0–3", a.AggregateFunction)
	}
	post, agg := postTransform(a.PostTransform), aggregate(a.AggregateFunction)
	fo, err := forestV5(a)
	if err != nil {
		return nil, err
	}
	return &treeEnsemble{fo: fo, post: post, agg: agg}, nil
}

func (m *treeEnsemble) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	fo, nt := m.fo, m.fo.nTargets
	vs, rows, f, err := fo.rows("TreeEnsemble", in[0], tensor.Float32, tensor.Float64, tensor.Float16)
	if err != nil {
		return nil, err
	}
	if err := outputShape("TreeEnsemble", rows, nt); err != nil {
		return nil, err
	}
	y := make([]float64, rows*nt)
	fo.predict(vs, rows, f, m.agg, y, make([]bool, rows*nt))
	for r := range rows {
		m.post.apply(y[r*nt : (r+1)*nt])
	}
	out := &tensor.Tensor{DType: tensor.Float64, Shape: []int{rows, nt}, Data: y}
	if in[0].DType != tensor.Float64 {
		if out, err = tensorops.CastTo(out, in[0].DType); err != nil {
			return nil, err
		}
	}
	return []*tensor.Tensor{out}, nil
}
