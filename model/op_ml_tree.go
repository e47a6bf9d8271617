package model

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/quantserve/quantserve/tensor"
)

// Tree ensembles of the ai.onnx.ml domain: TreeEnsembleRegressor and
// TreeEnsembleClassifier (opsets 1 and 3, trees given as (tree id, node
// id) tuples) and TreeEnsemble (opset 5, trees given by node positions,
// with set-membership branches). All three compile to one mlForest and
// share its walker.

const (
	// mlMaxTreeNodes bounds the nodes (branches and leaves) of one
	// ensemble, mlMaxTreeDepth the depth of one tree: a model beyond
	// them is refused at load.
	mlMaxTreeNodes = 1 << 24
	mlMaxTreeDepth = 4096
)

type mlTreeMode uint8

const (
	mlBranchLEQ mlTreeMode = iota
	mlBranchLT
	mlBranchGTE
	mlBranchGT
	mlBranchEQ
	mlBranchNEQ
	mlBranchMember
	mlLeaf
)

var mlTreeModeNames = map[string]mlTreeMode{
	"BRANCH_LEQ": mlBranchLEQ, "BRANCH_LT": mlBranchLT, "BRANCH_GTE": mlBranchGTE, "BRANCH_GT": mlBranchGT,
	"BRANCH_EQ": mlBranchEQ, "BRANCH_NEQ": mlBranchNEQ, "BRANCH_MEMBER": mlBranchMember, "LEAF": mlLeaf,
}

// mlTreeNode is one node of a compiled forest, 24 bytes so that a
// forest's nodes stay in cache while a batch walks them.
type mlTreeNode struct {
	value   float64 // a branch's threshold; BRANCH_MEMBER's index in sets
	feature int32
	// A branch goes to node t when its test holds, else to node f. A
	// leaf's weights are weights[t:f].
	t, f        int32
	mode        mlTreeMode
	missingTrue bool // a NaN feature goes to t
}

type mlLeafWeight struct {
	target int32
	w      float64
}

// mlForest is a compiled tree ensemble.
type mlForest struct {
	nodes     []mlTreeNode
	sets      [][]float64 // BRANCH_MEMBER's values, each sorted
	weights   []mlLeafWeight
	roots     []int32
	nTargets  int
	nFeatures int  // features the branches read: X needs at least these
	allLEQ    bool // every branch is BRANCH_LEQ
}

type mlAggregate uint8

const (
	mlAggAverage mlAggregate = iota
	mlAggSum
	mlAggMin
	mlAggMax
)

func parseMLAggregate(s string) (mlAggregate, error) {
	switch s {
	case "AVERAGE":
		return mlAggAverage, nil
	case "SUM", "":
		return mlAggSum, nil
	case "MIN":
		return mlAggMin, nil
	case "MAX":
		return mlAggMax, nil
	}
	return 0, fmt.Errorf("aggregate_function %q is not one of AVERAGE, SUM, MIN, MAX", s)
}

// leaf walks the tree rooted at node i for the features x and returns the
// leaf it reaches. A NaN feature fails every comparison but BRANCH_NEQ,
// and goes the true way where missing values track true.
func (fo *mlForest) leaf(x []float64, i int32) *mlTreeNode {
	nodes := fo.nodes
	if fo.allLEQ { // scikit-learn's trees: one comparison throughout
		for {
			nd := &nodes[i]
			if nd.mode == mlLeaf {
				return nd
			}
			if v := x[nd.feature]; v <= nd.value || nd.missingTrue && v != v {
				i = nd.t
			} else {
				i = nd.f
			}
		}
	}
	for {
		nd := &nodes[i]
		if nd.mode == mlLeaf {
			return nd
		}
		var r bool
		v := x[nd.feature]
		switch nd.mode {
		case mlBranchLEQ:
			r = v <= nd.value
		case mlBranchLT:
			r = v < nd.value
		case mlBranchGTE:
			r = v >= nd.value
		case mlBranchGT:
			r = v > nd.value
		case mlBranchEQ:
			r = v == nd.value
		case mlBranchNEQ:
			r = v != nd.value
		case mlBranchMember:
			_, r = slices.BinarySearch(fo.sets[int(nd.value)], v)
			r = r && v == v
		}
		if r || nd.missingTrue && v != v {
			i = nd.t
		} else {
			i = nd.f
		}
	}
}

