// Package rnn holds the recurrent layers RNN, GRU and LSTM (ai.onnx
// opset 7 on). They share one recurrence (recurrent.go): the input
// projections of every time step run as one product per direction, on the
// int8 kernels when W is constant and large enough and the model is
// quantized (as MatMul's weights do); the recurrent products run once per
// step on the float kernels: int8 error there would compound from step to
// step. FLOAT16, BFLOAT16 and DOUBLE inputs are computed in float32.
package rnn
