// Package detection holds the ONNX operators of object-detection
// post-processing: NonMaxSuppression.
package detection