// predict runs every tree on rows of features x (row-major, f per row)
// and aggregates their leaves' weights per row and target into s (rows ×
// nTargets); has records which targets some leaf scored, and a target no
// leaf names is 0. Trees run one after the other over the whole batch,
// so that each tree's nodes stay in cache.
func (fo *mlForest) predict(x []float64, rows, f int, agg mlAggregate, s []float64, has []bool) {
	nt := fo.nTargets
	clear(s)
	clear(has)
	for _, root := range fo.roots {
		for r := range rows {
			nd := fo.leaf(x[r*f:(r+1)*f], root)
			for _, lw := range fo.weights[nd.t:nd.f] {
				i := r*nt + int(lw.target)
				switch agg {
				case mlAggSum, mlAggAverage:
					s[i] += lw.w
				case mlAggMin:
					if !has[i] || lw.w < s[i] {
						s[i] = lw.w
					}
				case mlAggMax:
					if !has[i] || lw.w > s[i] {
						s[i] = lw.w
					}
				}
				has[i] = true
			}
		}
	}
	if agg == mlAggAverage && len(fo.roots) > 0 {
		for i := range s {
			s[i] /= float64(len(fo.roots))
		}
	}
}

// finish checks the forest: child indices and targets in range, every
// tree acyclic and at most mlMaxTreeDepth deep. It sets nFeatures.
func (fo *mlForest) finish() error {
	nn := len(fo.nodes)
	if nn > mlMaxTreeNodes {
		return unsupportedf("tree ensembles of more than %d nodes (this one has %d)", mlMaxTreeNodes, nn)
	}
	for i := range fo.nodes {
		nd := &fo.nodes[i]
		if nd.mode == mlLeaf {
			if nd.t < 0 || nd.t > nd.f || int(nd.f) > len(fo.weights) {
				return fmt.Errorf("leaf %d has weights %d to %d of %d", i, nd.t, nd.f, len(fo.weights))
			}
			for _, lw := range fo.weights[nd.t:nd.f] {
				if lw.target < 0 || int(lw.target) >= fo.nTargets {
					return fmt.Errorf("a leaf weight is for target or class %d, out of range for %d", lw.target, fo.nTargets)
				}
			}
			continue
		}
		if nd.t < 0 || int(nd.t) >= nn || nd.f < 0 || int(nd.f) >= nn {
			return fmt.Errorf("node %d branches to a node that does not exist", i)
		}
		if nd.feature < 0 {
			return fmt.Errorf("node %d reads feature %d", i, nd.feature)
		}
		fo.nFeatures = max(fo.nFeatures, int(nd.feature)+1)
	}
	// Depth of every node under a root, post-order without recursion:
	// 0 unknown, -1 being walked (on the path from the root), else depth.
	depth := make([]int32, nn)
	var stack []int32
	for _, root := range fo.roots {
		if root < 0 || int(root) >= nn {
			return fmt.Errorf("tree root %d does not exist", root)
		}
		stack = append(stack[:0], root)
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			nd := &fo.nodes[i]
			switch {
			case depth[i] > 0:
				stack = stack[:len(stack)-1]
			case nd.mode == mlLeaf:
				depth[i] = 1
				stack = stack[:len(stack)-1]
			case depth[i] == 0:
				depth[i] = -1
				for _, c := range []int32{nd.t, nd.f} {
					switch depth[c] {
					case -1:
						return fmt.Errorf("the tree of root %d has a cycle through node %d", root, c)
					case 0:
						stack = append(stack, c)
					}
				}
				if len(stack) > 2*mlMaxTreeDepth+2 {
					return unsupportedf("trees deeper than %d", mlMaxTreeDepth)
				}
			default:
				depth[i] = 1 + max(depth[nd.t], depth[nd.f])
				if depth[i] > mlMaxTreeDepth {
					return unsupportedf("trees deeper than %d", mlMaxTreeDepth)
				}
				stack = stack[:len(stack)-1]
			}
		}
	}
	// Lay the trees out depth first, each branch followed by its true
	// side, so that a walk reads mostly neighbouring nodes; nodes no root
	// reaches are dropped.
	order := make([]int32, nn)
	for i := range order {
		order[i] = -1
	}
	out := make([]mlTreeNode, 0, nn)
	fo.allLEQ = true
	for _, root := range fo.roots {
		stack = append(stack[:0], root)
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if order[i] >= 0 {
				continue
			}
			order[i] = int32(len(out))
			nd := fo.nodes[i]
			out = append(out, nd)
			if nd.mode != mlLeaf {
				fo.allLEQ = fo.allLEQ && nd.mode == mlBranchLEQ
				stack = append(stack, nd.f, nd.t)
			}
		}
	}
	for j := range out {
		if out[j].mode != mlLeaf {
			out[j].t, out[j].f = order[out[j].t], order[out[j].f]
		}
	}
	for k, r := range fo.roots {
		fo.roots[k] = order[r]
	}
	fo.nodes = out
	return nil
}

