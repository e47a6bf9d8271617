package signal

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "STFT", Since: 17, Fold: true}, buildSTFT)
}

// STFTAttrs are STFT's attributes.
type STFTAttrs struct {
	OneSided bool `onnx:"onesided" default:"true"`
}

// stft is a compiled STFT: whether it keeps only the non-redundant bins.
type stft struct{ onesided bool }

func buildSTFT(n *ops.Node, at *STFTAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 4, 1, 1); err != nil {
		return nil, err
	}
	return stft{onesided: at.OneSided}, nil
}

// Run takes the signal [batch, length, 1 or 2], frame_step, the optional
// window and the optional frame_length, and returns the spectra of the
// frames [batch, frames, bins, 2].
func (op stft) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, window, length := in[0], ops.Optional(in, 2), ops.Optional(in, 3)
	if !x.DType.IsFloat() || x.Rank() != 3 || (x.Shape[2] != 1 && x.Shape[2] != 2) {
		return nil, ops.InputErrorf("STFT takes a float signal [batch, length, 1 or 2], got %v%s", x.DType, tensor.ShapeString(x.Shape))
	}
	step, err := ops.ScalarInt(in[1], "frame_step")
	if err != nil {
		return nil, err
	}
	batch, sigLen, comps := x.Shape[0], x.Shape[1], x.Shape[2]
	frameLen := sigLen
	var w []float64
	if window != nil {
		if window.Rank() != 1 || !window.DType.IsFloat() {
			return nil, ops.InputErrorf("STFT window must be a 1-D float tensor")
		}
		w = floatValues(window)
		frameLen = len(w)
	}
	if length != nil {
		l, err := ops.ScalarInt(length, "frame_length")
		if err != nil {
			return nil, err
		}
		if l < 1 || l > maxDFTLength {
			return nil, ops.InputErrorf("frame_length %d is outside [1, %d]", l, maxDFTLength)
		}
		frameLen = int(l)
	}
	if w == nil {
		w = make([]float64, frameLen)
		for i := range w {
			w[i] = 1
		}
	}
	if step < 1 || frameLen < 1 || frameLen > sigLen {
		return nil, ops.InputErrorf("STFT frame_step %d and frame length %d do not fit a signal of %d samples", step, frameLen, sigLen)
	}
	if op.onesided && comps == 2 {
		return nil, ops.InputErrorf("a one-sided STFT takes a real signal")
	}
	frames := 1 + (sigLen-frameLen)/int(step)
	bins := frameLen
	if op.onesided {
		bins = frameLen/2 + 1
	}
	outShape := []int{batch, frames, bins, 2}
	total, err := tensor.NumElements(outShape)
	if err != nil {
		return nil, ops.InputErrorf("STFT output %s: %v", tensor.ShapeString(outShape), err)
	}
	if err := c.Reserve(16*int64(total) + fourierBytes(frameLen)); err != nil {
		return nil, err
	}
	xv := floatValues(x)
	out := make([]float64, total)
	re, im := make([]float64, frameLen), make([]float64, frameLen)
	f, err := newFourier(c, frameLen)
	if err != nil {
		return nil, err
	}
	for b := 0; b < batch; b++ {
		for fr := 0; fr < frames; fr++ {
			clear(re)
			clear(im)
			begin := fr * int(step)
			for k := 0; k < min(len(w), frameLen) && begin+k < sigLen; k++ {
				p := (b*sigLen + begin + k) * comps
				re[k] = xv[p] * w[k]
				if comps == 2 {
					im[k] = xv[p+1] * w[k]
				}
			}
			// The transform looks at the request's context as it goes,
			// so a long run of frames stops once the request ends.
			if err := f.transform(c, re, im, false); err != nil {
				return nil, err
			}
			for k := 0; k < bins; k++ {
				p := ((b*frames+fr)*bins + k) * 2
				out[p], out[p+1] = re[k], im[k]
			}
		}
	}
	return []*tensor.Tensor{floatTensor(x.DType, outShape, out)}, nil
}
