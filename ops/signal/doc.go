// Package signal holds the ONNX signal-processing operators: the Fourier
// transforms DFT and STFT, the windows HannWindow, HammingWindow and
// BlackmanWindow, and MelWeightMatrix, the filter bank speech front ends
// build from them (all from opset 17; DFT's axis became an input at 20).
// Values are computed in float64 and rounded once to the output type.
//
// The transforms run in O(n log n), as ONNX Runtime's do: an iterative
// radix-2 FFT for power-of-two lengths and Bluestein's chirp-z transform
// (a convolution done by a radix-2 FFT) for every other length but the
// shortest, which the direct DFT computes for less. Every operator looks
// at the request's deadline at most ops.TickEvery units of work apart and
// stops with the request's error once it ends.
package signal