// rows reads X for the forest and checks it has the features the trees
// read.
func (fo *mlForest) rows(op string, x *tensor.Tensor, types ...tensor.DataType) ([]float64, int, int, error) {
	vs, n, f, err := mlRows(op, x, types...)
	if err != nil {
		return nil, 0, 0, err
	}
	if f < fo.nFeatures {
		return nil, 0, 0, inputErrorf("%s reads feature %d, the input has %d features", op, fo.nFeatures-1, f)
	}
	return vs, n, f, nil
}

// ---------------------------------------------------------------------------
// Opsets 1 and 3: nodes named by (tree id, node id)

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

// mlFloatsOr returns the values of t (a float tensor attribute) if set,
// else of f; setting both is an error.
func mlFloatsOr(name string, f []float32, t *tensor.Tensor) ([]float64, error) {
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

// mlForestV3 compiles opset 1/3 tree attributes with their leaf weights
// (tree id, node id, target, weight).
func mlForestV3(a *TreeEnsembleNodesAttrs, t *TreeEnsembleTensorAttrs, wTree, wNode, wTarget []int64, weights []float64, nTargets int) (*mlForest, error) {
	n := len(a.NodesNodeIDs)
	if n > mlMaxTreeNodes {
		return nil, unsupportedf("tree ensembles of more than %d nodes (this one has %d)", mlMaxTreeNodes, n)
	}
	values, err := mlFloatsOr("nodes_values", a.NodesValues, t.NodesValuesAsTensor)
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
	fo := &mlForest{nodes: make([]mlTreeNode, n), nTargets: nTargets}
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
		mode, ok := mlTreeModeNames[a.NodesModes[i]]
		if !ok || mode == mlBranchMember {
			return nil, fmt.Errorf("node mode %q is not one of BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT, BRANCH_EQ, BRANCH_NEQ, LEAF", a.NodesModes[i])
		}
		nd.mode = mode
		if mode == mlLeaf {
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
		if fo.nodes[i].mode == mlLeaf {
			owner[j] = i
			count[i+1]++
		}
	}
	for i := range n {
		count[i+1] += count[i]
		if fo.nodes[i].mode == mlLeaf {
			fo.nodes[i].t, fo.nodes[i].f = count[i], count[i]
		}
	}
	fo.weights = make([]mlLeafWeight, count[n])
	for j, i := range owner {
		if i < 0 {
			continue
		}
		nd := &fo.nodes[i]
		fo.weights[nd.f] = mlLeafWeight{target: int32(wTarget[j]), w: weights[j]}
		nd.f++
	}
	return fo, fo.finish()
}

func buildTreeEnsembleRegressor1(n *node, a *TreeEnsembleRegressor1Attrs) (opFunc, error) {
	return buildTreeEnsembleRegressor3(n, &TreeEnsembleRegressorAttrs{TreeEnsembleRegressor1Attrs: *a})
}

func buildTreeEnsembleRegressor3(n *node, a *TreeEnsembleRegressorAttrs) (opFunc, error) {
	if err := mlArity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	post, err := parseMLPost(a.PostTransform)
	if err != nil {
		return nil, err
	}
	agg, err := parseMLAggregate(a.AggregateFunction)
	if err != nil {
		return nil, err
	}
	weights, err := mlFloatsOr("target_weights", a.TargetWeights, a.TargetWeightsAsTensor)
	if err != nil {
		return nil, err
	}
	base, err := mlFloatsOr("base_values", a.BaseValues, a.BaseValuesAsTensor)
	if err != nil {
		return nil, err
	}
	nt := 1
	if a.NTargets != nil {
		if *a.NTargets < 1 || *a.NTargets > mlMaxTargets {
			return nil, fmt.Errorf("n_targets %d is out of range", *a.NTargets)
		}
		nt = int(*a.NTargets)
	} else if len(a.TargetIDs) > 0 {
		nt = int(min(max(slices.Max(a.TargetIDs), 0), mlMaxTargets-1)) + 1
	}
	if len(base) != 0 && len(base) != nt {
		return nil, fmt.Errorf("has %d base_values for %d targets", len(base), nt)
	}
	fo, err := mlForestV3(&a.TreeEnsembleNodesAttrs, &a.TreeEnsembleTensorAttrs, a.TargetTreeIDs, a.TargetNodeIDs, a.TargetIDs, weights, nt)
	if err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		vs, rows, f, err := fo.rows("TreeEnsembleRegressor", in[0], mlNumeric...)
		if err != nil {
			return nil, err
		}
		if err := mlOutputShape("TreeEnsembleRegressor", rows, nt); err != nil {
			return nil, err
		}
		y := make([]float32, rows*nt)
		all, has := make([]float64, rows*nt), make([]bool, rows*nt)
		fo.predict(vs, rows, f, agg, all, has)
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
	}, nil
}

