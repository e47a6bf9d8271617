// Package ml holds the operators of the ai.onnx.ml domain: the ones
// scikit-learn models exported with skl2onnx (and similar converters) are
// made of — tree ensembles, linear and SVM models, and the encoders and
// scalers of their pipelines. ZipMap, DictVectorizer and CastMap are
// registered only to be refused: they read or write maps, which the Open
// Inference Protocol cannot carry.
package ml

// domain is the operators' ONNX domain.
const domain = "ai.onnx.ml"
