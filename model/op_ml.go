package model

import (
	"fmt"
	"math"
	"slices"

	"github.com/quantserve/quantserve/tensor"
)

// The ai.onnx.ml domain: the operators scikit-learn models exported with
// skl2onnx (and similar converters) are made of — tree ensembles, linear
// and SVM models, and the encoders and scalers of their pipelines.

const mlDomain = "ai.onnx.ml"

func init() {
	register(Descriptor{Domain: mlDomain, Type: "ArrayFeatureExtractor", Since: 1, Fold: true}, buildArrayFeatureExtractor)
	register(Descriptor{Domain: mlDomain, Type: "Binarizer", Since: 1, Fold: true}, buildBinarizer)
	register(Descriptor{Domain: mlDomain, Type: "LabelEncoder", Since: 1, Until: 1, Fold: true}, buildLabelEncoder1)
	register(Descriptor{Domain: mlDomain, Type: "LabelEncoder", Since: 2, Until: 3, Fold: true}, buildLabelEncoder2)
	register(Descriptor{Domain: mlDomain, Type: "LabelEncoder", Since: 4, Fold: true}, buildLabelEncoder4)
	register(Descriptor{Domain: mlDomain, Type: "CategoryMapper", Since: 1, Fold: true}, buildCategoryMapper)
	register(Descriptor{Domain: mlDomain, Type: "OneHotEncoder", Since: 1, Fold: true}, buildOneHotEncoder)
	register(Descriptor{Domain: mlDomain, Type: "Imputer", Since: 1, Fold: true}, buildImputer)
	register(Descriptor{Domain: mlDomain, Type: "Scaler", Since: 1, Fold: true}, buildScaler)
	register(Descriptor{Domain: mlDomain, Type: "Normalizer", Since: 1, Fold: true}, buildNormalizer)
	register(Descriptor{Domain: mlDomain, Type: "FeatureVectorizer", Since: 1, Fold: true}, buildFeatureVectorizer)
	register(Descriptor{Domain: mlDomain, Type: "LinearRegressor", Since: 1, Fold: true}, buildLinearRegressor)
	register(Descriptor{Domain: mlDomain, Type: "LinearClassifier", Since: 1, Fold: true}, buildLinearClassifier)
	register(Descriptor{Domain: mlDomain, Type: "SVMRegressor", Since: 1, Fold: true}, buildSVMRegressor)
	register(Descriptor{Domain: mlDomain, Type: "SVMClassifier", Since: 1, Fold: true}, buildSVMClassifier)
	register(Descriptor{Domain: mlDomain, Type: "TreeEnsembleRegressor", Since: 1, Until: 2, Fold: true}, buildTreeEnsembleRegressor1)
	register(Descriptor{Domain: mlDomain, Type: "TreeEnsembleRegressor", Since: 3, Fold: true}, buildTreeEnsembleRegressor3)
	register(Descriptor{Domain: mlDomain, Type: "TreeEnsembleClassifier", Since: 1, Until: 2, Fold: true}, buildTreeEnsembleClassifier1)
	register(Descriptor{Domain: mlDomain, Type: "TreeEnsembleClassifier", Since: 3, Fold: true}, buildTreeEnsembleClassifier3)
	register(Descriptor{Domain: mlDomain, Type: "TreeEnsemble", Since: 5, Fold: true}, buildTreeEnsemble)
	register(Descriptor{Domain: mlDomain, Type: "ZipMap", Since: 1, Refused: true}, buildZipMap)
	register(Descriptor{Domain: mlDomain, Type: "DictVectorizer", Since: 1, Refused: true}, buildMapInput)
	register(Descriptor{Domain: mlDomain, Type: "CastMap", Since: 1, Refused: true}, buildMapInput)
}

// ---------------------------------------------------------------------------
// Shared helpers

// mlArity checks a node's input and output counts; every input of the
// ml operators is required, so none may be left out by an empty name.
func mlArity(n *node, minIn, maxIn, minOut, maxOut int) error {
	if err := n.checkArity(minIn, maxIn, minOut, maxOut); err != nil {
		return err
	}
	if slices.Contains(n.pb.Inputs, "") {
		return fmt.Errorf("leaves out a required input")
	}
	return nil
}

// mlMaxTargets bounds the targets of a regressor: each row's output has
// that many values.
const mlMaxTargets = 1 << 20

// mlRows reads a classifier's or regressor's input X, [N,F] or [F] (one
// row), of a numeric type in ops, as float64 values row after row.
func mlRows(op string, x *tensor.Tensor, types ...tensor.DataType) (v []float64, n, f int, err error) {
	if x == nil {
		return nil, 0, 0, inputErrorf("%s needs its input X", op)
	}
	if !slices.Contains(types, x.DType) {
		return nil, 0, 0, inputErrorf("%s does not take %v input", op, x.DType)
	}
	switch x.Rank() {
	case 1:
		n, f = 1, x.Shape[0]
	case 2:
		n, f = x.Shape[0], x.Shape[1]
	default:
		return nil, 0, 0, inputErrorf("%s takes X of shape [N,F] or [F], got %s", op, tensor.ShapeString(x.Shape))
	}
	return x.Float64s(), n, f, nil
}

var mlNumeric = []tensor.DataType{tensor.Float32, tensor.Float64, tensor.Int64, tensor.Int32}

// mlPost is a classifier's or regressor's post_transform.
type mlPost uint8

const (
	mlPostNone mlPost = iota
	mlPostSoftmax
	mlPostLogistic
	mlPostSoftmaxZero
	mlPostProbit
)

func parseMLPost(s string) (mlPost, error) {
	switch s {
	case "", "NONE":
		return mlPostNone, nil
	case "SOFTMAX":
		return mlPostSoftmax, nil
	case "LOGISTIC":
		return mlPostLogistic, nil
	case "SOFTMAX_ZERO":
		return mlPostSoftmaxZero, nil
	case "PROBIT":
		return mlPostProbit, nil
	}
	return 0, fmt.Errorf("post_transform %q is not one of NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT", s)
}

// apply transforms one row of scores in place.
func (p mlPost) apply(s []float64) {
	switch p {
	case mlPostLogistic:
		for i, v := range s {
			s[i] = mlLogistic(v)
		}
	case mlPostSoftmax:
		mx := math.Inf(-1)
		for _, v := range s {
			mx = max(mx, v)
		}
		sum := 0.0
		for i, v := range s {
			s[i] = math.Exp(v - mx)
			sum += s[i]
		}
		for i := range s {
			s[i] /= sum
		}
	case mlPostSoftmaxZero:
		// Softmax over the nonzero scores; zero scores stay (about) zero.
		mx := math.Inf(-1)
		for _, v := range s {
			mx = max(mx, v)
		}
		expNeg := math.Exp(-mx)
		sum := 0.0
		for i, v := range s {
			if v > 1e-7 || v < -1e-7 {
				s[i] = math.Exp(v - mx)
			} else {
				s[i] = v * expNeg
			}
			sum += s[i]
		}
		for i := range s {
			if sum == 0 {
				s[i] = 0.5
			} else {
				s[i] /= sum
			}
		}
	case mlPostProbit:
		for i, v := range s {
			s[i] = mlProbit(v)
		}
	}
}