func buildTreeEnsembleClassifier1(n *node, a *TreeEnsembleClassifier1Attrs) (opFunc, error) {
	return buildTreeEnsembleClassifier3(n, &TreeEnsembleClassifierAttrs{TreeEnsembleClassifier1Attrs: *a})
}

// buildTreeEnsembleClassifier3 compiles a classifier. Its class scores
// are the sums of the leaves' weights plus base_values, post-transformed;
// its label is the class of the highest score among the classes some leaf
// or base value scored. Two classes whose weights all name one class id
// make a binary classifier scoring the positive class: its score s plus
// the base value becomes the pair [1−s, s] when every weight is positive
// (probabilities) or the transform is PROBIT, and [−s, s] otherwise, each
// side then transformed; the
// label is positive when s > 0.5 (probabilities) or s > 0, as ONNX
// Runtime decides it.
func buildTreeEnsembleClassifier3(n *node, a *TreeEnsembleClassifierAttrs) (opFunc, error) {
	if err := mlArity(n, 1, 1, 1, 2); err != nil {
		return nil, err
	}
	post, err := parseMLPost(a.PostTransform)
	if err != nil {
		return nil, err
	}
	labels, err := newMLLabels(a.ClasslabelsInt64s, a.ClasslabelsStrings)
	if err != nil {
		return nil, err
	}
	nc := labels.n()
	if nc < 2 {
		return nil, unsupportedf("a TreeEnsembleClassifier of fewer than two classes")
	}
	weights, err := mlFloatsOr("class_weights", a.ClassWeights, a.ClassWeightsAsTensor)
	if err != nil {
		return nil, err
	}
	base, err := mlFloatsOr("base_values", a.BaseValues, a.BaseValuesAsTensor)
	if err != nil {
		return nil, err
	}
	fo, err := mlForestV3(&a.TreeEnsembleNodesAttrs, &a.TreeEnsembleTensorAttrs, a.ClassTreeIDs, a.ClassNodeIDs, a.ClassIDs, weights, nc)
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
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		vs, rows, f, err := fo.rows("TreeEnsembleClassifier", in[0], mlNumeric...)
		if err != nil {
			return nil, err
		}
		if err := mlOutputShape("TreeEnsembleClassifier", rows, nc); err != nil {
			return nil, err
		}
		z := make([]float32, rows*nc)
		idx := make([]int, rows)
		all, hasAll := make([]float64, rows*nc), make([]bool, rows*nc)
		fo.predict(vs, rows, f, mlAggSum, all, hasAll)
		for r := range rows {
			s, has := all[r*nc:(r+1)*nc], hasAll[r*nc:(r+1)*nc]
			if binary >= 0 {
				v := s[binary] + bias
				th := 0.0
				if probs {
					th = 0.5
				}
				idx[r] = 0
				if v > th {
					idx[r] = 1
				}
				if probs && post == mlPostNone || post == mlPostProbit {
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
					best = mlArgmax(s)
				}
				idx[r] = best
				post.apply(s)
			}
			for j, v := range s {
				z[r*nc+j] = float32(v)
			}
		}
		return []*tensor.Tensor{labels.tensor(idx), tensor.From([]int{rows, nc}, z)}, nil
	}, nil
}

