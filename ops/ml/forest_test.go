package ml

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func replaceAttr(attrs []*onnxpb.Attribute, a *onnxpb.Attribute) []*onnxpb.Attribute {
	out := []*onnxpb.Attribute{}
	for _, b := range attrs {
		if b.Name != a.Name {
			out = append(out, b)
		}
	}
	return append(out, a)
}

// Malformed or oversized trees are refused at load; inputs the trees
// cannot read are input errors at run time.
func TestTreeEnsemblesRefuseBadTrees(t *testing.T) {
	reg := func(attrs ...*onnxpb.Attribute) error {
		return compileErr(node("TreeEnsembleRegressor", 3, 1, append(attrs, attrInt("n_targets", 2))...), 1)
	}
	v5 := func(attrs []*onnxpb.Attribute) error {
		return compileErr(node("TreeEnsemble", 5, 1, attrs...), 1)
	}
	cases := map[string]error{
		"branch to a missing node": reg(replaceAttr(handTrees("target"), attrInts("nodes_falsenodeids", 2, 0, 0, 1, 0, 9, 0, 0))...),
		"weight for target 2 of 2": reg(replaceAttr(handTrees("target"), attrInts("target_ids", 0, 1, 0, 1, 0, 0, 1, 2))...),
		"unknown mode":             reg(replaceAttr(handTrees("target"), attrStrs("nodes_modes", "BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_LT", "LEAF", "BRANCH_ALMOST", "LEAF", "LEAF"))...),
		"a cycle": reg(replaceAttr(replaceAttr(handTrees("target"), attrInts("nodes_truenodeids", 1, 0, 0, 1, 0, 0, 0, 0)),
			attrStrs("nodes_modes", "BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_LT", "BRANCH_LEQ", "BRANCH_EQ", "LEAF", "LEAF"))...),
		"short nodes_values":    reg(replaceAttr(handTrees("target"), attrFloats("nodes_values", 1, 2))...),
		"member without values": v5(replaceAttr(v5Attrs(1, 0), attrTensor("membership_values", tensor.From([]int{1}, []float64{2})))),
		"root out of range":     v5(replaceAttr(v5Attrs(1, 0), attrInts("tree_roots", 0, 7))),
		"leaf out of range":     v5(replaceAttr(v5Attrs(1, 0), attrInts("nodes_falsenodeids", 2, 1, 9))),
		"aggregate 4":           v5(replaceAttr(v5Attrs(1, 0), attrInt("aggregate_function", 4))),
		"negative feature":      v5(replaceAttr(v5Attrs(1, 0), attrInts("nodes_featureids", 0, -1, 0))),
	}
	for name, err := range cases {
		if err == nil {
			t.Errorf("%s: compiled", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	// A chain deeper than the bound: ErrUnsupported, whatever the nodes.
	const deep = 5000
	feat, trueIDs, falseIDs, tl, fl := make([]int64, deep), make([]int64, deep), make([]int64, deep), make([]int64, deep), make([]int64, deep)
	for i := range deep {
		trueIDs[i], falseIDs[i], fl[i] = int64(i+1), 0, 1
	}
	trueIDs[deep-1], tl[deep-1] = 0, 1
	modes := &tensor.Tensor{DType: tensor.Uint8, Shape: []int{deep}, Data: make([]uint8, deep)}
	err := v5([]*onnxpb.Attribute{attrInts("nodes_featureids", feat...), attrTensor("nodes_modes", modes),
		attrTensor("nodes_splits", tensor.From([]int{deep}, make([]float32, deep))), attrInts("nodes_truenodeids", trueIDs...),
		attrInts("nodes_trueleafs", tl...), attrInts("nodes_falsenodeids", falseIDs...), attrInts("nodes_falseleafs", fl...),
		attrInts("leaf_targetids", 0), attrTensor("leaf_weights", tensor.From([]int{1}, []float32{1})), attrInts("tree_roots", 0), attrInt("n_targets", 2)})
	if !errors.Is(err, ops.ErrUnsupported) || !strings.Contains(err.Error(), "deeper") {
		t.Errorf("a tree %d deep: %v, want refused as too deep", deep, err)
	}
	// Run-time: too few features, too many dimensions.
	n := node("TreeEnsembleRegressor", 3, 1, append(handTrees("target"), attrInt("n_targets", 2))...)
	if err := runErr(t, n, tensor.From([]int{2, 1}, []float32{1, 2})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("one feature: %v, want an input error", err)
	}
	if err := runErr(t, n, tensor.From([]int{1, 1, 2}, []float32{1, 2})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("rank 3: %v, want an input error", err)
	}
	// A tree that is one leaf reads no feature: X may have none.
	leaf := node("TreeEnsembleRegressor", 1, 1,
		attrInts("nodes_treeids", 0), attrInts("nodes_nodeids", 0), attrInts("nodes_featureids", 0), attrStrs("nodes_modes", "LEAF"),
		attrFloats("nodes_values", 0), attrInts("nodes_truenodeids", 0), attrInts("nodes_falsenodeids", 0),
		attrInts("target_treeids", 0), attrInts("target_nodeids", 0), attrInts("target_ids", 0), attrFloats("target_weights", 2.5))
	if y := run(t, leaf, tensor.From([]int{2, 0}, []float32{}))[0]; !slices.Equal(y.Shape, []int{2, 1}) || !near(y, []float64{2.5, 2.5}, 0) {
		t.Errorf("one-leaf tree over no features: %v %v", y.Shape, y.Data)
	}
	// Zero rows give zero rows.
	if y := run(t, n, tensor.From([]int{0, 2}, []float32{}))[0]; !slices.Equal(y.Shape, []int{0, 2}) {
		t.Errorf("zero rows: shape %v", y.Shape)
	}
}

// forestNode is a seeded random forest regressor: trees full binary
// trees of the given depth over f features, BRANCH_LEQ everywhere, as
// scikit-learn's exports are.
func forestNode(trees, depth, f int, seed uint64) opstest.Node {
	r := rand.New(rand.NewPCG(seed, 7))
	var treeIDs, nodeIDs, feats, trues, falses, wTree, wNode, wIDs []int64
	var modes []string
	var values, weights []float32
	per := 1<<(depth+1) - 1
	for tr := range trees {
		for id := range per {
			treeIDs, nodeIDs = append(treeIDs, int64(tr)), append(nodeIDs, int64(id))
			if id >= per/2 { // the last level: leaves
				feats, trues, falses, modes, values = append(feats, 0), append(trues, 0), append(falses, 0), append(modes, "LEAF"), append(values, 0)
				wTree, wNode, wIDs, weights = append(wTree, int64(tr)), append(wNode, int64(id)), append(wIDs, 0), append(weights, float32(r.NormFloat64()))
				continue
			}
			feats, modes, values = append(feats, int64(r.IntN(f))), append(modes, "BRANCH_LEQ"), append(values, float32(r.NormFloat64()))
			trues, falses = append(trues, int64(2*id+1)), append(falses, int64(2*id+2))
		}
	}
	return node("TreeEnsembleRegressor", 3, 1,
		attrInts("nodes_treeids", treeIDs...), attrInts("nodes_nodeids", nodeIDs...), attrInts("nodes_featureids", feats...),
		attrStrs("nodes_modes", modes...), attrFloats("nodes_values", values...), attrInts("nodes_truenodeids", trues...),
		attrInts("nodes_falsenodeids", falses...), attrInts("target_treeids", wTree...), attrInts("target_nodeids", wNode...),
		attrInts("target_ids", wIDs...), attrFloats("target_weights", weights...), attrInt("n_targets", 1), attrStr("aggregate_function", "AVERAGE"))
}

// BenchmarkTreeEnsembleRegressor runs a 100-tree forest of depth 8 over
// 20 features on batches of 1 and 1,000 rows; it reports rows/s.
func BenchmarkTreeEnsembleRegressor(b *testing.B) {
	op, _, err := opstest.Compile(forestNode(100, 8, 20, 1), 1)
	if err != nil {
		b.Fatal(err)
	}
	c := ops.NewContext(context.Background(), gemm.Default(), false)
	r := rand.New(rand.NewPCG(2, 3))
	for _, rows := range []int{1, 1000} {
		x := make([]float32, rows*20)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		in := []*tensor.Tensor{tensor.From([]int{rows, 20}, x)}
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := op.Run(c, in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// Randomly malformed ensembles — ids out of range, cycles, short lists —
// are refused at load or run; none panics.
func TestTreeEnsemblesMalformedNeverPanic(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	// pick returns k values in [0, n), one in twelve out of range.
	pick := func(k, n int) []int64 {
		v := make([]int64, k)
		for i := range v {
			v[i] = int64(r.IntN(max(n, 1)))
			if r.IntN(12) == 0 {
				v[i] = []int64{-1, int64(n)}[r.IntN(2)]
			}
		}
		return v
	}
	modes := []string{"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ", "LEAF"}
	x := tensor.From([]int{3, 3}, []float32{0, 1, 2, float32(math.NaN()), -1, 5, 3, 3, 3})
	try := func(opset int64, op string, attrs ...*onnxpb.Attribute) bool {
		n := node(op, opset, 1, attrs...)
		if compileErr(n, 1) != nil {
			return false
		}
		if err := runErr(t, n, x); err != nil && !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: run: %v", op, err)
		}
		return true
	}
	loaded := 0
	for range 400 {
		n, nw := 1+r.IntN(6), r.IntN(6)
		ms := make([]string, n)
		for i := range ms {
			ms[i] = modes[r.IntN(len(modes))]
		}
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = float32(r.IntN(5) - 1)
		}
		if try(3, "TreeEnsembleRegressor", attrInts("nodes_treeids", pick(n, 1)...), attrInts("nodes_nodeids", seq(n)...),
			attrInts("nodes_featureids", pick(n, 3)...), attrStrs("nodes_modes", ms...), attrFloats("nodes_values", vals...),
			attrInts("nodes_truenodeids", pick(n, n)...), attrInts("nodes_falsenodeids", pick(n, n)...), attrInts("target_treeids", pick(nw, 1)...),
			attrInts("target_nodeids", pick(nw, n)...), attrInts("target_ids", pick(nw, 2)...), attrFloats("target_weights", make([]float32, nw)...),
			attrInt("n_targets", 2)) {
			loaded++
		}
		nl := 1 + r.IntN(4)
		m5 := make([]uint8, n)
		var members []float64
		for i := range m5 {
			m5[i] = uint8(r.IntN(7) + r.IntN(12)/11)
			if m5[i] == 6 && r.IntN(12) > 0 {
				members = append(members, float64(r.IntN(3)), math.NaN())
			}
		}
		tl, fl := pick(n, 2), pick(n, 2)
		tn, fn := make([]int64, n), make([]int64, n)
		for i := range n {
			tn[i], fn[i] = pick(1, []int{n, nl}[min(max(tl[i], 0), 1)])[0], pick(1, []int{n, nl}[min(max(fl[i], 0), 1)])[0]
		}
		if try(5, "TreeEnsemble", attrInts("nodes_featureids", pick(n, 3)...),
			attrTensor("nodes_modes", &tensor.Tensor{DType: tensor.Uint8, Shape: []int{n}, Data: m5}), attrTensor("nodes_splits", tensor.From([]int{n}, vals)),
			attrInts("nodes_truenodeids", tn...), attrInts("nodes_falsenodeids", fn...), attrInts("nodes_trueleafs", tl...), attrInts("nodes_falseleafs", fl...),
			attrInts("leaf_targetids", pick(nl, 2)...), attrTensor("leaf_weights", tensor.From([]int{nl}, make([]float32, nl))),
			attrInts("tree_roots", pick(1+r.IntN(2), n)...), attrInt("n_targets", 2),
			attrTensor("membership_values", tensor.From([]int{len(members)}, members))) {
			loaded++
		}
	}
	t.Logf("%d of 800 compiled", loaded)
	if loaded < 50 {
		t.Errorf("only %d of 800 random ensembles compiled: the run path is barely tried", loaded)
	}
}

func seq(n int) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = int64(i)
	}
	return v
}
