//go:build autodiff

// Package autodiff computes reverse-mode gradients through quantserve's
// compiled models, in builds with the autodiff tag.
//
// A forward pass runs as a trace (model.Model.Trace keeps every value);
// Backward then walks the steps in reverse, applying each operator's
// derivative and reducing broadcast dimensions. Products whose weights run
// on the int8 kernels use the straight-through estimator: the gradient
// flows as if through the dequantized weights, and dX = dY·Wᵀ itself runs
// on the int8 kernels (matmul.Linear.BackwardInput).
//
// Loss functions (softmax cross-entropy, mean squared error) and a trainer
// with SGD and Adam build on Backward. Every derivative is tested against
// central finite differences.
package autodiff
