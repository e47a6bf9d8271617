// Command mlref computes reference outputs with ONNX Runtime for a set of
// ai.onnx.ml models built here — tree ensembles, linear and SVM models,
// encoders and scalers shaped as scikit-learn's exports are — so that
// ops/ml's tests check quantserve against the reference runtime without
// needing it installed.
//
//	d=$(mktemp -d) && cp -r ../shared/peers/ort/. "$d" && (cd "$d" && ONNXRUNTIME_NODE_INSTALL_CUDA=skip npm install)
//	go run -C tools ./mlref -ort "$d"
//
// It writes ops/ml/testdata/ml-ort/<case>/{model.onnx, test_data_set_0/
// input_N.pb, output_N.pb}, laid out as ONNX's node tests are. The cases
// are those where ONNX's specification and ONNX Runtime agree; where they
// part (binary classifiers under SOFTMAX or PROBIT, transforms of one
// regression target, TreeEnsemble's post_transform numbering) the tests
// in ops/ml check the specification by hand.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/oip"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
	"github.com/quantserve/quantserve/tools/internal/ortshim"
)

type io struct {
	name  string
	dtype tensor.DataType
	shape []int // -1: dynamic
}

type refCase struct {
	opset int64
	node  *onnxpb.Node
	ins   []io
	outs  []io
	feed  []*tensor.Tensor // parallel to ins
}

func main() {
	ortDir := flag.String("ort", "", "a copy of ../shared/peers/ort with onnxruntime-node installed")
	out := flag.String("out", "../ops/ml/testdata/ml-ort", "where to write the cases (the default is relative to tools/)")
	flag.Parse()
	if *ortDir == "" {
		log.Fatal("-ort is required (see the package doc)")
	}
	cases := buildCases()
	repo, err := os.MkdirTemp("", "mlref")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(repo)
	models := map[string][]byte{}
	for name, c := range cases {
		models[name] = modelBytes(c)
		dir := filepath.Join(repo, name, "1")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "model.onnx"), models[name], 0o644); err != nil {
			log.Fatal(err)
		}
	}
	base, stop := ortshim.Start(*ortDir, repo)
	defer stop()
	if err := os.RemoveAll(*out); err != nil {
		log.Fatal(err)
	}
	names := make([]string, 0, len(cases))
	for name := range cases {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c := cases[name]
		outs, err := infer(base, name, c)
		if err != nil {
			log.Fatalf("%s: %v", name, err)
		}
		dir := filepath.Join(*out, name, "test_data_set_0")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*out, name, "model.onnx"), models[name], 0o644); err != nil {
			log.Fatal(err)
		}
		write := func(file string, t *tensor.Tensor) {
			if err := os.WriteFile(filepath.Join(dir, file), onnxpb.MarshalTensor(model.TensorToONNX(file, t)), 0o644); err != nil {
				log.Fatal(err)
			}
		}
		for i, t := range c.feed {
			write(fmt.Sprintf("input_%d.pb", i), t)
		}
		for i, t := range outs {
			write(fmt.Sprintf("output_%d.pb", i), t)
		}
	}
	log.Printf("wrote %d ONNX Runtime reference cases to %s", len(cases), *out)
}