func mlLogistic(v float64) float64 {
	e := 1 / (1 + math.Exp(-math.Abs(v)))
	if v < 0 {
		return 1 - e
	}
	return e
}

// mlProbit is √2·erfinv(2v−1) with the closed-form approximation of erfinv
// (a = 0.147) that ONNX's reference evaluator and ONNX Runtime use, so
// that PROBIT scores agree with theirs.
func mlProbit(v float64) float64 {
	x := 2*v - 1
	sgn := 1.0
	if x < 0 {
		sgn = -1
	}
	x = (1 - x) * (1 + x)
	if x == 0 {
		return math.Inf(int(sgn)) // probit(0) = −∞, probit(1) = +∞
	}
	l := math.Log(x)
	a := 2/(math.Pi*0.147) + 0.5*l
	b := l / 0.147
	return math.Sqrt2 * sgn * math.Sqrt(-a+math.Sqrt(a*a-b))
}

// mlLabels are a classifier's class labels: int64s or strings.
type mlLabels struct {
	ints    []int64
	strings []string
}

func newMLLabels(ints []int64, strs []string) (mlLabels, error) {
	switch {
	case len(ints) > 0 && len(strs) > 0:
		return mlLabels{}, fmt.Errorf("has both classlabels_int64s and classlabels_strings")
	case len(ints) == 0 && len(strs) == 0:
		return mlLabels{}, fmt.Errorf("has no class labels")
	}
	return mlLabels{ints, strs}, nil
}

func (l mlLabels) n() int { return max(len(l.ints), len(l.strings)) }

// tensor returns the labels at idx as a [N] tensor.
func (l mlLabels) tensor(idx []int) *tensor.Tensor {
	if l.strings != nil {
		return tensor.From([]int{len(idx)}, mlGatherT(l.strings, idx))
	}
	return tensor.From([]int{len(idx)}, mlGatherT(l.ints, idx))
}

func mlArgmax(s []float64) int {
	best := 0
	for i, v := range s {
		if v > s[best] {
			best = i
		}
	}
	return best
}

func mlFloat32s(v []float64) []float32 {
	f := make([]float32, len(v))
	for i, e := range v {
		f[i] = float32(e)
	}
	return f
}

// mlTake returns data[idx[i]] for each i, for every element type
// including strings.
func mlTake(data any, idx []int) any { return gather(data, idx) }

func mlGatherT[T any](d []T, idx []int) []T {
	r := make([]T, len(idx))
	for i, j := range idx {
		r[i] = d[j]
	}
	return r
}

// mlAppend returns a followed by b's first element, two slices of one
// element type.
func mlAppend(a, b any) any {
	switch a := a.(type) {
	case []string:
		return append(a, b.([]string)[0])
	case []int64:
		return append(a, b.([]int64)[0])
	case []int32:
		return append(a, b.([]int32)[0])
	case []int16:
		return append(a, b.([]int16)[0])
	case []float32:
		return append(a, b.([]float32)[0])
	case []float64:
		return append(a, b.([]float64)[0])
	}
	panic(fmt.Sprintf("model: mlAppend of %T", a))
}

// mlOutputShape checks that an ml operator's output of the given shape
// stays within the elements any tensor may have.
func mlOutputShape(op string, shape ...int) error {
	if _, err := tensor.NumElements(shape); err != nil {
		return inputErrorf("%s: output of shape %s is too large", op, tensor.ShapeString(shape))
	}
	return nil
}

// ---------------------------------------------------------------------------
// ZipMap

// ZipMapAttrs are ZipMap's attributes.
type ZipMapAttrs struct {
	ClasslabelsInt64s  []int64  `onnx:"classlabels_int64s"`
	ClasslabelsStrings []string `onnx:"classlabels_strings"`
}

func buildZipMap(n *node, _ *ZipMapAttrs) (opFunc, error) {
	return nil, unsupportedf("ZipMap outputs a sequence of maps, which the Open Inference Protocol cannot carry (export the classifier without ZipMap: its scores are a tensor)")
}

// mapInputAttrs takes DictVectorizer's and CastMap's attributes, which
// are never used: both read a map.
type mapInputAttrs struct {
	CastTo           string   `onnx:"cast_to"`
	MapForm          string   `onnx:"map_form"`
	MaxMap           int64    `onnx:"max_map"`
	Int64Vocabulary  []int64  `onnx:"int64_vocabulary"`
	StringVocabulary []string `onnx:"string_vocabulary"`
}

func buildMapInput(n *node, _ *mapInputAttrs) (opFunc, error) {
	return nil, unsupportedf("%s reads a map, which the Open Inference Protocol cannot carry", n.pb.OpType)
}

// ---------------------------------------------------------------------------
// ArrayFeatureExtractor, Binarizer

func buildArrayFeatureExtractor(n *node, _ *noAttrs) (opFunc, error) {
	if err := mlArity(n, 2, 2, 1, 1); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, y := in[0], in[1]
		if y.DType != tensor.Int64 {
			return nil, inputErrorf("ArrayFeatureExtractor takes INT64 indices, got %v", y.DType)
		}
		if x.Rank() == 0 {
			return nil, inputErrorf("ArrayFeatureExtractor takes X of rank 1 or more")
		}
		d := x.Shape[x.Rank()-1]
		ids := y.Data.([]int64)
		for _, i := range ids {
			if i < 0 || i >= int64(d) {
				return nil, inputErrorf("ArrayFeatureExtractor: index %d is out of range for a last dimension of %d", i, d)
			}
		}
		shape := append(slices.Clone(x.Shape[:x.Rank()-1]), len(ids))
		if x.Rank() == 1 {
			shape = []int{1, len(ids)}
		}
		if err := mlOutputShape("ArrayFeatureExtractor", shape...); err != nil {
			return nil, err
		}
		rows := 1
		for _, s := range x.Shape[:x.Rank()-1] {
			rows *= s // the leading dimensions of a valid tensor: no overflow
		}
		idx := make([]int, 0, rows*len(ids))
		for r := range rows * min(len(ids), 1) {
			for _, i := range ids {
				idx = append(idx, r*d+int(i))
			}
		}
		return []*tensor.Tensor{{DType: x.DType, Shape: shape, Data: mlTake(x.Data, idx)}}, nil
	}, nil
}

// BinarizerAttrs are Binarizer's attributes.
type BinarizerAttrs struct {
	Threshold float32 `onnx:"threshold" default:"0"`
}

