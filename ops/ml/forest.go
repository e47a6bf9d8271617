package ml

import (
	"fmt"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Tree ensembles of the ai.onnx.ml domain: TreeEnsembleRegressor and
// TreeEnsembleClassifier (opsets 1 and 3, trees given as (tree id, node
// id) tuples) and TreeEnsemble (opset 5, trees given by node positions,
// with set-membership branches). All three compile to one forest and
// share its walker.

const (
	// maxTreeNodes bounds the nodes (branches and leaves) of one
	// ensemble, maxTreeDepth the depth of one tree: a model beyond
	// them is refused at load.
	maxTreeNodes = 1 << 24
	maxTreeDepth = 4096
)

type treeMode uint8

const (
	branchLEQ treeMode = iota
	branchLT
	branchGTE
	branchGT
	branchEQ
	branchNEQ
	branchMember
	modeLeaf
)

var treeModeNames = map[string]treeMode{
	"BRANCH_LEQ": branchLEQ, "BRANCH_LT": branchLT, "BRANCH_GTE": branchGTE, "BRANCH_GT": branchGT,
	"BRANCH_EQ": branchEQ, "BRANCH_NEQ": branchNEQ, "BRANCH_MEMBER": branchMember, "LEAF": modeLeaf,
}

// treeNode is one node of a compiled forest, 24 bytes so that a
// forest's nodes stay in cache while a batch walks them.
type treeNode struct {
	value   float64 // a branch's threshold; BRANCH_MEMBER's index in sets
	feature int32
	// A branch goes to node t when its test holds, else to node f. A
	// leaf's weights are weights[t:f].
	t, f        int32
	mode        treeMode
	missingTrue bool // a NaN feature goes to t
}

type leafWeight struct {
	target int32
	w      float64
}

// forest is a compiled tree ensemble.
type forest struct {
	nodes     []treeNode
	sets      [][]float64 // BRANCH_MEMBER's values, each sorted
	weights   []leafWeight
	roots     []int32
	nTargets  int
	nFeatures int  // features the branches read: X needs at least these
	allLEQ    bool // every branch is BRANCH_LEQ
}

type aggregate uint8

const (
	aggAverage aggregate = iota
	aggSum
	aggMin
	aggMax
)

func parseAggregate(s string) (aggregate, error) {
	switch s {
	case "AVERAGE":
		return aggAverage, nil
	case "SUM", "":
		return aggSum, nil
	case "MIN":
		return aggMin, nil
	case "MAX":
		return aggMax, nil
	}
	return 0, fmt.Errorf("aggregate_function %q is not one of AVERAGE, SUM, MIN, MAX", s)
}

// leaf walks the tree rooted at node i for the features x and returns the
// leaf it reaches. A NaN feature fails every comparison but BRANCH_NEQ,
// and goes the true way where missing values track true.
func (fo *forest) leaf(x []float64, i int32) *treeNode {
	nodes := fo.nodes
	if fo.allLEQ { // scikit-learn's trees: one comparison throughout
		for {
			nd := &nodes[i]
			if nd.mode == modeLeaf {
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
		if nd.mode == modeLeaf {
			return nd
		}
		var r bool
		v := x[nd.feature]
		switch nd.mode {
		case branchLEQ:
			r = v <= nd.value
		case branchLT:
			r = v < nd.value
		case branchGTE:
			r = v >= nd.value
		case branchGT:
			r = v > nd.value
		case branchEQ:
			r = v == nd.value
		case branchNEQ:
			r = v != nd.value
		case branchMember:
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
func (fo *forest) predict(x []float64, rows, f int, agg aggregate, s []float64, has []bool) {
	nt := fo.nTargets
	clear(s)
	clear(has)
	for _, root := range fo.roots {
		for r := range rows {
			nd := fo.leaf(x[r*f:(r+1)*f], root)
			for _, lw := range fo.weights[nd.t:nd.f] {
				i := r*nt + int(lw.target)
				switch agg {
				case aggSum, aggAverage:
					s[i] += lw.w
				case aggMin:
					if !has[i] || lw.w < s[i] {
						s[i] = lw.w
					}
				case aggMax:
					if !has[i] || lw.w > s[i] {
						s[i] = lw.w
					}
				}
				has[i] = true
			}
		}
	}
	if agg == aggAverage && len(fo.roots) > 0 {
		for i := range s {
			s[i] /= float64(len(fo.roots))
		}
	}
}

// finish checks the forest: child indices and targets in range, every
// tree acyclic and at most maxTreeDepth deep. It sets nFeatures.
func (fo *forest) finish() error {
	nn := len(fo.nodes)
	if nn > maxTreeNodes {
		return ops.Unsupportedf("tree ensembles of more than %d nodes (this one has %d)", maxTreeNodes, nn)
	}
	for i := range fo.nodes {
		nd := &fo.nodes[i]
		if nd.mode == modeLeaf {
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
			case nd.mode == modeLeaf:
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
				if len(stack) > 2*maxTreeDepth+2 {
					return ops.Unsupportedf("trees deeper than %d", maxTreeDepth)
				}
			default:
				depth[i] = 1 + max(depth[nd.t], depth[nd.f])
				if depth[i] > maxTreeDepth {
					return ops.Unsupportedf("trees deeper than %d", maxTreeDepth)
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
	out := make([]treeNode, 0, nn)
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
			if nd.mode != modeLeaf {
				fo.allLEQ = fo.allLEQ && nd.mode == branchLEQ
				stack = append(stack, nd.f, nd.t)
			}
		}
	}
	for j := range out {
		if out[j].mode != modeLeaf {
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
func (fo *forest) rows(op string, x *tensor.Tensor, types ...tensor.DataType) ([]float64, int, int, error) {
	vs, n, f, err := readRows(op, x, types...)
	if err != nil {
		return nil, 0, 0, err
	}
	if f < fo.nFeatures {
		return nil, 0, 0, ops.InputErrorf("%s reads feature %d, the input has %d features", op, fo.nFeatures-1, f)
	}
	return vs, n, f, nil
}