// ---------------------------------------------------------------------------
// Opset 5: TreeEnsemble

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

// mlForestV5 compiles TreeEnsemble's attributes: branches are nodes
// 0..n−1, leaf j becomes node n+j.
func mlForestV5(a *TreeEnsembleAttrs) (*mlForest, error) {
	if a.NodesSplits == nil || a.NodesModes == nil || a.LeafWeights == nil {
		return nil, fmt.Errorf("needs nodes_splits, nodes_modes and leaf_weights")
	}
	if a.NTargets == nil || *a.NTargets < 1 || *a.NTargets > mlMaxTargets {
		return nil, fmt.Errorf("needs n_targets between 1 and %d", mlMaxTargets)
	}
	n, nl := len(a.NodesFeatureIDs), len(a.LeafTargetIDs)
	if n+nl > mlMaxTreeNodes {
		return nil, unsupportedf("tree ensembles of more than %d nodes (this one has %d)", mlMaxTreeNodes, n+nl)
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
	fo := &mlForest{nodes: make([]mlTreeNode, n+nl), weights: make([]mlLeafWeight, nl), nTargets: int(*a.NTargets)}
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
		if modes[i] < 0 || modes[i] > int64(mlBranchMember) {
			return nil, fmt.Errorf("node %d has mode %d", i, modes[i])
		}
		nd.mode = mlTreeMode(modes[i])
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
		if nd.mode == mlBranchMember {
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
		fo.nodes[n+j] = mlTreeNode{mode: mlLeaf, t: int32(j), f: int32(j + 1)}
		if a.LeafTargetIDs[j] < 0 || a.LeafTargetIDs[j] >= *a.NTargets {
			return nil, fmt.Errorf("leaf %d is for target %d, out of range for %d", j, a.LeafTargetIDs[j], *a.NTargets)
		}
		fo.weights[j] = mlLeafWeight{target: int32(a.LeafTargetIDs[j]), w: lw[j]}
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

func buildTreeEnsemble(n *node, a *TreeEnsembleAttrs) (opFunc, error) {
	if err := mlArity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	if a.PostTransform < 0 || a.PostTransform > int64(mlPostProbit) {
		return nil, fmt.Errorf("post_transform %d is not one of 0–4", a.PostTransform)
	}
	if a.AggregateFunction < 0 || a.AggregateFunction > int64(mlAggMax) {
		return nil, fmt.Errorf("aggregate_function %d is not one of 0–3", a.AggregateFunction)
	}
	post, agg := mlPost(a.PostTransform), mlAggregate(a.AggregateFunction)
	fo, err := mlForestV5(a)
	if err != nil {
		return nil, err
	}
	nt := fo.nTargets
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		vs, rows, f, err := fo.rows("TreeEnsemble", in[0], tensor.Float32, tensor.Float64, tensor.Float16)
		if err != nil {
			return nil, err
		}
		if err := mlOutputShape("TreeEnsemble", rows, nt); err != nil {
			return nil, err
		}
		y := make([]float64, rows*nt)
		fo.predict(vs, rows, f, agg, y, make([]bool, rows*nt))
		for r := range rows {
			post.apply(y[r*nt : (r+1)*nt])
		}
		out := &tensor.Tensor{DType: tensor.Float64, Shape: []int{rows, nt}, Data: y}
		if in[0].DType != tensor.Float64 {
			if out, err = castTo(out, in[0].DType); err != nil {
				return nil, err
			}
		}
		return []*tensor.Tensor{out}, nil
	}, nil
}