func infer(base, name string, c refCase) ([]*tensor.Tensor, error) {
	body := []byte(`{"inputs":[`)
	for i, t := range c.feed {
		if i > 0 {
			body = append(body, ',')
		}
		body = oip.AppendTensor(body, c.ins[i].name, t)
	}
	body = append(body, "]}"...)
	resp, err := http.Post(base+"/v2/models/"+name+"/infer", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Outputs []json.RawMessage
		Error   string
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || len(r.Outputs) != len(c.outs) {
		return nil, fmt.Errorf("ONNX Runtime answered %s %v %s", resp.Status, err, r.Error)
	}
	var outs []*tensor.Tensor
	for _, o := range r.Outputs {
		t, err := oip.DecodeTensor(o)
		if err != nil {
			return nil, err
		}
		outs = append(outs, t)
	}
	return outs, nil
}

func modelBytes(c refCase) []byte {
	g := &onnxpb.Graph{Name: "ml"}
	c.node.Domain, c.node.Name = "ai.onnx.ml", c.node.OpType
	g.Nodes = []*onnxpb.Node{c.node}
	vi := func(v io) *onnxpb.ValueInfo {
		t := &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: model.DataTypeToONNX(v.dtype), HasShape: true}
		for _, d := range v.shape {
			if d < 0 {
				t.Shape = append(t.Shape, onnxpb.Dim{Param: "N"})
			} else {
				t.Shape = append(t.Shape, onnxpb.Dim{Value: int64(d), HasValue: true})
			}
		}
		return &onnxpb.ValueInfo{Name: v.name, Type: t}
	}
	for _, v := range c.ins {
		g.Inputs = append(g.Inputs, vi(v))
	}
	for _, v := range c.outs {
		g.Outputs = append(g.Outputs, vi(v))
	}
	return onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, Graph: g, ProducerName: "quantserve mlref",
		OpsetImport: []onnxpb.OpsetID{{Version: 13}, {Domain: "ai.onnx.ml", Version: c.opset}}})
}

// Attribute helpers.

func ints(name string, v ...int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInts, Ints: v}
}

func floats(name string, v ...float32) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrFloats, Floats: v}
}

func strs(name string, v ...string) *onnxpb.Attribute {
	a := &onnxpb.Attribute{Name: name, Type: onnxpb.AttrStrings}
	for _, s := range v {
		a.Strings = append(a.Strings, []byte(s))
	}
	return a
}

func str(name, v string) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrString, S: []byte(v)}
}

func integer(name string, v int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInt, I: v}
}

func tensorAttr(name string, t *tensor.Tensor) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrTensor, T: model.TensorToONNX(name, t)}
}

func node(op string, in, out []string, attrs ...*onnxpb.Attribute) *onnxpb.Node {
	return &onnxpb.Node{OpType: op, Inputs: in, Outputs: out, Attributes: attrs}
}

// forest is a seeded ensemble of full binary trees (BRANCH_LEQ, as
// scikit-learn writes them) whose every leaf weighs every id in ids.
type forest struct {
	treeIDs, nodeIDs, feats, trues, falses []int64
	wTree, wNode, wIDs                     []int64
	modes                                  []string
	values, weights                        []float32
}

func newForest(r *rand.Rand, trees, depth, f int, ids []int64, positive bool) *forest {
	fo := &forest{}
	per := 1<<(depth+1) - 1
	for tr := range trees {
		for id := range per {
			fo.treeIDs, fo.nodeIDs = append(fo.treeIDs, int64(tr)), append(fo.nodeIDs, int64(id))
			if id >= per/2 {
				fo.feats, fo.trues, fo.falses = append(fo.feats, 0), append(fo.trues, 0), append(fo.falses, 0)
				fo.modes, fo.values = append(fo.modes, "LEAF"), append(fo.values, 0)
				for _, c := range ids {
					w := float32(r.NormFloat64())
					if positive {
						w = float32(r.Float64() / float64(trees))
					}
					fo.wTree, fo.wNode, fo.wIDs, fo.weights = append(fo.wTree, int64(tr)), append(fo.wNode, int64(id)), append(fo.wIDs, c), append(fo.weights, w)
				}
				continue
			}
			fo.feats, fo.modes = append(fo.feats, int64(r.IntN(f))), append(fo.modes, "BRANCH_LEQ")
			fo.values = append(fo.values, float32(math.Round(r.NormFloat64()*8)/8))
			fo.trues, fo.falses = append(fo.trues, int64(2*id+1)), append(fo.falses, int64(2*id+2))
		}
	}
	return fo
}

