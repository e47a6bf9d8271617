package ml

import (
	"github.com/quantserve/quantserve/ops"
)

// ZipMap, DictVectorizer and CastMap write or read maps, which the Open
// Inference Protocol cannot carry: they are registered to be refused at
// load, saying so.
func init() {
	ops.Register(ops.Descriptor{Domain: domain, Type: "ZipMap", Since: 1, Refused: true}, buildZipMap)
	ops.Register(ops.Descriptor{Domain: domain, Type: "DictVectorizer", Since: 1, Refused: true}, buildMapInput)
	ops.Register(ops.Descriptor{Domain: domain, Type: "CastMap", Since: 1, Refused: true}, buildMapInput)
}

// ZipMapAttrs are ZipMap's attributes.
type ZipMapAttrs struct {
	ClasslabelsInt64s  []int64  `onnx:"classlabels_int64s"`
	ClasslabelsStrings []string `onnx:"classlabels_strings"`
}

func buildZipMap(*ops.Node, *ZipMapAttrs) (ops.Operator, error) {
	return nil, ops.Unsupportedf("ZipMap outputs a sequence of maps, which the Open Inference Protocol cannot carry (export the classifier without ZipMap: its scores are a tensor)")
}

// MapInputAttrs take DictVectorizer's and CastMap's attributes, which
// are never used: both read a map.
type MapInputAttrs struct {
	CastTo           string   `onnx:"cast_to"`
	MapForm          string   `onnx:"map_form"`
	MaxMap           int64    `onnx:"max_map"`
	Int64Vocabulary  []int64  `onnx:"int64_vocabulary"`
	StringVocabulary []string `onnx:"string_vocabulary"`
}

func buildMapInput(n *ops.Node, _ *MapInputAttrs) (ops.Operator, error) {
	return nil, ops.Unsupportedf("%s reads a map, which the Open Inference Protocol cannot carry", n.Type)
}
