package signal

import (
	"math"

	"github.com/quantserve/quantserve/onnx"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "MelWeightMatrix", Since: 17, Fold: true}, buildMelWeightMatrix)
}

// MelWeightMatrixAttrs are MelWeightMatrix's attributes.
type MelWeightMatrixAttrs struct {
	OutputDType int64 `onnx:"output_datatype" default:"1"`
}

// melWeightMatrix is a compiled MelWeightMatrix: its output type.
type melWeightMatrix struct{ dt tensor.DataType }

// buildMelWeightMatrix implements MelWeightMatrix as ONNX's reference
// computes it: num_mel_bins triangles with peak 1 over the one-sided DFT
// bins, edges equally spaced on the mel scale.
func buildMelWeightMatrix(n *ops.Node, at *MelWeightMatrixAttrs) (ops.Operator, error) {
	if err := n.CheckArity(5, 5, 1, 1); err != nil {
		return nil, err
	}
	dt, err := onnx.DataTypeFromONNX(onnxpb.DataType(at.OutputDType))
	if err != nil {
		return nil, err
	}
	return melWeightMatrix{dt: dt}, nil
}

// Run takes num_mel_bins, dft_length, sample_rate, lower_edge_hertz and
// upper_edge_hertz, and returns the matrix [dft_length/2 + 1,
// num_mel_bins].
func (op melWeightMatrix) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	var iv [3]int64
	for i, name := range []string{"num_mel_bins", "dft_length", "sample_rate"} {
		v, err := ops.ScalarInt(in[i], name)
		if err != nil {
			return nil, err
		}
		iv[i] = v
	}
	mels, dftLen, rate := iv[0], iv[1], iv[2]
	lo, hi := in[3].Float64s(), in[4].Float64s()
	if len(lo) != 1 || len(hi) != 1 || !in[3].DType.IsFloat() || !in[4].DType.IsFloat() {
		return nil, ops.InputErrorf("lower_edge_hertz and upper_edge_hertz must be float scalars")
	}
	if mels < 1 || dftLen < 1 || rate < 1 || mels > maxDFTLength || dftLen > maxDFTLength {
		return nil, ops.InputErrorf("MelWeightMatrix needs positive num_mel_bins, dft_length and sample_rate")
	}
	bins := int(dftLen/2 + 1)
	shape := []int{bins, int(mels)}
	total, err := tensor.NumElements(shape)
	if err != nil {
		return nil, ops.InputErrorf("MelWeightMatrix %s: %v", tensor.ShapeString(shape), err)
	}
	lowMel := 2595 * math.Log10(1+lo[0]/700)
	highMel := 2595 * math.Log10(1+hi[0]/700)
	step := (highMel - lowMel) / float64(mels+2)
	edge := make([]int, mels+2)
	err = c.InPieces(len(edge), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			hz := 700 * (math.Pow(10, (float64(i)*step+lowMel)/2595) - 1)
			edge[i] = int(math.Floor(float64(dftLen+1) * hz / float64(rate)))
		}
	})
	if err != nil {
		return nil, err
	}
	if err := c.Reserve(16 * int64(total)); err != nil { // the matrix in float64, and its cast
		return nil, err
	}
	out := make([]float64, total)
	set := func(j, i int, v float64) error {
		if err := c.Tick(1); err != nil {
			return err
		}
		if j < 0 || j >= bins {
			return ops.InputErrorf("mel band %d reaches bin %d, outside the %d DFT bins", i, j, bins)
		}
		out[j*int(mels)+i] = v
		return nil
	}
	for i := 0; i < int(mels); i++ {
		l, m, h := edge[i], edge[i+1], edge[i+2]
		if err := c.Tick(1); err != nil {
			return nil, err
		}
		if m == l {
			if err := set(m, i, 1); err != nil {
				return nil, err
			}
		} else {
			for j := l; j <= m; j++ {
				if err := set(j, i, float64(j-l)/float64(m-l)); err != nil {
					return nil, err
				}
			}
		}
		for j := m; j < h; j++ {
			if err := set(j, i, float64(h-j)/float64(h-m)); err != nil {
				return nil, err
			}
		}
	}
	t, err := tensorops.CastToContext(c, tensor.From(shape, out), op.dt)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{t}, nil
}