func (fo *forest) attrs(prefix string) []*onnxpb.Attribute {
	return []*onnxpb.Attribute{ints("nodes_treeids", fo.treeIDs...), ints("nodes_nodeids", fo.nodeIDs...),
		ints("nodes_featureids", fo.feats...), strs("nodes_modes", fo.modes...), floats("nodes_values", fo.values...),
		ints("nodes_truenodeids", fo.trues...), ints("nodes_falsenodeids", fo.falses...),
		ints(prefix+"_treeids", fo.wTree...), ints(prefix+"_nodeids", fo.wNode...), ints(prefix+"_ids", fo.wIDs...),
		floats(prefix+"_weights", fo.weights...)}
}

// v5 writes the forest as TreeEnsemble's position-based attributes, one
// target per leaf (the last of its weights).
func (fo *forest) v5() []*onnxpb.Attribute {
	var feat, tru, fal, tl, fl, roots, leafT []int64
	var splits, leafW []float32
	var modes []uint8
	pos, leaf := map[[2]int64]int64{}, map[[2]int64]int64{}
	for i := range fo.nodeIDs {
		k := [2]int64{fo.treeIDs[i], fo.nodeIDs[i]}
		if fo.modes[i] == "LEAF" {
			leaf[k] = int64(len(leafW))
			for j := range fo.wTree {
				if fo.wTree[j] == k[0] && fo.wNode[j] == k[1] {
					leafW, leafT = append(leafW, fo.weights[j]), append(leafT, fo.wIDs[j])
					break
				}
			}
		} else {
			pos[k] = int64(len(pos))
		}
	}
	for i := range fo.nodeIDs {
		if fo.modes[i] == "LEAF" {
			continue
		}
		if fo.nodeIDs[i] == 0 {
			roots = append(roots, pos[[2]int64{fo.treeIDs[i], 0}])
		}
		feat, modes, splits = append(feat, fo.feats[i]), append(modes, 0), append(splits, fo.values[i])
		for _, c := range []struct {
			id       int64
			ids, lfs *[]int64
		}{{fo.trues[i], &tru, &tl}, {fo.falses[i], &fal, &fl}} {
			k := [2]int64{fo.treeIDs[i], c.id}
			if p, ok := leaf[k]; ok {
				*c.ids, *c.lfs = append(*c.ids, p), append(*c.lfs, 1)
			} else {
				*c.ids, *c.lfs = append(*c.ids, pos[k]), append(*c.lfs, 0)
			}
		}
	}
	return []*onnxpb.Attribute{ints("nodes_featureids", feat...),
		tensorAttr("nodes_modes", &tensor.Tensor{DType: tensor.Uint8, Shape: []int{len(modes)}, Data: modes}),
		tensorAttr("nodes_splits", tensor.From([]int{len(splits)}, splits)), ints("nodes_truenodeids", tru...),
		ints("nodes_falsenodeids", fal...), ints("nodes_trueleafs", tl...), ints("nodes_falseleafs", fl...),
		ints("tree_roots", roots...), ints("leaf_targetids", leafT...), tensorAttr("leaf_weights", tensor.From([]int{len(leafW)}, leafW))}
}

func randRows(r *rand.Rand, n, f int) *tensor.Tensor {
	v := make([]float32, n*f)
	for i := range v {
		v[i] = float32(math.Round(r.NormFloat64()*16) / 8)
	}
	return tensor.From([]int{n, f}, v)
}

func randFloats(r *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * scale)
	}
	return v
}

