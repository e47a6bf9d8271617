package onnxbuild

import (
	"math"
	"math/rand/v2"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// VADConfig sizes a voice-activity detector: chunks of Samples audio
// samples, a short-time Fourier transform of FFT points every Hop samples,
// an LSTM of Hidden units.
type VADConfig struct {
	Samples, FFT, Hop, Hidden int
	// STFT computes the spectrum with the STFT operator (a HannWindow
	// window) and its magnitude with ReduceL2, not with the Conv1d basis.
	STFT bool
	Seed uint64
}

// DefaultVAD is the detector the tests use: 512-sample chunks (32 ms at
// 16 kHz, Silero VAD's), a 256-point transform every 64 samples, an LSTM
// of 64 units.
var DefaultVAD = VADConfig{Samples: 512, FFT: 256, Hop: 64, Hidden: 64, Seed: 3}

// VAD builds a voice-activity detector in the shape of Silero VAD's
// stateful ONNX export (opset 17). Inputs "input" FP32 [batch, samples],
// "h" and "c" FP32 [1, batch, hidden] (the LSTM state from the previous
// chunk, zeros for the first); outputs "output" FP32 [batch, 1] (the
// speech probability), "hn" and "cn" (the state for the next chunk).
//
// The front end is Silero's learned STFT: Unsqueeze to one channel, Pad
// with mode reflect (FFT/4 samples each side), a Conv1d whose fixed
// weights are the Hann-windowed cosine and sine bases of the FFT/2+1
// one-sided bins (stride Hop), Slice into real and imaginary halves and the magnitude √(re²+im²) from Pow,
// Add and Sqrt. With STFT set the front end is the STFT operator instead
// (reflection Pad, Unsqueeze to [batch, samples, 1], a HannWindow window)
// with ReduceL2 over the real and imaginary parts, Transposed to [batch,
// bins, frames]; the rest of the model, weights included, is the same.
// Silero's adaptive normalization follows, simplified: log(1 + 2²⁰·|X|)
// from Mul, Add and Log, less its ReduceMean over the chunk. The encoder
// is four Conv1d+Relu layers (bins→128, 128→64 with stride 2, 64→64,
// 64→128, kernel 3). Transpose makes the sequence
// [steps, batch, 128] for an LSTM whose initial states are the inputs and
// whose final states are outputs; its Y, Squeezed and Transposed back to
// channels, goes through Relu, a 1×1 Conv1d to one channel and Sigmoid;
// ReduceMean over the steps gives the chunk's probability.
//
// Weights are seeded: the encoder's He-scaled normal values, the LSTM
// uniform in ±1/√hidden as PyTorch initializes it. The basis convolution
// has one input channel and stays float32, as does the 1×1 output
// convolution; the four encoder convolutions and the LSTM's input
// projection are large enough for int8.
func VAD(c VADConfig) Graph {
	bins := c.FFT/2 + 1
	g := Graph{
		Opset: 17,
		Inputs: []IO{V("input", tensor.Float32, -1, c.Samples),
			V("h", tensor.Float32, 1, -1, c.Hidden), V("c", tensor.Float32, 1, -1, c.Hidden)},
		Outputs: []IO{V("output", tensor.Float32, -1, 1),
			V("hn", tensor.Float32, 1, -1, c.Hidden), V("cn", tensor.Float32, 1, -1, c.Hidden)},
	}
	b := newBuilder(&g, c.Seed)
	pad := int64(c.FFT / 4)
	if c.STFT {
		x := b.node("Pad", []string{"input", b.ints("pads", 0, pad, 0, pad)}, "audio.padded", StringAttr("mode", "reflect"))
		x = b.node("Unsqueeze", []string{x, b.ints("component_axis", 2)}, "audio")
		g.Inits["fft_size"] = tensor.From([]int{}, []int64{int64(c.FFT)})
		g.Inits["hop"] = tensor.From([]int{}, []int64{int64(c.Hop)})
		window := b.node("HannWindow", []string{"fft_size"}, "stft.window")
		x = b.node("STFT", []string{x, "hop", window}, "stft") // [batch, frames, bins, 2]
		x = b.node("ReduceL2", []string{x}, "stft.l2", IntsAttr("axes", -1), IntAttr("keepdims", 0))
		return vadEncoder(b, c, b.node("Transpose", []string{x}, "stft.magnitude", IntsAttr("perm", 0, 2, 1)))
	}
	// The STFT basis: rows k < bins are cos(2πkn/FFT)·w[n], rows bins+k
	// are -sin(2πkn/FFT)·w[n], w the periodic Hann window.
	basis := make([]float32, 2*bins*c.FFT)
	for k := 0; k < bins; k++ {
		for n := 0; n < c.FFT; n++ {
			w := 0.5 - 0.5*math.Cos(2*math.Pi*float64(n)/float64(c.FFT))
			a := 2 * math.Pi * float64(k*n) / float64(c.FFT)
			basis[k*c.FFT+n] = float32(w * math.Cos(a))
			basis[(bins+k)*c.FFT+n] = float32(-w * math.Sin(a))
		}
	}
	x := b.node("Unsqueeze", []string{"input", b.ints("channel_axis", 1)}, "audio")
	x = b.node("Pad", []string{x, b.ints("pads", 0, 0, pad, 0, 0, pad)}, "audio.padded", StringAttr("mode", "reflect"))
	x = b.node("Conv", []string{x, b.floats("stft.forward_basis", []int{2 * bins, 1, c.FFT}, basis)}, "stft",
		IntsAttr("kernel_shape", int64(c.FFT)), IntsAttr("strides", int64(c.Hop)))
	re := b.node("Slice", []string{x, b.ints("re.starts", 0), b.ints("re.ends", int64(bins)), b.ints("bin_axis", 1)}, "stft.re")
	im := b.node("Slice", []string{x, b.ints("im.starts", int64(bins)), b.ints("im.ends", int64(2*bins)), "bin_axis"}, "stft.im")
	two := b.floats("two", nil, []float32{2})
	power := b.node("Add", []string{b.node("Pow", []string{re, two}, "stft.re2"), b.node("Pow", []string{im, two}, "stft.im2")}, "stft.power")
	return vadEncoder(b, c, b.node("Sqrt", []string{power}, "stft.magnitude"))
}

// vadEncoder appends the detector from the magnitude spectrum x [batch,
// bins, frames] on.
func vadEncoder(b *builder, c VADConfig, x string) Graph {
	bins := c.FFT/2 + 1
	g := b.g
	// Silero VAD's adaptive normalization, simplified: log(1 + 2²⁰·|X|)
	// less its mean over the chunk.
	x = b.node("Mul", []string{x, b.floats("norm.gain", nil, []float32{1 << 20})}, "norm.scaled")
	x = b.node("Log", []string{b.node("Add", []string{x, b.floats("norm.one", nil, []float32{1})}, "norm.shifted")}, "norm.log")
	mean := b.node("ReduceMean", []string{x}, "norm.mean", IntsAttr("axes", 1, 2), IntAttr("keepdims", 1))
	x = b.node("Sub", []string{x, mean}, "norm.out")

	conv := func(x, name string, in, out, stride int) string {
		w := b.normal(name+".weight", math.Sqrt(2/float64(in*3)), out, in, 3)
		bias := b.normal(name+".bias", 0.05, out)
		y := b.node("Conv", []string{x, w, bias}, name, IntsAttr("kernel_shape", 3), IntsAttr("pads", 1, 1), IntsAttr("strides", int64(stride)))
		return b.node("Relu", []string{y}, name+".relu")
	}
	x = conv(x, "encoder.0", bins, 128, 1)
	x = conv(x, "encoder.1", 128, 64, 2)
	x = conv(x, "encoder.2", 64, 64, 1)
	x = conv(x, "encoder.3", 64, 128, 1)
	x = b.node("Transpose", []string{x}, "seq", IntsAttr("perm", 2, 0, 1)) // [steps, batch, 128]

	bound := 1 / math.Sqrt(float64(c.Hidden))
	w := b.uniform("decoder.rnn.W", bound, 1, 4*c.Hidden, 128)
	r := b.uniform("decoder.rnn.R", bound, 1, 4*c.Hidden, c.Hidden)
	bias := b.uniform("decoder.rnn.B", bound, 1, 8*c.Hidden)
	g.Nodes = append(g.Nodes, Node{Op: "LSTM", Inputs: []string{x, w, r, bias, "", "h", "c"}, Outputs: []string{"decoder.rnn.Y", "hn", "cn"},
		Attrs: []*onnxpb.Attribute{IntAttr("hidden_size", int64(c.Hidden))}})
	x = b.node("Squeeze", []string{"decoder.rnn.Y", b.ints("dir_axis", 1)}, "decoder.rnn.out")
	x = b.node("Transpose", []string{x}, "decoder.channels", IntsAttr("perm", 1, 2, 0)) // [batch, hidden, steps]
	x = b.node("Relu", []string{x}, "decoder.relu")
	x = b.node("Conv", []string{x, b.normal("decoder.conv.weight", 8/math.Sqrt(float64(c.Hidden)), 1, c.Hidden, 1), b.floats("decoder.conv.bias", []int{1}, []float32{-0.5})},
		"decoder.conv", IntsAttr("kernel_shape", 1))
	x = b.node("Sigmoid", []string{x}, "decoder.sigmoid")
	x = b.node("Squeeze", []string{x, b.ints("prob_axis", 1)}, "probs") // [batch, steps]
	b.node("ReduceMean", []string{x}, "output", IntsAttr("axes", 1), IntAttr("keepdims", 1))
	return *g
}

// VADInput returns chunk i of a seeded recording, [batch, samples]: each
// batch entry its own stream of 16 kHz audio, by entry: near silence,
// white noise, a 220 Hz tone with harmonics, a voiced vowel-like signal
// (a 140 Hz pulse train through two formant resonances), a 1 kHz tone, a
// chirp, a loud and a quiet mixture of tone and noise; all over a noise
// floor 70 dB below full scale, as recordings have (without it the spectra
// of pure tones hold bins that are round-off, which the detector's
// log(1 + 2²⁰·|X|) would magnify). Chunks of the same seed continue each
// other.
func VADInput(c VADConfig, batch int, seed uint64, chunk int) *tensor.Tensor {
	const rate = 16000.0
	v := make([]float32, batch*c.Samples)
	for n := 0; n < batch; n++ {
		r := rand.New(rand.NewPCG(seed, uint64(n)))
		total := (chunk + 1) * c.Samples
		s := make([]float64, total)
		var y1, y2, z1, z2 float64 // formant filters' state
		for i := range s {
			t := float64(i) / rate
			noise := r.NormFloat64()
			switch n % 8 {
			case 0:
				s[i] = 0.001 * noise
			case 1:
				s[i] = 0.2 * noise
			case 2:
				s[i] = 0.3*math.Sin(2*math.Pi*220*t) + 0.1*math.Sin(2*math.Pi*440*t) + 0.05*math.Sin(2*math.Pi*660*t)
			case 3:
				pulse := 0.0
				if i%114 == 0 { // 140 Hz
					pulse = 1
				}
				y := pulse + 1.8*math.Cos(2*math.Pi*700/rate)*0.97*y1 - 0.97*0.97*y2
				y2, y1 = y1, y
				z := y + 1.8*math.Cos(2*math.Pi*1200/rate)*0.95*z1 - 0.95*0.95*z2
				z2, z1 = z1, z
				s[i] = 0.02*z + 0.005*noise
			case 4:
				s[i] = 0.5 * math.Sin(2*math.Pi*1000*t)
			case 5:
				s[i] = 0.3 * math.Sin(2*math.Pi*(200+4000*t)*t)
			case 6:
				s[i] = 0.6*math.Sin(2*math.Pi*330*t) + 0.3*noise
			case 7:
				s[i] = 0.03*math.Sin(2*math.Pi*500*t) + 0.01*noise
			}
		}
		for i := 0; i < c.Samples; i++ {
			v[n*c.Samples+i] = float32(s[chunk*c.Samples+i] + 3e-4*r.NormFloat64())
		}
	}
	return tensor.From([]int{batch, c.Samples}, v)
}