func buildBinarizer(n *node, a *BinarizerAttrs) (opFunc, error) {
	if err := mlArity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	th := float64(a.Threshold)
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		if !slices.Contains(mlNumeric, x.DType) {
			return nil, inputErrorf("Binarizer does not take %v input", x.DType)
		}
		var out any
		switch d := x.Data.(type) {
		case []float32:
			out = binarize(d, th)
		case []float64:
			out = binarize(d, th)
		case []int64:
			out = binarize(d, th)
		case []int32:
			out = binarize(d, th)
		}
		return []*tensor.Tensor{{DType: x.DType, Shape: x.Shape, Data: out}}, nil
	}, nil
}

func binarize[T float32 | float64 | int64 | int32](x []T, th float64) []T {
	y := make([]T, len(x))
	for i, v := range x {
		if float64(v) > th {
			y[i] = 1
		}
	}
	return y
}

// ---------------------------------------------------------------------------
// LabelEncoder, CategoryMapper

// mlKeyIndex maps keys of one type (strings, integers or floats) to
// positions.
type mlKeyIndex struct {
	dtype  tensor.DataType
	str    map[string]int
	ints   map[int64]int
	floats map[float64]int
	nan    int // position of a NaN key, or -1
}

// newMLKeyIndex indexes keys; a repeated key maps to its last position
// when last is set, else its first.
func newMLKeyIndex(keys *tensor.Tensor, last bool) *mlKeyIndex {
	k := &mlKeyIndex{dtype: keys.DType, nan: -1}
	switch d := keys.Data.(type) {
	case []string:
		k.str = map[string]int{}
		for i, s := range d {
			if _, dup := k.str[s]; !dup || last {
				k.str[s] = i
			}
		}
	case []float32, []float64, []tensor.F16, []tensor.BF16:
		k.floats = map[float64]int{}
		for i, v := range keys.Float64s() {
			if math.IsNaN(v) {
				if k.nan < 0 || last {
					k.nan = i
				}
				continue
			}
			if _, dup := k.floats[v]; !dup || last {
				k.floats[v] = i
			}
		}
	default:
		k.ints = map[int64]int{}
		vs, _ := keys.Int64s()
		for i, v := range vs {
			if _, dup := k.ints[v]; !dup || last {
				k.ints[v] = i
			}
		}
	}
	return k
}

// lookup returns, for each element of x, its key's position or miss.
func (k *mlKeyIndex) lookup(op string, x *tensor.Tensor, miss int) ([]int, error) {
	if x.DType != k.dtype {
		return nil, inputErrorf("%s takes %v input (the type of its keys), got %v", op, k.dtype, x.DType)
	}
	idx := make([]int, x.Len())
	switch {
	case k.str != nil:
		for i, s := range x.Data.([]string) {
			if j, ok := k.str[s]; ok {
				idx[i] = j
			} else {
				idx[i] = miss
			}
		}
	case k.floats != nil:
		for i, v := range x.Float64s() {
			j, ok := k.floats[v]
			switch {
			case math.IsNaN(v) && k.nan >= 0:
				idx[i] = k.nan
			case ok:
				idx[i] = j
			default:
				idx[i] = miss
			}
		}
	default:
		vs, err := x.Int64s()
		if err != nil {
			return nil, inputErrorf("%s: %v", op, err)
		}
		for i, v := range vs {
			if j, ok := k.ints[v]; ok {
				idx[i] = j
			} else {
				idx[i] = miss
			}
		}
	}
	return idx, nil
}

// mlEncoder maps each input element through keys to values (the value
// table's last element is the default).
func mlEncoder(op string, keys *mlKeyIndex, values *tensor.Tensor) opFunc {
	miss := values.Len() - 1
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		idx, err := keys.lookup(op, in[0], miss)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{{DType: values.DType, Shape: in[0].Shape, Data: mlTake(values.Data, idx)}}, nil
	}
}

// LabelEncoder1Attrs are LabelEncoder-1's attributes.
type LabelEncoder1Attrs struct {
	ClassesStrings []string `onnx:"classes_strings"`
	DefaultInt64   int64    `onnx:"default_int64" default:"-1"`
	DefaultString  string   `onnx:"default_string" default:"_Unused"`
}

func buildLabelEncoder1(n *node, a *LabelEncoder1Attrs) (opFunc, error) {
	if err := mlArity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	return mlStringIntMapper("LabelEncoder", a.ClassesStrings, nil, a.DefaultInt64, a.DefaultString, false), nil
}

// mlStringIntMapper maps strings to integers and integers to strings, by
// pairs (strs[i], ints[i]); ints nil means positions. A repeated key maps
// to its last pair when last is set, else to its first.
func mlStringIntMapper(op string, strs []string, ints []int64, defInt int64, defStr string, last bool) opFunc {
	if ints == nil {
		ints = make([]int64, len(strs))
		for i := range ints {
			ints[i] = int64(i)
		}
	}
	s2i := mlEncoder(op, newMLKeyIndex(tensor.From([]int{len(strs)}, strs), last), tensor.From([]int{len(ints) + 1}, append(slices.Clone(ints), defInt)))
	i2s := mlEncoder(op, newMLKeyIndex(tensor.From([]int{len(ints)}, ints), last), tensor.From([]int{len(strs) + 1}, append(slices.Clone(strs), defStr)))
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		switch in[0].DType {
		case tensor.String:
			return s2i(in)
		case tensor.Int64:
			return i2s(in)
		}
		return nil, inputErrorf("%s takes BYTES or INT64 input, got %v", op, in[0].DType)
	}
}

// LabelEncoderAttrs are LabelEncoder-2's attributes.
type LabelEncoderAttrs struct {
	DefaultFloat  float32   `onnx:"default_float" default:"-0"`
	DefaultInt64  int64     `onnx:"default_int64" default:"-1"`
	DefaultString string    `onnx:"default_string" default:"_Unused"`
	KeysFloats    []float32 `onnx:"keys_floats"`
	KeysInt64s    []int64   `onnx:"keys_int64s"`
	KeysStrings   []string  `onnx:"keys_strings"`
	ValuesFloats  []float32 `onnx:"values_floats"`
	ValuesInt64s  []int64   `onnx:"values_int64s"`
	ValuesStrings []string  `onnx:"values_strings"`
}

// LabelEncoder4Attrs are LabelEncoder-4's: LabelEncoder-2's and tensors.
type LabelEncoder4Attrs struct {
	LabelEncoderAttrs
	DefaultTensor *tensor.Tensor `onnx:"default_tensor"`
	KeysTensor    *tensor.Tensor `onnx:"keys_tensor"`
	ValuesTensor  *tensor.Tensor `onnx:"values_tensor"`
}

func buildLabelEncoder2(n *node, a *LabelEncoderAttrs) (opFunc, error) {
	return buildLabelEncoder4(n, &LabelEncoder4Attrs{LabelEncoderAttrs: *a})
}

