// Package loss holds the ONNX loss operators exported training graphs
// keep: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opset 12
// on; the later versions only widen the types). Input is (N, C, d1, ...,
// dk), target (N, d1, ..., dk) holds class indices, weight (C) optionally
// weighs the classes; targets equal to ignore_index add nothing, not even
// to the weight a mean divides by. Losses are computed in float64 and
// rounded once to the input's type.
package loss
