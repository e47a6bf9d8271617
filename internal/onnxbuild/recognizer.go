package onnxbuild

import (
	"math"
	"math/rand/v2"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// RecognizerConfig sizes a CRNN text-line recognizer: images [batch, 3,
// 32, Width], Hidden units per LSTM direction, Classes output symbols (the
// CTC blank among them).
type RecognizerConfig struct {
	Width, Hidden, Classes int
	Seed                   uint64
}

// DefaultRecognizer is the recognizer the tests use: 100-pixel-wide lines,
// two bidirectional LSTMs of 48 units, 97 classes (PaddleOCR's English
// dictionary of 95 symbols, space and the blank).
var DefaultRecognizer = RecognizerConfig{Width: 100, Hidden: 48, Classes: 97, Seed: 2}

// RecognizerSteps is the length of the sequence a recognizer of the given
// width reads: two 2×2 poolings halve the width, the two CRNN poolings of
// stride (2, 1) and padding (0, 1) widen it by one each, the last 2×2
// convolution takes one away.
func RecognizerSteps(c RecognizerConfig) int { return c.Width/4 + 1 }

// Recognizer builds an OCR text recognizer in CRNN's shape with the
// operator patterns PyTorch's and Paddle2ONNX's exports write (opset 17).
// Input "x" FP32 [batch, 3, 32, width]. The backbone is five convolutions,
// each Conv (no bias), BatchNormalization and Relu or HardSwish (as
// PaddleOCR's MobileNetV3 backbones use): 3→16 and 16→32 channels with
// 2×2 MaxPools, 32→64 and 64→64 with CRNN's MaxPools of kernel 2×2,
// strides (2, 1) and padding (0, 1), then a 2×2 convolution 64→96 without
// padding leaving height 1. Squeeze drops the height and Transpose makes
// the sequence [steps, batch, 96]. Two bidirectional LSTMs follow as
// crnn.pytorch's BidirectionalLSTM exports: LSTM (W, R, B initializers;
// the first's initial states a ConstantOfShape of a shape computed from
// the input's batch, the second's omitted), Transpose and Reshape merging
// the directions, Reshape to [steps·batch, 2·hidden], a Gemm (transB)
// to hidden units, or to the classes for the second, and Reshape back to
// [steps, batch, -1] from the LSTM output's Shape. Output "log_probs" FP32
// [steps, batch, classes] is the LogSoftmax crnn.pytorch's CRNN ends with
// (what CTC decoding and PyTorch's CTC loss take).
//
// Weights are seeded: convolutions He-scaled normal values, LSTMs and the
// first Gemm uniform in ±1/√fan-in as PyTorch initializes them, the class
// Gemm larger so that each step has a clear best class as trained models'
// do. The 32→64, 64→64 and 64→96 convolutions, both LSTMs' input
// projections and both Gemms are large enough for int8; the first two
// convolutions stay float32.
func Recognizer(c RecognizerConfig) Graph {
	g := Graph{
		Opset:   17,
		Inputs:  []IO{V("x", tensor.Float32, -1, 3, 32, c.Width)},
		Outputs: []IO{V("log_probs", tensor.Float32, RecognizerSteps(c), -1, c.Classes)},
	}
	b := newBuilder(&g, c.Seed)
	conv := func(x, name string, in, out, k int, act string, pads ...int64) string {
		w := b.normal(name+".weight", math.Sqrt(2/float64(in*k*k)), out, in, k, k)
		y := b.node("Conv", []string{x, w}, name+".conv", IntsAttr("kernel_shape", int64(k), int64(k)), IntsAttr("pads", pads...))
		y = b.batchNorm(y, name+".bn", out)
		return b.node(act, []string{y}, name+"."+act)
	}
	pool := func(x, name string, strides, pads []int64) string {
		return b.node("MaxPool", []string{x}, name, IntsAttr("kernel_shape", 2, 2), IntsAttr("strides", strides...), IntsAttr("pads", pads...))
	}
	x := conv("x", "cnn.conv0", 3, 16, 3, "Relu", 1, 1, 1, 1)
	x = pool(x, "cnn.pool0", []int64{2, 2}, []int64{0, 0, 0, 0})
	x = conv(x, "cnn.conv1", 16, 32, 3, "Relu", 1, 1, 1, 1)
	x = pool(x, "cnn.pool1", []int64{2, 2}, []int64{0, 0, 0, 0})
	x = conv(x, "cnn.conv2", 32, 64, 3, "HardSwish", 1, 1, 1, 1)
	x = pool(x, "cnn.pool2", []int64{2, 1}, []int64{0, 1, 0, 1})
	x = conv(x, "cnn.conv3", 64, 64, 3, "HardSwish", 1, 1, 1, 1)
	x = pool(x, "cnn.pool3", []int64{2, 1}, []int64{0, 1, 0, 1})
	x = conv(x, "cnn.conv4", 64, 96, 2, "Relu", 0, 0, 0, 0)
	x = b.node("Squeeze", []string{x, b.ints("squeeze_axes", 2)}, "cnn.squeezed")
	seq := b.node("Transpose", []string{x}, "seq", IntsAttr("perm", 2, 0, 1)) // [steps, batch, 96]

	// PyTorch's zero initial states: ConstantOfShape of [2, batch, hidden].
	shape := b.node("Shape", []string{seq}, "seq.shape")
	batch := b.node("Gather", []string{shape, b.ints("one", 1)}, "seq.batch", IntAttr("axis", 0))
	stateShape := b.node("Concat", []string{b.ints("two", 2), batch, b.ints("hidden", int64(c.Hidden))}, "state.shape", IntAttr("axis", 0))
	zero := &onnxpb.Attribute{Name: "value", Type: onnxpb.AttrTensor, T: model.TensorToONNX("", tensor.From([]int{1}, []float32{0}))}
	h0 := b.node("ConstantOfShape", []string{stateShape}, "state.zeros", zero)

	x = bidirectional(b, seq, "rnn.0", 96, c.Hidden, c.Hidden, 4, h0)
	x = bidirectional(b, x, "rnn.1", c.Hidden, c.Hidden, c.Classes, 30, "")
	b.node("LogSoftmax", []string{x}, "log_probs", IntAttr("axis", 2))
	return g
}

// bidirectional appends crnn.pytorch's BidirectionalLSTM as PyTorch exports
// it: an LSTM over x [steps, batch, in], its Y [steps, 2, batch, hidden]
// transposed and reshaped to [steps, batch, 2·hidden], then a Linear to out
// units applied to the [steps·batch, 2·hidden] view (Gemm) and viewed back
// as [steps, batch, out]. gain scales the Linear's weights; state, when
// not empty, is both initial states.
func bidirectional(b *builder, x, name string, in, hidden, out int, gain float64, state string) string {
	bound := 1 / math.Sqrt(float64(hidden))
	w := b.uniform(name+".W", bound, 2, 4*hidden, in)
	r := b.uniform(name+".R", bound, 2, 4*hidden, hidden)
	bias := b.uniform(name+".B", bound, 2, 8*hidden)
	b.g.Nodes = append(b.g.Nodes, Node{Op: "LSTM", Inputs: []string{x, w, r, bias, "", state, state},
		Outputs: []string{name + ".Y", name + ".Y_h", name + ".Y_c"},
		Attrs:   []*onnxpb.Attribute{StringAttr("direction", "bidirectional"), IntAttr("hidden_size", int64(hidden))}})
	y := b.node("Transpose", []string{name + ".Y"}, name+".Y.t", IntsAttr("perm", 0, 2, 1, 3))
	y = b.node("Reshape", []string{y, b.ints(name+".merge_shape", 0, 0, -1)}, name+".merged")
	shape := b.node("Shape", []string{y}, name+".shape")
	steps := b.node("Slice", []string{shape, b.ints(name+".starts", 0), b.ints(name+".ends", 2)}, name+".steps_batch")
	flat := b.node("Reshape", []string{y, b.ints(name+".flat_shape", -1, int64(2*hidden))}, name+".flat")
	lb := 1 / math.Sqrt(float64(2*hidden))
	lw := b.uniform(name+".embedding.weight", gain*lb, out, 2*hidden)
	lbias := b.uniform(name+".embedding.bias", lb, out)
	e := b.node("Gemm", []string{flat, lw, lbias}, name+".embedding", IntAttr("transB", 1))
	view := b.node("Concat", []string{steps, b.ints(name+".minus_one", -1)}, name+".view_shape", IntAttr("axis", 0))
	return b.node("Reshape", []string{e, view}, name+".out")
}

// RecognizerInput returns seeded images [batch, 3, 32, width] normalized
// to [-1, 1] as PaddleOCR feeds them: dark strokes (vertical bars of
// seeded widths, as glyphs) on a lighter background with noise.
func RecognizerInput(c RecognizerConfig, batch int, seed uint64) *tensor.Tensor {
	r := rand.New(rand.NewPCG(seed, 5))
	v := make([]float32, batch*3*32*c.Width)
	for n := 0; n < batch; n++ {
		ink := make([]bool, c.Width)
		for x := 0; x < c.Width; {
			w := 1 + r.IntN(4)
			on := r.IntN(3) == 0
			for i := x; i < min(x+w, c.Width); i++ {
				ink[i] = on
			}
			x += w
		}
		top, bottom := 4+r.IntN(6), 22+r.IntN(6)
		for ch := 0; ch < 3; ch++ {
			for y := 0; y < 32; y++ {
				for x := 0; x < c.Width; x++ {
					p := 0.8 + 0.1*r.NormFloat64()
					if ink[x] && y >= top && y < bottom {
						p = -0.7 + 0.1*r.NormFloat64()
					}
					v[((n*3+ch)*32+y)*c.Width+x] = float32(min(max(p, -1), 1))
				}
			}
		}
	}
	return tensor.From([]int{batch, 3, 32, c.Width}, v)
}