func buildLabelEncoder4(n *node, a *LabelEncoder4Attrs) (opFunc, error) {
	if err := mlArity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	var keys, values []*tensor.Tensor
	if a.KeysFloats != nil {
		keys = append(keys, tensor.From([]int{len(a.KeysFloats)}, a.KeysFloats))
	}
	if a.KeysInt64s != nil {
		keys = append(keys, tensor.From([]int{len(a.KeysInt64s)}, a.KeysInt64s))
	}
	if a.KeysStrings != nil {
		keys = append(keys, tensor.From([]int{len(a.KeysStrings)}, a.KeysStrings))
	}
	if a.KeysTensor != nil {
		keys = append(keys, a.KeysTensor)
	}
	var def *tensor.Tensor
	if a.ValuesFloats != nil {
		values = append(values, tensor.From([]int{len(a.ValuesFloats)}, a.ValuesFloats))
		def = tensor.Scalar(a.DefaultFloat)
	}
	if a.ValuesInt64s != nil {
		values = append(values, tensor.From([]int{len(a.ValuesInt64s)}, a.ValuesInt64s))
		def = tensor.Scalar(a.DefaultInt64)
	}
	if a.ValuesStrings != nil {
		values = append(values, tensor.From([]int{len(a.ValuesStrings)}, a.ValuesStrings))
		def = tensor.Scalar(a.DefaultString)
	}
	if a.ValuesTensor != nil {
		values = append(values, a.ValuesTensor)
		def = a.DefaultTensor
		if def == nil {
			var err error
			if def, err = labelEncoderDefault(a.ValuesTensor.DType); err != nil {
				return nil, err
			}
		}
	}
	if len(keys) != 1 || len(values) != 1 {
		return nil, fmt.Errorf("needs exactly one keys_* and one values_* attribute, has %d and %d", len(keys), len(values))
	}
	k, v := keys[0], values[0]
	if k.Len() != v.Len() {
		return nil, fmt.Errorf("has %d keys and %d values", k.Len(), v.Len())
	}
	if def.Len() != 1 || def.DType != v.DType {
		return nil, fmt.Errorf("default_tensor must be one %v, got %v %s", v.DType, def.DType, tensor.ShapeString(def.Shape))
	}
	for what, dt := range map[string]tensor.DataType{"keys": k.DType, "values": v.DType} {
		switch dt {
		case tensor.String, tensor.Int64, tensor.Int32, tensor.Int16, tensor.Float32, tensor.Float64:
		default:
			return nil, unsupportedf("LabelEncoder %s of type %v", what, dt)
		}
	}
	all := make([]int, v.Len())
	for i := range all {
		all[i] = i
	}
	table := &tensor.Tensor{DType: v.DType, Shape: []int{v.Len() + 1}, Data: mlAppend(mlTake(v.Data, all), def.Data)}
	return mlEncoder("LabelEncoder", newMLKeyIndex(k, true), table), nil
}

func labelEncoderDefault(dt tensor.DataType) (*tensor.Tensor, error) {
	switch dt {
	case tensor.String:
		return tensor.Scalar("_Unused"), nil
	case tensor.Float32:
		return tensor.Scalar(float32(math.Copysign(0, -1))), nil
	case tensor.Float64:
		return tensor.Scalar(math.Copysign(0, -1)), nil
	case tensor.Int64:
		return tensor.Scalar(int64(-1)), nil
	case tensor.Int32:
		return tensor.Scalar(int32(-1)), nil
	case tensor.Int16:
		return tensor.Scalar(int16(-1)), nil
	}
	return nil, unsupportedf("LabelEncoder values of type %v", dt)
}

// CategoryMapperAttrs are CategoryMapper's attributes.
type CategoryMapperAttrs struct {
	CatsInt64s    []int64  `onnx:"cats_int64s"`
	CatsStrings   []string `onnx:"cats_strings"`
	DefaultInt64  int64    `onnx:"default_int64" default:"-1"`
	DefaultString string   `onnx:"default_string" default:"_Unused"`
}

func buildCategoryMapper(n *node, a *CategoryMapperAttrs) (opFunc, error) {
	if err := mlArity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	if len(a.CatsInt64s) != len(a.CatsStrings) {
		return nil, fmt.Errorf("has %d cats_int64s and %d cats_strings", len(a.CatsInt64s), len(a.CatsStrings))
	}
	ints := a.CatsInt64s
	if ints == nil {
		ints = []int64{}
	}
	return mlStringIntMapper("CategoryMapper", a.CatsStrings, ints, a.DefaultInt64, a.DefaultString, true), nil
}

// ---------------------------------------------------------------------------
// OneHotEncoder, Imputer, Scaler, Normalizer, FeatureVectorizer

// OneHotEncoderAttrs are OneHotEncoder's attributes.
type OneHotEncoderAttrs struct {
	CatsInt64s  []int64  `onnx:"cats_int64s"`
	CatsStrings []string `onnx:"cats_strings"`
	Zeros       int64    `onnx:"zeros" default:"1"`
}

func buildOneHotEncoder(n *node, a *OneHotEncoderAttrs) (opFunc, error) {
	if err := mlArity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	if (len(a.CatsInt64s) > 0) == (len(a.CatsStrings) > 0) {
		return nil, fmt.Errorf("needs exactly one of cats_int64s and cats_strings")
	}
	var keys *mlKeyIndex
	c := len(a.CatsInt64s)
	if c > 0 {
		keys = newMLKeyIndex(tensor.From([]int{c}, a.CatsInt64s), false)
	} else {
		c = len(a.CatsStrings)
		keys = newMLKeyIndex(tensor.From([]int{c}, a.CatsStrings), false)
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		if keys.dtype == tensor.Int64 {
			switch x.DType {
			case tensor.Int64, tensor.Int32, tensor.Float32, tensor.Float64:
				vs := x.Float64s()
				ints := make([]int64, len(vs))
				for i, v := range vs {
					if math.IsNaN(v) || v >= math.MaxInt64 || v < math.MinInt64 {
						ints[i] = math.MinInt64 // matches no category
					} else {
						ints[i] = int64(v)
					}
				}
				x = &tensor.Tensor{DType: tensor.Int64, Shape: x.Shape, Data: ints}
			default:
				return nil, inputErrorf("OneHotEncoder with integer categories does not take %v input", x.DType)
			}
		}
		idx, err := keys.lookup("OneHotEncoder", x, -1)
		if err != nil {
			return nil, err
		}
		shape := append(slices.Clone(x.Shape), c)
		if err := mlOutputShape("OneHotEncoder", shape...); err != nil {
			return nil, err
		}
		y := make([]float32, len(idx)*c)
		for i, j := range idx {
			if j < 0 {
				if a.Zeros == 0 {
					return nil, inputErrorf("OneHotEncoder: element %d is not among the categories", i)
				}
				continue
			}
			y[i*c+j] = 1
		}
		return []*tensor.Tensor{tensor.From(shape, y)}, nil
	}, nil
}

