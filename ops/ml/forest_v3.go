package ml

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Opsets 1 and 3 of TreeEnsembleRegressor and TreeEnsembleClassifier name
// their nodes by (tree id, node id).

// TreeEnsembleNodesAttrs are the tree attributes TreeEnsembleRegressor
// and TreeEnsembleClassifier share.
type TreeEnsembleNodesAttrs struct {
	BaseValues                  []float32 `onnx:"base_values"`
	NodesFalseNodeIDs           []int64   `onnx:"nodes_falsenodeids"`
	NodesFeatureIDs             []int64   `onnx:"nodes_featureids"`
	NodesHitrates               []float32 `onnx:"nodes_hitrates"`
	NodesMissingValueTracksTrue []int64   `onnx:"nodes_missing_value_tracks_true"`
	NodesModes                  []string  `onnx:"nodes_modes"`
	NodesNodeIDs                []int64   `onnx:"nodes_nodeids"`
	NodesTreeIDs                []int64   `onnx:"nodes_treeids"`
	NodesTrueNodeIDs            []int64   `onnx:"nodes_truenodeids"`
	NodesValues                 []float32 `onnx:"nodes_values"`
	PostTransform               string    `onnx:"post_transform" default:"NONE"`
}

// TreeEnsembleTensorAttrs are opset 3's double-precision alternatives.
type TreeEnsembleTensorAttrs struct {
	BaseValuesAsTensor    *tensor.Tensor `onnx:"base_values_as_tensor"`
	NodesHitratesAsTensor *tensor.Tensor `onnx:"nodes_hitrates_as_tensor"`
	NodesValuesAsTensor   *tensor.Tensor `onnx:"nodes_values_as_tensor"`
}

// floatsOr returns the values of t (a float tensor attribute) if set,
// else of f; setting both is an error.
func floatsOr(name string, f []float32, t *tensor.Tensor) ([]float64, error) {
	if t == nil {
		v := make([]float64, len(f))
		for i, e := range f {
			v[i] = float64(e)
		}
		return v, nil
	}
	if len(f) > 0 {
		return nil, fmt.Errorf("has both %s and %s_as_tensor", name, name)
	}
	if !t.DType.IsFloat() {
		return nil, fmt.Errorf("%s_as_tensor has type %v", name, t.DType)
	}
	return t.Float64s(), nil
}

// forestV3 compiles opset 1/3 tree attributes with their leaf weights
// (tree id, node id, target, weight).
func forestV3(a *TreeEnsembleNodesAttrs, t *TreeEnsembleTensorAttrs, wTree, wNode, wTarget []int64, weights []float64, nTargets int) (*forest, error) {
	n := len(a.NodesNodeIDs)
	if n > maxTreeNodes {
		return nil, ops.Unsupportedf("tree ensembles of more than %d nodes (this one has %d)", maxTreeNodes, n)
	}
	values, err := floatsOr("nodes_values", a.NodesValues, t.NodesValuesAsTensor)
	if err != nil {
		return nil, err
	}
	for name, l := range map[string]int{
		"nodes_treeids": len(a.NodesTreeIDs), "nodes_featureids": len(a.NodesFeatureIDs), "nodes_modes": len(a.NodesModes),
		"nodes_truenodeids": len(a.NodesTrueNodeIDs), "nodes_falsenodeids": len(a.NodesFalseNodeIDs), "nodes_values": len(values),
	} {
		if l != n {
			return nil, fmt.Errorf("has %d nodes_nodeids and %d %s", n, l, name)
		}
	}
	if m := len(a.NodesMissingValueTracksTrue); m != 0 && m != n {
		return nil, fmt.Errorf("has %d nodes_nodeids and %d nodes_missing_value_tracks_true", n, m)
	}
	if len(wNode) != len(wTree) || len(wTarget) != len(wTree) || len(weights) != len(wTree) {
		return nil, fmt.Errorf("leaf weight attributes have different lengths (%d, %d, %d, %d)", len(wTree), len(wNode), len(wTarget), len(weights))
	}
	type key struct{ tree, node int64 }
	at := make(map[key]int32, n)
	trees := map[int64]bool{}
	fo := &forest{nodes: make([]treeNode, n), nTargets: nTargets}
	for i := range n {
		k := key{a.NodesTreeIDs[i], a.NodesNodeIDs[i]}
		if _, dup := at[k]; dup {
			return nil, fmt.Errorf("node %d of tree %d is given twice", k.node, k.tree)
		}
		if !trees[k.tree] {
			trees[k.tree] = true
			fo.roots = append(fo.roots, int32(i)) // a tree's first node is its root
		}
		at[k] = int32(i)
	}
	for i := range n {
		nd := &fo.nodes[i]
		mode, ok := treeModeNames[a.NodesModes[i]]
		if !ok || mode == branchMember {
			return nil, fmt.Errorf("node mode %q is not one of BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT, BRANCH_EQ, BRANCH_NEQ, LEAF", a.NodesModes[i])
		}
		nd.mode = mode
		if mode == modeLeaf {
			continue
		}
		nd.value = values[i]
		if f := a.NodesFeatureIDs[i]; f < 0 || f > math.MaxInt32 {
			return nil, fmt.Errorf("node %d reads feature %d", a.NodesNodeIDs[i], f)
		}
		nd.feature = int32(a.NodesFeatureIDs[i])
		nd.missingTrue = len(a.NodesMissingValueTracksTrue) > 0 && a.NodesMissingValueTracksTrue[i] != 0
		tree := a.NodesTreeIDs[i]
		var okT, okF bool
		nd.t, okT = at[key{tree, a.NodesTrueNodeIDs[i]}]
		nd.f, okF = at[key{tree, a.NodesFalseNodeIDs[i]}]
		if !okT || !okF {
			return nil, fmt.Errorf("node %d of tree %d branches to a node the tree does not have", a.NodesNodeIDs[i], tree)
		}
	}
	// Leaf weights, grouped by leaf in attribute order. A weight for a
	// branch is never reached: it is dropped.
	owner := make([]int32, len(wTree))
	count := make([]int32, n+1)
	for j := range wTree {
		i, ok := at[key{wTree[j], wNode[j]}]
		if !ok {
			return nil, fmt.Errorf("a weight is for node %d of tree %d, which does not exist", wNode[j], wTree[j])
		}
		if wTarget[j] < 0 || wTarget[j] >= int64(nTargets) {
			return nil, fmt.Errorf("a weight is for target or class %d, out of range for %d", wTarget[j], nTargets)
		}
		owner[j] = -1
		if fo.nodes[i].mode == modeLeaf {
			owner[j] = i
			count[i+1]++
		}
	}
	for i := range n {
		count[i+1] += count[i]
		if fo.nodes[i].mode == modeLeaf {
			fo.nodes[i].t, fo.nodes[i].f = count[i], count[i]
		}
	}
	fo.weights = make([]leafWeight, count[n])
	for j, i := range owner {
		if i < 0 {
			continue
		}
		nd := &fo.nodes[i]
		fo.weights[nd.f] = leafWeight{target: int32(wTarget[j]), w: weights[j]}
		nd.f++
	}
	return fo, fo.finish()
}