func buildCases() map[string]refCase {
	r := rand.New(rand.NewPCG(20, 26))
	x5 := []io{{"X", tensor.Float32, []int{-1, 5}}}
	cases := map[string]refCase{}
	// Regressors: every aggregate, one and three targets.
	for _, agg := range []string{"SUM", "AVERAGE", "MIN", "MAX"} {
		for _, nt := range []int{1, 3} {
			ids := []int64{0, 1, 2}[:nt]
			fo := newForest(r, 12, 4, 5, ids, false)
			attrs := append(fo.attrs("target"), str("aggregate_function", agg), integer("n_targets", int64(nt)),
				floats("base_values", randFloats(r, nt, 1)...))
			if nt == 3 {
				attrs = append(attrs, str("post_transform", "SOFTMAX"))
			}
			cases[fmt.Sprintf("tree_regressor_%s_%d", agg, nt)] = refCase{opset: 3, ins: x5,
				node: node("TreeEnsembleRegressor", []string{"X"}, []string{"Y"}, attrs...),
				outs: []io{{"Y", tensor.Float32, []int{-1, nt}}}, feed: []*tensor.Tensor{randRows(r, 50, 5)}}
		}
	}
	// Classifiers: a random forest's probabilities (three classes, int and
	// string labels), the binary forms scikit-learn's exports take.
	for _, post := range []string{"NONE", "SOFTMAX", "LOGISTIC"} {
		fo := newForest(r, 10, 4, 5, []int64{0, 1, 2}, true)
		cases["tree_classifier_"+post] = refCase{opset: 3, ins: x5,
			node: node("TreeEnsembleClassifier", []string{"X"}, []string{"Y", "Z"}, append(fo.attrs("class"), ints("classlabels_int64s", 2, 4, 8), str("post_transform", post))...),
			outs: []io{{"Y", tensor.Int64, []int{-1}}, {"Z", tensor.Float32, []int{-1, 3}}}, feed: []*tensor.Tensor{randRows(r, 50, 5)}}
	}
	fo := newForest(r, 10, 4, 5, []int64{0, 1, 2}, true)
	cases["tree_classifier_strings"] = refCase{opset: 3, ins: x5,
		node: node("TreeEnsembleClassifier", []string{"X"}, []string{"Y", "Z"}, append(fo.attrs("class"), strs("classlabels_strings", "setosa", "versicolor", "virginica"))...),
		outs: []io{{"Y", tensor.String, []int{-1}}, {"Z", tensor.Float32, []int{-1, 3}}}, feed: []*tensor.Tensor{randRows(r, 50, 5)}}
	fo = newForest(r, 10, 4, 5, []int64{0}, true)
	cases["tree_classifier_binary_probabilities"] = refCase{opset: 1, ins: x5,
		node: node("TreeEnsembleClassifier", []string{"X"}, []string{"Y", "Z"}, append(fo.attrs("class"), ints("classlabels_int64s", 0, 1))...),
		outs: []io{{"Y", tensor.Int64, []int{-1}}, {"Z", tensor.Float32, []int{-1, 2}}}, feed: []*tensor.Tensor{randRows(r, 50, 5)}}
	fo = newForest(r, 10, 4, 5, []int64{0}, false)
	cases["tree_classifier_binary_margins"] = refCase{opset: 3, ins: x5,
		node: node("TreeEnsembleClassifier", []string{"X"}, []string{"Y", "Z"}, append(fo.attrs("class"), ints("classlabels_int64s", 0, 1),
			str("post_transform", "LOGISTIC"), floats("base_values", 0.3))...),
		outs: []io{{"Y", tensor.Int64, []int{-1}}, {"Z", tensor.Float32, []int{-1, 2}}}, feed: []*tensor.Tensor{randRows(r, 50, 5)}}
	// TreeEnsemble (opset 5), no transform.
	for agg, name := range []string{"AVERAGE", "SUM", "MIN", "MAX"} {
		fo := newForest(r, 8, 4, 5, []int64{0, 1}, false)
		cases["tree_ensemble5_"+name] = refCase{opset: 5, ins: x5,
			node: node("TreeEnsemble", []string{"X"}, []string{"Y"}, append(fo.v5(), integer("n_targets", 2), integer("aggregate_function", int64(agg)))...),
			outs: []io{{"Y", tensor.Float32, []int{-1, 2}}}, feed: []*tensor.Tensor{randRows(r, 50, 5)}}
	}
	// Linear models.
	for _, post := range []string{"NONE", "LOGISTIC"} {
		cases["linear_classifier_binary_"+post] = refCase{opset: 1, ins: x5,
			node: node("LinearClassifier", []string{"X"}, []string{"Y", "Z"}, floats("coefficients", randFloats(r, 5, 1)...), floats("intercepts", 0.25),
				ints("classlabels_ints", 0, 1), str("post_transform", post)),
			outs: []io{{"Y", tensor.Int64, []int{-1}}, {"Z", tensor.Float32, []int{-1, 2}}}, feed: []*tensor.Tensor{randRows(r, 30, 5)}}
	}
	for _, post := range []string{"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO"} {
		cases["linear_classifier_"+post] = refCase{opset: 1, ins: x5,
			node: node("LinearClassifier", []string{"X"}, []string{"Y", "Z"}, floats("coefficients", randFloats(r, 15, 1)...), floats("intercepts", randFloats(r, 3, 1)...),
				strs("classlabels_strings", "a", "b", "c"), str("post_transform", post)),
			outs: []io{{"Y", tensor.String, []int{-1}}, {"Z", tensor.Float32, []int{-1, 3}}}, feed: []*tensor.Tensor{randRows(r, 30, 5)}}
	}
	cases["linear_regressor"] = refCase{opset: 1, ins: x5,
		node: node("LinearRegressor", []string{"X"}, []string{"Y"}, floats("coefficients", randFloats(r, 10, 1)...), floats("intercepts", 0.5, -1), integer("targets", 2)),
		outs: []io{{"Y", tensor.Float32, []int{-1, 2}}}, feed: []*tensor.Tensor{randRows(r, 30, 5)}}
	// SVMs: every kernel; classifiers of two and three classes, with and
	// without probabilities.
	for _, kern := range []string{"LINEAR", "POLY", "RBF", "SIGMOID"} {
		for _, nc := range []int{2, 3} {
			for _, proba := range []bool{false, true} {
				vpc := []int64{3, 2, 4}[:nc]
				nv := 0
				for _, v := range vpc {
					nv += int(v)
				}
				pairs := nc * (nc - 1) / 2
				attrs := []*onnxpb.Attribute{floats("support_vectors", randFloats(r, nv*5, 1)...), ints("vectors_per_class", vpc...),
					floats("coefficients", randFloats(r, (nc-1)*nv, 1)...), floats("rho", randFloats(r, pairs, 0.5)...),
					str("kernel_type", kern), floats("kernel_params", 0.2, 0.5, 3), ints("classlabels_ints", []int64{1, 2, 3}[:nc]...)}
				if proba {
					a, b := randFloats(r, pairs, 0.5), randFloats(r, pairs, 0.1)
					for i := range a {
						a[i] = -1 - float32(math.Abs(float64(a[i])))
					}
					attrs = append(attrs, floats("prob_a", a...), floats("prob_b", b...))
				}
				w := nc
				if !proba {
					w = max(pairs, 2)
				}
				cases[fmt.Sprintf("svm_classifier_%s_%d_%v", kern, nc, proba)] = refCase{opset: 1, ins: x5,
					node: node("SVMClassifier", []string{"X"}, []string{"Y", "Z"}, attrs...),
					outs: []io{{"Y", tensor.Int64, []int{-1}}, {"Z", tensor.Float32, []int{-1, w}}}, feed: []*tensor.Tensor{randRows(r, 30, 5)}}
			}
		}
		cases["svm_regressor_"+kern] = refCase{opset: 1, ins: x5,
			node: node("SVMRegressor", []string{"X"}, []string{"Y"}, floats("support_vectors", randFloats(r, 20, 1)...), floats("coefficients", randFloats(r, 4, 1)...),
				integer("n_supports", 4), floats("rho", 0.1), str("kernel_type", kern), floats("kernel_params", 0.2, 0.5, 3)),
			outs: []io{{"Y", tensor.Float32, []int{-1, 1}}}, feed: []*tensor.Tensor{randRows(r, 30, 5)}}
	}
	// Encoders and scalers.
	for _, norm := range []string{"MAX", "L1", "L2"} {
		cases["normalizer_"+norm] = refCase{opset: 1, ins: x5, node: node("Normalizer", []string{"X"}, []string{"Y"}, str("norm", norm)),
			outs: []io{{"Y", tensor.Float32, []int{-1, 5}}}, feed: []*tensor.Tensor{randRows(r, 20, 5)}}
	}
	cases["scaler"] = refCase{opset: 1, ins: x5, node: node("Scaler", []string{"X"}, []string{"Y"}, floats("offset", randFloats(r, 5, 1)...), floats("scale", randFloats(r, 5, 1)...)),
		outs: []io{{"Y", tensor.Float32, []int{-1, 5}}}, feed: []*tensor.Tensor{randRows(r, 20, 5)}}
	cases["imputer"] = refCase{opset: 1, ins: x5, node: node("Imputer", []string{"X"}, []string{"Y"}, floats("imputed_value_floats", 1, 2, 3, 4, 5)),
		outs: []io{{"Y", tensor.Float32, []int{-1, 5}}}, feed: []*tensor.Tensor{randRows(r, 20, 5)}}
	cases["binarizer"] = refCase{opset: 1, ins: x5, node: node("Binarizer", []string{"X"}, []string{"Y"}, &onnxpb.Attribute{Name: "threshold", Type: onnxpb.AttrFloat, F: 0.25}),
		outs: []io{{"Y", tensor.Float32, []int{-1, 5}}}, feed: []*tensor.Tensor{randRows(r, 20, 5)}}
	cases["one_hot_encoder"] = refCase{opset: 1, ins: []io{{"X", tensor.Int64, []int{-1, 3}}}, node: node("OneHotEncoder", []string{"X"}, []string{"Y"}, ints("cats_int64s", 3, 1, 4, 5)),
		outs: []io{{"Y", tensor.Float32, []int{-1, 3, 4}}}, feed: []*tensor.Tensor{tensor.From([]int{3, 3}, []int64{1, 3, 9, 5, 5, 4, 0, 1, 3})}}
	cases["category_mapper"] = refCase{opset: 1, ins: []io{{"X", tensor.String, []int{-1}}},
		node: node("CategoryMapper", []string{"X"}, []string{"Y"}, strs("cats_strings", "red", "green", "blue"), ints("cats_int64s", 10, 20, 30), integer("default_int64", -7)),
		outs: []io{{"Y", tensor.Int64, []int{-1}}}, feed: []*tensor.Tensor{tensor.From([]int{5}, []string{"blue", "red", "mauve", "green", "red"})}}
	cases["label_encoder"] = refCase{opset: 2, ins: []io{{"X", tensor.Int64, []int{-1}}},
		node: node("LabelEncoder", []string{"X"}, []string{"Y"}, ints("keys_int64s", 7, 8, 9), strs("values_strings", "seven", "eight", "nine"), str("default_string", "other")),
		outs: []io{{"Y", tensor.String, []int{-1}}}, feed: []*tensor.Tensor{tensor.From([]int{4}, []int64{9, 1, 7, 8})}}
	cases["feature_vectorizer"] = refCase{opset: 1, ins: []io{{"A", tensor.Float32, []int{-1, 3}}, {"B", tensor.Float32, []int{-1, 2}}},
		node: node("FeatureVectorizer", []string{"A", "B"}, []string{"Y"}, ints("inputdimensions", 3, 2)),
		outs: []io{{"Y", tensor.Float32, []int{-1, 5}}}, feed: []*tensor.Tensor{randRows(r, 4, 3), randRows(r, 4, 2)}}
	cases["array_feature_extractor"] = refCase{opset: 1, ins: []io{{"X", tensor.Float32, []int{-1, 5}}, {"I", tensor.Int64, []int{-1}}},
		node: node("ArrayFeatureExtractor", []string{"X", "I"}, []string{"Y"}),
		outs: []io{{"Y", tensor.Float32, []int{-1, 3}}}, feed: []*tensor.Tensor{randRows(r, 4, 5), tensor.From([]int{3}, []int64{4, 0, 2})}}
	return cases
}