// ImputerAttrs are Imputer's attributes.
type ImputerAttrs struct {
	ImputedValueFloats []float32 `onnx:"imputed_value_floats"`
	ImputedValueInt64s []int64   `onnx:"imputed_value_int64s"`
	ReplacedValueFloat float32   `onnx:"replaced_value_float" default:"0"`
	ReplacedValueInt64 int64     `onnx:"replaced_value_int64" default:"0"`
}

func buildImputer(n *node, a *ImputerAttrs) (opFunc, error) {
	if err := mlArity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	if (len(a.ImputedValueFloats) > 0) == (len(a.ImputedValueInt64s) > 0) {
		return nil, fmt.Errorf("needs exactly one of imputed_value_floats and imputed_value_int64s")
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		var m int
		switch x.DType {
		case tensor.Float32, tensor.Float64:
			m = len(a.ImputedValueFloats)
		case tensor.Int64, tensor.Int32:
			m = len(a.ImputedValueInt64s)
		default:
			return nil, inputErrorf("Imputer does not take %v input", x.DType)
		}
		if m == 0 {
			kind := "float"
			if len(a.ImputedValueInt64s) > 0 {
				kind = "integer"
			}
			return nil, inputErrorf("Imputer: the model imputes %s values, the input is %v", kind, x.DType)
		}
		f := 1
		if x.Rank() > 0 {
			f = x.Shape[x.Rank()-1]
		}
		if m != 1 && m != f {
			return nil, inputErrorf("Imputer has %d imputed values, the input has %d features", m, f)
		}
		var out any
		switch d := x.Data.(type) {
		case []float32:
			out = impute(d, a.ImputedValueFloats, float32(a.ReplacedValueFloat), f)
		case []float64:
			out = impute(d, a.ImputedValueFloats, float64(a.ReplacedValueFloat), f)
		case []int64:
			out = impute(d, a.ImputedValueInt64s, a.ReplacedValueInt64, f)
		case []int32:
			if a.ReplacedValueInt64 != int64(int32(a.ReplacedValueInt64)) {
				return []*tensor.Tensor{x}, nil // no INT32 value equals it
			}
			out = impute(d, a.ImputedValueInt64s, int32(a.ReplacedValueInt64), f)
		}
		return []*tensor.Tensor{{DType: x.DType, Shape: x.Shape, Data: out}}, nil
	}, nil
}

func impute[T float32 | float64 | int64 | int32, V float32 | int64](x []T, vals []V, old T, f int) []T {
	y := make([]T, len(x))
	nan := old != old
	for i, v := range x {
		if v == old || nan && v != v {
			if len(vals) == 1 {
				y[i] = T(vals[0])
			} else {
				y[i] = T(vals[i%f])
			}
		} else {
			y[i] = v
		}
	}
	return y
}

// ScalerAttrs are Scaler's attributes.
type ScalerAttrs struct {
	Offset []float32 `onnx:"offset"`
	Scale  []float32 `onnx:"scale"`
}

func buildScaler(n *node, a *ScalerAttrs) (opFunc, error) {
	if err := mlArity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		if !slices.Contains(mlNumeric, x.DType) {
			return nil, inputErrorf("Scaler does not take %v input", x.DType)
		}
		f := 1
		if x.Rank() > 0 {
			f = x.Shape[x.Rank()-1]
		}
		for _, p := range [][]float32{a.Offset, a.Scale} {
			if len(p) > 1 && len(p) != f {
				return nil, inputErrorf("Scaler has %d offsets or scales, the input has %d features", len(p), f)
			}
		}
		at := func(p []float32, i int, def float32) float32 {
			switch len(p) {
			case 0:
				return def
			case 1:
				return p[0]
			}
			return p[i%f]
		}
		vs := x.Float64s()
		y := make([]float32, len(vs))
		for i, v := range vs {
			y[i] = float32((v - float64(at(a.Offset, i, 0))) * float64(at(a.Scale, i, 1)))
		}
		return []*tensor.Tensor{tensor.From(slices.Clone(x.Shape), y)}, nil
	}, nil
}

// NormalizerAttrs are Normalizer's attributes.
type NormalizerAttrs struct {
	Norm string `onnx:"norm" default:"MAX"`
}

func buildNormalizer(n *node, a *NormalizerAttrs) (opFunc, error) {
	if err := mlArity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	switch a.Norm {
	case "MAX", "L1", "L2":
	default:
		return nil, fmt.Errorf("norm %q is not one of MAX, L1, L2", a.Norm)
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		vs, rows, f, err := mlRows("Normalizer", in[0], mlNumeric...)
		if err != nil {
			return nil, err
		}
		y := make([]float32, len(vs))
		for r := range rows {
			row := vs[r*f : (r+1)*f]
			// MAX divides by the row's maximum. L1 and L2 divide by the
			// row's largest magnitude first, so that their sums neither
			// overflow nor underflow.
			m := math.Inf(-1)
			if a.Norm != "MAX" {
				m = 0
			}
			for _, v := range row {
				if a.Norm == "MAX" {
					m = max(m, v)
				} else {
					m = max(m, math.Abs(v))
				}
			}
			d := 1.0
			switch a.Norm {
			case "L1":
				d = 0
				for _, v := range row {
					d += math.Abs(v / m)
				}
			case "L2":
				d = 0
				for _, v := range row {
					d += (v / m) * (v / m)
				}
				d = math.Sqrt(d)
			}
			for i, v := range row {
				if m == 0 || d == 0 {
					y[r*f+i] = float32(v) // a zero divisor leaves the row as it is
				} else {
					y[r*f+i] = float32(v / m / d)
				}
			}
		}
		return []*tensor.Tensor{tensor.From(slices.Clone(in[0].Shape), y)}, nil
	}, nil
}

// FeatureVectorizerAttrs are FeatureVectorizer's attributes.
type FeatureVectorizerAttrs struct {
	InputDimensions []int64 `onnx:"inputdimensions"`
}

func buildFeatureVectorizer(n *node, a *FeatureVectorizerAttrs) (opFunc, error) {
	if err := mlArity(n, 1, 1<<20, 1, 1); err != nil {
		return nil, err
	}
	if len(a.InputDimensions) != len(n.pb.Inputs) {
		return nil, fmt.Errorf("has %d inputs and %d inputdimensions", len(n.pb.Inputs), len(a.InputDimensions))
	}
	total := 0
	for _, d := range a.InputDimensions {
		if d < 0 || d > tensor.MaxElements || total+int(d) > tensor.MaxElements {
			return nil, fmt.Errorf("inputdimensions %v are out of range", a.InputDimensions)
		}
		total += int(d)
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		rows := -1
		vals := make([][]float64, len(in))
		cols := make([]int, len(in))
		for i, x := range in {
			v, r, f, err := mlRows("FeatureVectorizer", x, mlNumeric...)
			if err != nil {
				return nil, err
			}
			if rows >= 0 && r != rows {
				return nil, inputErrorf("FeatureVectorizer: inputs have %d and %d rows", rows, r)
			}
			rows, vals[i], cols[i] = r, v, f
		}
		if err := mlOutputShape("FeatureVectorizer", rows, total); err != nil {
			return nil, err
		}
		y := make([]float32, rows*total)
		for r := range rows {
			off := r * total
			for i, v := range vals {
				d := int(a.InputDimensions[i])
				for j := range min(d, cols[i]) {
					y[off+j] = float32(v[r*cols[i]+j])
				}
				off += d
			}
		}
		return []*tensor.Tensor{tensor.From([]int{rows, total}, y)}, nil
	}, nil
}

