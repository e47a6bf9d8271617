// Package defaultmodel embeds the model quantserve serves when it is given
// no model repository: "mnist", a 784-256-128-10 MLP digit classifier
// trained on the MNIST training set by quantserve's own autodiff
// (go run -tags autodiff ./cmd/train): 98.33% accuracy on the 10,000 test
// images in float32, 98.34% with int8 weights.
//
// Input "input": FP32 [-1, 784], pixels in [0, 1], row-major 28×28.
// Output "scores": FP32 [-1, 10], class probabilities for digits 0-9.
package defaultmodel

import _ "embed"

// Name is the model name the embedded model is served under.
const Name = "mnist"

// ONNX is the model file, as written by go run -tags autodiff ./cmd/train.
//
//go:embed mnist.onnx
var ONNX []byte
