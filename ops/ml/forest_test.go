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
	"github.com/quantserve/quantserve/onnx/onnxpb"
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
		return compileErr(node("TreeEnsembleRegressor", 3, 1, append(attrs, opstest.AttrInt("n_targets", 2))...), 1)
	}
	v5 := func(attrs []*onnxpb.Attribute) error {
		return compileErr(node("TreeEnsemble", 5, 1, attrs...), 1)
	}
	cases := map[string]error{
		"branch to a missing node": reg(replaceAttr(handTrees("target"), opstest.AttrInts("nodes_falsenodeids", 2, 0, 0, 1, 0, 9, 0, 0))...),
		"weight for target 2 of 2": reg(replaceAttr(handTrees("target"), opstest.AttrInts("target_ids", 0, 1, 0, 1, 0, 0, 1, 2))...),
		"unknown mode":             reg(replaceAttr(handTrees("target"), opstest.AttrStrings("nodes_modes", "BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_LT", "LEAF", "BRANCH_ALMOST", "LEAF", "LEAF"))...),
		"a cycle": reg(replaceAttr(replaceAttr(handTrees("target"), opstest.AttrInts("nodes_truenodeids", 1, 0, 0, 1, 0, 0, 0, 0)),
			opstest.AttrStrings("nodes_modes", "BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_LT", "BRANCH_LEQ", "BRANCH_EQ", "LEAF", "LEAF"))...),
		"short nodes_values":    reg(replaceAttr(handTrees("target"), opstest.AttrFloats("nodes_values", 1, 2))...),
		"member without values": v5(replaceAttr(v5Attrs(1, 0), opstest.AttrTensor("membership_values", tensor.From([]int{1}, []float64{2})))),
		"root out of range":     v5(replaceAttr(v5Attrs(1, 0), opstest.AttrInts("tree_roots", 0, 7))),
		"leaf out of range":     v5(replaceAttr(v5Attrs(1, 0), opstest.AttrInts("nodes_falsenodeids", 2, 1, 9))),
		"aggregate 4":           v5(replaceAttr(v5Attrs(1, 0), opstest.AttrInt("aggregate_function", 4))),
		"negative feature":      v5(replaceAttr(v5Attrs(1, 0), opstest.AttrInts("nodes_featureids", 0, -1, 0))),
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
	err := v5([]*onnxpb.Attribute{opstest.AttrInts("nodes_featureids", feat...), opstest.AttrTensor("nodes_modes", modes),
		opstest.AttrTensor("nodes_splits", tensor.From([]int{deep}, make([]float32, deep))), opstest.AttrInts("nodes_truenodeids", trueIDs...),
		opstest.AttrInts("nodes_trueleafs", tl...), opstest.AttrInts("nodes_falsenodeids", falseIDs...), opstest.AttrInts("nodes_falseleafs", fl...),
		opstest.AttrInts("leaf_targetids", 0), opstest.AttrTensor("leaf_weights", tensor.From([]int{1}, []float32{1})), opstest.AttrInts("tree_roots", 0), opstest.AttrInt("n_targets", 2)})
	if !errors.Is(err, ops.ErrUnsupported) || !strings.Contains(err.Error(), "deeper") {
		t.Errorf("a tree %d deep: %v, want refused as too deep", deep, err)
	}
	// Run-time: too few features, too many dimensions.
	n := node("TreeEnsembleRegressor", 3, 1, append(handTrees("target"), opstest.AttrInt("n_targets", 2))...)
	if err := runErr(t, n, tensor.From([]int{2, 1}, []float32{1, 2})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("one feature: %v, want an input error", err)
	}
	if err := runErr(t, n, tensor.From([]int{1, 1, 2}, []float32{1, 2})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("rank 3: %v, want an input error", err)
	}
	// A tree that is one leaf reads no feature: X may have none.
	leaf := node("TreeEnsembleRegressor", 1, 1,
		opstest.AttrInts("nodes_treeids", 0), opstest.AttrInts("nodes_nodeids", 0), opstest.AttrInts("nodes_featureids", 0), opstest.AttrStrings("nodes_modes", "LEAF"),
		opstest.AttrFloats("nodes_values", 0), opstest.AttrInts("nodes_truenodeids", 0), opstest.AttrInts("nodes_falsenodeids", 0),
		opstest.AttrInts("target_treeids", 0), opstest.AttrInts("target_nodeids", 0), opstest.AttrInts("target_ids", 0), opstest.AttrFloats("target_weights", 2.5))
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
		opstest.AttrInts("nodes_treeids", treeIDs...), opstest.AttrInts("nodes_nodeids", nodeIDs...), opstest.AttrInts("nodes_featureids", feats...),
		opstest.AttrStrings("nodes_modes", modes...), opstest.AttrFloats("nodes_values", values...), opstest.AttrInts("nodes_truenodeids", trues...),
		opstest.AttrInts("nodes_falsenodeids", falses...), opstest.AttrInts("target_treeids", wTree...), opstest.AttrInts("target_nodeids", wNode...),
		opstest.AttrInts("target_ids", wIDs...), opstest.AttrFloats("target_weights", weights...), opstest.AttrInt("n_targets", 1), opstest.AttrString("aggregate_function", "AVERAGE"))
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
		if try(3, "TreeEnsembleRegressor", opstest.AttrInts("nodes_treeids", pick(n, 1)...), opstest.AttrInts("nodes_nodeids", seq(n)...),
			opstest.AttrInts("nodes_featureids", pick(n, 3)...), opstest.AttrStrings("nodes_modes", ms...), opstest.AttrFloats("nodes_values", vals...),
			opstest.AttrInts("nodes_truenodeids", pick(n, n)...), opstest.AttrInts("nodes_falsenodeids", pick(n, n)...), opstest.AttrInts("target_treeids", pick(nw, 1)...),
			opstest.AttrInts("target_nodeids", pick(nw, n)...), opstest.AttrInts("target_ids", pick(nw, 2)...), opstest.AttrFloats("target_weights", make([]float32, nw)...),
			opstest.AttrInt("n_targets", 2)) {
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
		if try(5, "TreeEnsemble", opstest.AttrInts("nodes_featureids", pick(n, 3)...),
			opstest.AttrTensor("nodes_modes", &tensor.Tensor{DType: tensor.Uint8, Shape: []int{n}, Data: m5}), opstest.AttrTensor("nodes_splits", tensor.From([]int{n}, vals)),
			opstest.AttrInts("nodes_truenodeids", tn...), opstest.AttrInts("nodes_falsenodeids", fn...), opstest.AttrInts("nodes_trueleafs", tl...), opstest.AttrInts("nodes_falseleafs", fl...),
			opstest.AttrInts("leaf_targetids", pick(nl, 2)...), opstest.AttrTensor("leaf_weights", tensor.From([]int{nl}, make([]float32, nl))),
			opstest.AttrInts("tree_roots", pick(1+r.IntN(2), n)...), opstest.AttrInt("n_targets", 2),
			opstest.AttrTensor("membership_values", tensor.From([]int{len(members)}, members))) {
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