// ---------------------------------------------------------------------------
// LinearRegressor, LinearClassifier

// LinearRegressorAttrs are LinearRegressor's attributes.
type LinearRegressorAttrs struct {
	Coefficients  []float32 `onnx:"coefficients"`
	Intercepts    []float32 `onnx:"intercepts"`
	PostTransform string    `onnx:"post_transform" default:"NONE"`
	Targets       int64     `onnx:"targets" default:"1"`
}

func buildLinearRegressor(n *node, a *LinearRegressorAttrs) (opFunc, error) {
	if err := mlArity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	post, err := parseMLPost(a.PostTransform)
	if err != nil {
		return nil, err
	}
	if a.Targets < 1 || a.Targets > int64(len(a.Coefficients)) || len(a.Coefficients)%int(a.Targets) != 0 {
		return nil, fmt.Errorf("has %d coefficients for %d targets", len(a.Coefficients), a.Targets)
	}
	t := int(a.Targets)
	if len(a.Intercepts) != 0 && len(a.Intercepts) != t {
		return nil, fmt.Errorf("has %d intercepts for %d targets", len(a.Intercepts), t)
	}
	feat := len(a.Coefficients) / t
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		vs, rows, f, err := mlRows("LinearRegressor", in[0], mlNumeric...)
		if err != nil {
			return nil, err
		}
		if f != feat {
			return nil, inputErrorf("LinearRegressor takes %d features, got %d", feat, f)
		}
		if err := mlOutputShape("LinearRegressor", rows, t); err != nil {
			return nil, err
		}
		y := make([]float32, rows*t)
		s := make([]float64, t)
		for r := range rows {
			mlLinearScores(s, vs[r*f:(r+1)*f], a.Coefficients, a.Intercepts)
			post.apply(s)
			for j, v := range s {
				y[r*t+j] = float32(v)
			}
		}
		return []*tensor.Tensor{tensor.From([]int{rows, t}, y)}, nil
	}, nil
}

// mlLinearScores sets s[j] = x·coef[j·F:(j+1)·F] + intercepts[j].
func mlLinearScores(s, x []float64, coef, intercepts []float32) {
	f := len(x)
	for j := range s {
		acc := 0.0
		if len(intercepts) > 0 {
			acc = float64(intercepts[j])
		}
		w := coef[j*f : (j+1)*f]
		for i, v := range x {
			acc += v * float64(w[i])
		}
		s[j] = acc
	}
}

// LinearClassifierAttrs are LinearClassifier's attributes.
type LinearClassifierAttrs struct {
	ClasslabelsInts    []int64   `onnx:"classlabels_ints"`
	ClasslabelsStrings []string  `onnx:"classlabels_strings"`
	Coefficients       []float32 `onnx:"coefficients"`
	Intercepts         []float32 `onnx:"intercepts"`
	MultiClass         int64     `onnx:"multi_class" default:"0"`
	PostTransform      string    `onnx:"post_transform" default:"NONE"`
}

func buildLinearClassifier(n *node, a *LinearClassifierAttrs) (opFunc, error) {
	if err := mlArity(n, 1, 1, 1, 2); err != nil {
		return nil, err
	}
	post, err := parseMLPost(a.PostTransform)
	if err != nil {
		return nil, err
	}
	labels, err := newMLLabels(a.ClasslabelsInts, a.ClasslabelsStrings)
	if err != nil {
		return nil, err
	}
	if len(a.Coefficients) == 0 {
		return nil, fmt.Errorf("has no coefficients")
	}
	nc := labels.n()
	// E rows of coefficients: one per class, or one for two classes
	// (binary). Without intercepts to count them, X's width tells.
	fixed := len(a.Intercepts)
	if fixed > 0 && (fixed != nc && !(fixed == 1 && nc <= 2) || len(a.Coefficients)%fixed != 0) {
		return nil, fmt.Errorf("has %d coefficients and %d intercepts for %d classes", len(a.Coefficients), fixed, nc)
	}
	if nc == 1 && labels.strings != nil {
		return nil, unsupportedf("a one-class LinearClassifier with string labels")
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		vs, rows, f, err := mlRows("LinearClassifier", in[0], mlNumeric...)
		if err != nil {
			return nil, err
		}
		e := fixed
		if e == 0 && f > 0 && len(a.Coefficients)%f == 0 {
			e = len(a.Coefficients) / f
		}
		if e == 0 || len(a.Coefficients) != e*f || e != nc && !(e == 1 && nc <= 2) {
			return nil, inputErrorf("LinearClassifier: %d features do not fit its %d coefficients for %d classes", f, len(a.Coefficients), nc)
		}
		width := e
		if e == 1 && nc == 2 {
			width = 2
		}
		z := make([]float32, rows*width)
		idx := make([]int, rows)
		ints := make([]int64, rows) // one class: its label or 0
		s := make([]float64, width)
		for r := range rows {
			mlLinearScores(s[:e], vs[r*f:(r+1)*f], a.Coefficients, a.Intercepts)
			// The label is the class of the highest raw score (the
			// transforms keep the order, except where PROBIT gives NaN).
			switch {
			case width == 2 && e == 1:
				v := s[0]
				idx[r] = 0
				if v > 0 {
					idx[r] = 1
				}
				if post == mlPostNone {
					s[0], s[1] = 1-v, v // as ONNX Runtime reports it
				} else {
					s[0], s[1] = -v, v
					post.apply(s)
				}
			case width > 1:
				idx[r] = mlArgmax(s)
				post.apply(s)
			default:
				post.apply(s)
				th := 0.5
				if post == mlPostNone {
					th = 0
				}
				if s[0] >= th {
					ints[r] = labels.ints[0]
				}
			}
			for j, v := range s {
				z[r*width+j] = float32(v)
			}
		}
		y := labels.tensor(idx)
		if width == 1 {
			y = tensor.From([]int{rows}, ints)
		}
		return []*tensor.Tensor{y, tensor.From([]int{rows, width}, z)}, nil
	}, nil
}

// ---------------------------------------------------------------------------
// SVMRegressor, SVMClassifier

type mlKernel struct {
	kind                 string
	gamma, coef0, degree float64
}

