// Package text holds the ONNX operators on strings and text: StringConcat,
// StringSplit, StringNormalizer and RegexFullMatch on BYTES (string)
// tensors, and TfIdfVectorizer's n-gram features.
package text
