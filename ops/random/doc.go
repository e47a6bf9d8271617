// Package random registers the ONNX operators that draw random numbers
// (RandomNormal, RandomUniform, their Like forms, Bernoulli and
// Multinomial) only to refuse them. A model server answers the same
// request the same way, so a model that samples is refused at load, with
// the reason, rather than reported as an unknown operator.
package random