func newMLKernel(kind string, params []float32) (mlKernel, error) {
	k := mlKernel{kind: kind}
	switch kind {
	case "LINEAR", "POLY", "RBF", "SIGMOID":
	default:
		return k, fmt.Errorf("kernel_type %q is not one of LINEAR, POLY, RBF, SIGMOID", kind)
	}
	if len(params) > 0 {
		if len(params) != 3 {
			return k, fmt.Errorf("kernel_params has %d values, not 3 (gamma, coef0, degree)", len(params))
		}
		k.gamma, k.coef0, k.degree = float64(params[0]), float64(params[1]), float64(int(params[2]))
	}
	return k, nil
}

func (k mlKernel) dot(x []float64, v []float32) float64 {
	s := 0.0
	if k.kind == "RBF" {
		for i, a := range x {
			d := a - float64(v[i])
			s += d * d
		}
		return math.Exp(-k.gamma * s)
	}
	for i, a := range x {
		s += a * float64(v[i])
	}
	switch k.kind {
	case "POLY":
		return math.Pow(k.gamma*s+k.coef0, k.degree)
	case "SIGMOID":
		return math.Tanh(k.gamma*s + k.coef0)
	}
	return s
}

// SVMRegressorAttrs are SVMRegressor's attributes.
type SVMRegressorAttrs struct {
	Coefficients   []float32 `onnx:"coefficients"`
	KernelParams   []float32 `onnx:"kernel_params"`
	KernelType     string    `onnx:"kernel_type" default:"LINEAR"`
	NSupports      int64     `onnx:"n_supports" default:"0"`
	OneClass       int64     `onnx:"one_class" default:"0"`
	PostTransform  string    `onnx:"post_transform" default:"NONE"`
	Rho            []float32 `onnx:"rho"`
	SupportVectors []float32 `onnx:"support_vectors"`
}

func buildSVMRegressor(n *node, a *SVMRegressorAttrs) (opFunc, error) {
	if err := mlArity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	post, err := parseMLPost(a.PostTransform)
	if err != nil {
		return nil, err
	}
	k, err := newMLKernel(a.KernelType, a.KernelParams)
	if err != nil {
		return nil, err
	}
	if len(a.Rho) == 0 {
		return nil, fmt.Errorf("has no rho")
	}
	ns := int(a.NSupports)
	feat := len(a.Coefficients)
	if ns > 0 {
		if int64(ns) != a.NSupports || len(a.SupportVectors)%ns != 0 || len(a.Coefficients) < ns {
			return nil, fmt.Errorf("has %d support vector values and %d coefficients for %d support vectors", len(a.SupportVectors), len(a.Coefficients), a.NSupports)
		}
		feat = len(a.SupportVectors) / ns
	} else if a.NSupports < 0 {
		return nil, fmt.Errorf("n_supports %d is negative", a.NSupports)
	} else {
		k = mlKernel{kind: "LINEAR"}
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		vs, rows, f, err := mlRows("SVMRegressor", in[0], mlNumeric...)
		if err != nil {
			return nil, err
		}
		if f != feat {
			return nil, inputErrorf("SVMRegressor takes %d features, got %d", feat, f)
		}
		y := make([]float32, rows)
		s := make([]float64, 1)
		for r := range rows {
			x := vs[r*f : (r+1)*f]
			acc := 0.0
			if ns > 0 {
				for j := range ns {
					acc += float64(a.Coefficients[j]) * k.dot(x, a.SupportVectors[j*f:(j+1)*f])
				}
			} else {
				acc = k.dot(x, a.Coefficients)
			}
			acc += float64(a.Rho[0])
			if a.OneClass != 0 {
				if acc > 0 {
					acc = 1
				} else {
					acc = -1
				}
			}
			s[0] = acc
			post.apply(s)
			y[r] = float32(s[0])
		}
		return []*tensor.Tensor{tensor.From([]int{rows, 1}, y)}, nil
	}, nil
}

// SVMClassifierAttrs are SVMClassifier's attributes.
type SVMClassifierAttrs struct {
	ClasslabelsInts    []int64   `onnx:"classlabels_ints"`
	ClasslabelsStrings []string  `onnx:"classlabels_strings"`
	Coefficients       []float32 `onnx:"coefficients"`
	KernelParams       []float32 `onnx:"kernel_params"`
	KernelType         string    `onnx:"kernel_type" default:"LINEAR"`
	PostTransform      string    `onnx:"post_transform" default:"NONE"`
	ProbA              []float32 `onnx:"prob_a"`
	ProbB              []float32 `onnx:"prob_b"`
	Rho                []float32 `onnx:"rho"`
	SupportVectors     []float32 `onnx:"support_vectors"`
	VectorsPerClass    []int64   `onnx:"vectors_per_class"`
}

// svmClassifier is a compiled SVMClassifier: libsvm's one-against-one
// classification over support vectors, or liblinear's one score per class.
type svmClassifier struct {
	a        *SVMClassifierAttrs
	k        mlKernel
	post     mlPost
	labels   mlLabels
	nc       int   // classes
	start    []int // first support vector of each class
	nv, feat int   // support vectors, features
	proba    bool
	allPos   bool // every coefficient >= 0
}

func buildSVMClassifier(n *node, a *SVMClassifierAttrs) (opFunc, error) {
	if err := mlArity(n, 1, 1, 1, 2); err != nil {
		return nil, err
	}
	c := &svmClassifier{a: a}
	var err error
	if c.post, err = parseMLPost(a.PostTransform); err != nil {
		return nil, err
	}
	if c.k, err = newMLKernel(a.KernelType, a.KernelParams); err != nil {
		return nil, err
	}
	if c.labels, err = newMLLabels(a.ClasslabelsInts, a.ClasslabelsStrings); err != nil {
		return nil, err
	}
	c.nc = c.labels.n()
	if len(a.Coefficients) == 0 || len(a.Rho) == 0 {
		return nil, fmt.Errorf("has no coefficients or no rho")
	}
	if len(a.ProbA) != len(a.ProbB) {
		return nil, fmt.Errorf("has %d prob_a and %d prob_b", len(a.ProbA), len(a.ProbB))
	}
	for _, v := range a.VectorsPerClass {
		if v < 0 || v > int64(len(a.SupportVectors)) {
			return nil, fmt.Errorf("vectors_per_class %v is out of range", a.VectorsPerClass)
		}
		c.start = append(c.start, c.nv)
		c.nv += int(v)
	}
	pairs := c.nc * (c.nc - 1) / 2
	if c.nv > 0 {
		if len(a.VectorsPerClass) != c.nc {
			return nil, fmt.Errorf("has vectors_per_class for %d classes, and %d classes", len(a.VectorsPerClass), c.nc)
		}
		if len(a.SupportVectors)%c.nv != 0 || len(a.Coefficients) != (c.nc-1)*c.nv || len(a.Rho) < pairs {
			return nil, fmt.Errorf("has %d support vector values, %d coefficients and %d rho for %d support vectors of %d classes", len(a.SupportVectors), len(a.Coefficients), len(a.Rho), c.nv, c.nc)
		}
		c.feat = len(a.SupportVectors) / c.nv
		c.proba = len(a.ProbA) > 0
		if c.proba && len(a.ProbA) < pairs {
			return nil, fmt.Errorf("has %d prob_a for %d class pairs", len(a.ProbA), pairs)
		}
	} else {
		if len(a.Coefficients)%c.nc != 0 {
			return nil, fmt.Errorf("has %d coefficients for %d classes", len(a.Coefficients), c.nc)
		}
		c.feat = len(a.Coefficients) / c.nc
		c.k = mlKernel{kind: "LINEAR"}
	}
	if len(a.Rho) == 1 && c.nc != 2 && c.labels.strings != nil {
		return nil, unsupportedf("an SVMClassifier with one rho and %d string labels", c.nc)
	}
	c.allPos = !slices.ContainsFunc(a.Coefficients, func(v float32) bool { return v < 0 })
	return c.run, nil
}

