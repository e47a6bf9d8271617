// Package signal holds the ONNX signal-processing operators: the Fourier
// transforms DFT and STFT, the windows HannWindow, HammingWindow and
// BlackmanWindow, and MelWeightMatrix, the filter bank speech front ends
// build from them (all from opset 17; DFT's axis became an input at 20).
// Values are computed in float64 and rounded once to the output type.
package signal