func (c *svmClassifier) run(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	vs, rows, f, err := mlRows("SVMClassifier", in[0], mlNumeric...)
	if err != nil {
		return nil, err
	}
	if f != c.feat {
		return nil, inputErrorf("SVMClassifier takes %d features, got %d", c.feat, f)
	}
	a := c.a
	var z []float32
	width := -1
	idx := make([]int, rows)
	ints := make([]int64, rows) // labels that are no class's (one rho, not two classes)
	rawLabel := false
	kern := make([]float64, c.nv)
	for r := range rows {
		x := vs[r*f : (r+1)*f]
		var scores, votes []float64
		if c.nv == 0 {
			scores = make([]float64, c.nc)
			for j := range scores {
				scores[j] = float64(a.Rho[0]) + c.k.dot(x, a.Coefficients[j*f:(j+1)*f])
			}
		} else {
			for j := range c.nv {
				kern[j] = c.k.dot(x, a.SupportVectors[j*f:(j+1)*f])
			}
			votes = make([]float64, c.nc)
			for i := range c.nc {
				for j := i + 1; j < c.nc; j++ {
					s := float64(a.Rho[len(scores)])
					si, sj := c.start[i], c.start[j]
					for v := range int(a.VectorsPerClass[i]) {
						s += float64(a.Coefficients[(j-1)*c.nv+si+v]) * kern[si+v]
					}
					for v := range int(a.VectorsPerClass[j]) {
						s += float64(a.Coefficients[i*c.nv+sj+v]) * kern[sj+v]
					}
					scores = append(scores, s)
					if s > 0 {
						votes[i]++
					} else {
						votes[j]++
					}
				}
			}
			if c.proba {
				scores = svmProbabilities(scores, a.ProbA, a.ProbB, c.nc)
			}
		}
		var best int
		var bestW float64
		if votes != nil {
			best = mlArgmax(votes)
			bestW = votes[best]
		} else {
			best = mlArgmax(scores)
			bestW = scores[best]
		}
		extra := -1
		switch {
		case len(a.Rho) == 1 && c.nc == 2:
			extra = 2
			if !c.proba && c.allPos && bestW >= 0.5 {
				best = 1
			}
			idx[r] = best
		case len(a.Rho) == 1:
			rawLabel = true
			if bestW > 0 {
				ints[r] = 1
			}
		default:
			idx[r] = best
		}
		scores = svmFinalScores(scores, c.post, extra)
		if width < 0 {
			width = len(scores)
			z = make([]float32, 0, rows*width)
		}
		z = append(z, mlFloat32s(scores)...)
	}
	if width < 0 {
		width = c.nc
		if c.nv > 0 && !c.proba {
			width = c.nc * (c.nc - 1) / 2
		}
		if width == 1 && len(a.Rho) == 1 && c.nc == 2 && c.post != mlPostProbit {
			width = 2
		}
	}
	y := c.labels.tensor(idx)
	if rawLabel {
		y = tensor.From([]int{rows}, ints)
	}
	return []*tensor.Tensor{y, tensor.From([]int{rows, width}, z)}, nil
}

// svmFinalScores applies the post transform; a single score becomes a
// pair as libsvm's binary classifiers report it.
func svmFinalScores(s []float64, post mlPost, extra int) []float64 {
	if len(s) != 1 {
		post.apply(s)
		return s
	}
	v := s[0]
	switch {
	case post == mlPostProbit:
		return []float64{mlProbit(v)}
	case extra == 0 || extra == 1:
		return []float64{1 - v, v}
	case extra == 2 || extra == 3:
		if post == mlPostLogistic {
			return []float64{mlLogistic(-v), mlLogistic(v)}
		}
		p := []float64{-v, v}
		if post == mlPostSoftmax || post == mlPostSoftmaxZero {
			post.apply(p)
		}
		return p
	}
	return s
}

// svmProbabilities turns one-against-one decision values into class
// probabilities: Platt's sigmoid per pair, then the pairwise coupling of
// Wu, Lin and Weng (libsvm's multiclass_probability).
func svmProbabilities(scores []float64, pa, pb []float32, k int) []float64 {
	r := make([]float64, k*k)
	idx := 0
	for i := range k {
		for j := i + 1; j < k; j++ {
			v := 1 - mlLogistic(scores[idx]*float64(pa[idx])+float64(pb[idx]))
			v = min(max(v, 1e-7), 1-1e-7)
			r[i*k+j], r[j*k+i] = v, 1-v
			idx++
		}
	}
	q := make([]float64, k*k)
	p := make([]float64, k)
	qp := make([]float64, k)
	for t := range k {
		p[t] = 1 / float64(k)
		for j := range t {
			q[t*k+t] += r[j*k+t] * r[j*k+t]
			q[t*k+j] = q[j*k+t]
		}
		for j := t + 1; j < k; j++ {
			q[t*k+t] += r[j*k+t] * r[j*k+t]
			q[t*k+j] = -r[j*k+t] * r[t*k+j]
		}
	}
	eps := 0.005 / float64(k)
	for range max(100, k) {
		pqp := 0.0
		for t := range k {
			qp[t] = 0
			for j := range k {
				qp[t] += q[t*k+j] * p[j]
			}
			pqp += p[t] * qp[t]
		}
		maxErr := 0.0
		for t := range k {
			maxErr = max(maxErr, math.Abs(qp[t]-pqp))
		}
		if maxErr < eps {
			break
		}
		for t := range k {
			if q[t*k+t] == 0 {
				continue
			}
			diff := (-qp[t] + pqp) / q[t*k+t]
			p[t] += diff
			pqp = (pqp + diff*(diff*q[t*k+t]+2*qp[t])) / (1 + diff) / (1 + diff)
			for j := range k {
				qp[j] = (qp[j] + diff*q[t*k+j]) / (1 + diff)
				p[j] /= 1 + diff
			}
		}
	}
	return p
}
