package conv

import (
	"fmt"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// gemmWeights are a convolution's weights prepared for the kernels: for
// each group, the K×N matrix of its product, quantized and packed for the
// int8 tiles (q) or packed for the float tiles (f).
//
// The forward product of group gi has rows (kernel offset, input channel)
// and columns output channels:
//
//	B[kidx·Cg + ci][co] = W[gi·Mg + co][ci][kidx]
//
// and the adjoint product (ConvTranspose) its transpose.
type gemmWeights struct {
	transposed bool // the adjoint product's matrix
	k, n       int
	q          []*gemm.QWeights
	f          []*gemm.FWeights
	act        *gemm.Activations // how q's activations quantize (nil: per row)
	// perImage says q's activations quantize with one range an image,
	// taken each run (an input layer's: qimageOf), where act is nil.
	perImage bool
}

// groupMatrix returns group gi's product matrix of weight w (M×Cg×kk).
func groupMatrix(w []float32, m, cg, kk, group, gi int, adjoint bool) []float32 {
	mg := m / group
	kdim := kk * cg
	b := make([]float32, kdim*mg)
	for co := 0; co < mg; co++ {
		for ci := 0; ci < cg; ci++ {
			src := w[((gi*mg+co)*cg+ci)*kk:][:kk]
			for kidx, v := range src {
				r := kidx*cg + ci
				if adjoint {
					b[co*kdim+r] = v
				} else {
					b[r*mg+co] = v
				}
			}
		}
	}
	return b
}

// packF packs a K×N float matrix for the float tiles.
func packF(k, n int, b []float32) *gemm.FWeights { return gemm.PackF(k, n, b, n) }

// prepareWeights prepares w (shape [M, Cg, kernel...]) in group groups,
// quantized with scheme when quantize is set.
func prepareWeights(w []float32, shape []int, group int, adjoint, quantize bool, scheme quant.Scheme) (*gemmWeights, error) {
	m, cg, kk := shape[0], shape[1], ops.ProdInts(shape[2:])
	cw := &gemmWeights{transposed: adjoint, k: kk * cg, n: m / group}
	if adjoint {
		cw.k, cw.n = cw.n, cw.k
	}
	for gi := 0; gi < group; gi++ {
		b := groupMatrix(w, m, cg, kk, group, gi, adjoint)
		if !quantize {
			cw.f = append(cw.f, packF(cw.k, cw.n, b))
			continue
		}
		qw, err := quant.QuantizeWeights(b, cw.k, cw.n, scheme)
		if err != nil {
			return nil, err
		}
		p, err := gemm.PackQ(qw)
		if err != nil {
			return nil, err
		}
		cw.q = append(cw.q, p)
	}
	return cw, nil
}

// dequantizedWeight returns w as the int8 kernels see it: quantized and
// dequantized group by group, in w's own layout.
func dequantizedWeight(w []float32, shape []int, group int, adjoint bool, scheme quant.Scheme) ([]float32, error) {
	m, cg, kk := shape[0], shape[1], ops.ProdInts(shape[2:])
	mg := m / group
	out := make([]float32, len(w))
	for gi := 0; gi < group; gi++ {
		b := groupMatrix(w, m, cg, kk, group, gi, adjoint)
		k, n := kk*cg, mg
		if adjoint {
			k, n = n, k
		}
		qw, err := quant.QuantizeWeights(b, k, n, scheme)
		if err != nil {
			return nil, err
		}
		deq := qw.Dequantize()
		for co := 0; co < mg; co++ {
			for ci := 0; ci < cg; ci++ {
				dst := out[((gi*mg+co)*cg+ci)*kk:][:kk]
				for kidx := range dst {
					r := kidx*cg + ci
					if adjoint {
						dst[kidx] = deq[co*n+r]
					} else {
						dst[kidx] = deq[r*mg+co]
					}
				}
			}
		}
	}
	return out, nil
}

// quantizeMinChannels is the fewest input channels per group for which
// a convolution's rows quantize one by one: below it (an image's first
// layer) a row is a few values from each of many pixels, and quantizing
// rows so cost more than int8 saved. Such a layer runs int8 only where
// its image is quantized once and its rows gathered as bytes (runs of
// 21 for a 7×7 kernel over 3 channels): on a QDQ pair's grid, or with
// one range an image taken each run (gemmWeights.perImage). ResNet-50's
// 7×7 first layer ran in float32 at 1.5 times ONNX Runtime's QLinearConv
// time.
const quantizeMinChannels = 4

// minQuantizedWeights is the smallest convolution weight (K·N) run on the
// int8 tiles. It is twice MatMul's: the narrow 1×1 projections of mobile
// CNNs' inverted residual blocks (K·N of a few thousand, no activation
// after them) carry quantization error straight into the residual sum.
// The PaddleOCR text-direction classifier ends 2.1% of its output range
// from ONNX Runtime with convolutions down to 4,096 weights in int8, and
// 0.6% from 8,192 up.
const minQuantizedWeights = 2 * ops.MinQuantizedWeights

// kernelsFor decides how a convolution with a constant weight runs on a
// node with the model's quantization options and the compiler's policy
// (n.KeepFloat): quantized (true) or float32, and says why in the words
// of the model's layers. imageOnce says its image can be quantized once
// for its int8 product (a pair's grid, or one range an image), which
// admits an input layer.
func kernelsFor(n *ops.Node, cg, k, cols int, imageOnce bool) (bool, string) {
	switch {
	case !n.Quantize:
		return false, "float32"
	case k > gemm.MaxQK:
		return false, fmt.Sprintf("float32 (K = %d is beyond the int8 tiles)", k)
	case cg < quantizeMinChannels && !imageOnce:
		return false, fmt.Sprintf("float32 (input layer: %d input channels)", cg)
	case k*cols < minQuantizedWeights:
		return false, "float32 (small weight)"
	}
	if keep := n.KeepFloat(); keep != "" {
		return false, "float32 (" + keep + ")"
	}
	return true, "int8 " + n.Scheme.String()
}

// gridOf returns the activations of an input on the grid of a pair with
// dequantize scale and zero point zp through typ ("uint8" or "int8": the
// bytes shifted by 128), or nil when the attributes are absent.
func gridOf(scale []float32, zp []int64, typ string) (*gemm.Activations, error) {
	if len(scale) == 0 && len(zp) == 0 && typ == "" {
		return nil, nil
	}
	shift := int64(0)
	switch typ {
	case "uint8":
	case "int8":
		shift = 128
	default:
		return nil, fmt.Errorf("FusedConv grid type %q (uint8 or int8)", typ)
	}
	if len(scale) != 1 || len(zp) != 1 {
		return nil, fmt.Errorf("FusedConv grid of %d scales and %d zero points (one each)", len(scale), len(zp))
	}
	z := zp[0] + shift
	if z < 0 || z > 255 {
		return nil, fmt.Errorf("FusedConv grid zero point %d out of %s's range", zp[0], typ)
	}
	return gemm.GridActivations(scale[0], int32(z))
}

// held is a constant weight prepared for the kernels at load. In builds
// with the autodiff tag it also keeps the weight as the kernels multiply
// by it, for backward passes.
type held struct {
	w      *gemmWeights
	dw     *depthwiseWeights
	planar *depthwiseWeights // beside w: the weight's planes (planar)
	dtype  tensor.DataType
	shape  []int
	kernel []float32 // autodiff builds: the weight in float32 (dequantized when int8)
}

// tensor returns the weight the kernels multiply by, in autodiff builds.
func (h *held) tensor() *tensor.Tensor {
	if h == nil || h.kernel == nil {
		return nil
	}
	return tensor.From(h.shape, h.kernel)
}

// layer is a held weight's entry among the model's layers (ops.Node.AddLayer).
type layer struct {
	k, cols int
	kernels string
}

// holdWeight prepares a constant float weight w of node n for the kernels
// (ConvTranspose's adjoint product when adjoint is set) and returns it
// with the layer to report. grid, when not nil, is the pair's grid the
// input lies on (gridOf): an int8 product of per-tensor or per-channel
// weights quantizes its activations with it. It returns nil for a
// weight the kernels do not hold: of another type or rank, or empty;
// each run then checks the weight and reports what is wrong with it.
func holdWeight(n *ops.Node, w *tensor.Tensor, group int, adjoint bool, grid *gemm.Activations) (*held, layer, error) {
	if !isFloat(w.DType) || w.DType == tensor.Float64 || w.Rank() < 3 {
		return nil, layer{}, nil
	}
	shape := w.Shape
	for _, d := range shape {
		if d == 0 {
			return nil, layer{}, nil
		}
	}
	if shape[0]%group != 0 {
		return nil, layer{}, fmt.Errorf("weight %s: %d channels are not a multiple of group %d", tensor.ShapeString(shape), shape[0], group)
	}
	data, _ := floats(w)
	h := &held{dtype: w.DType, shape: shape}
	m, cg, kk := shape[0], shape[1], ops.ProdInts(shape[2:])
	k, nn := kk*cg, m/group
	l := layer{k: k, cols: nn}
	if adjoint {
		l.k, l.cols = nn, k
	}
	if !adjoint && cg == 1 && group > 1 && len(shape) <= 4 {
		h.dw = &depthwiseWeights{w: data}
		l.kernels = "depthwise float32"
		if dispatch.AutodiffBuilt {
			h.kernel = data
		}
	} else {
		onGrid := grid != nil && n.Scheme != quant.PerBlock
		// A convolution's input layer quantizes its image once (an
		// adjoint product's rows are not an image's taps): on its grid,
		// or per image; per_block weights take neither.
		quantize, kernels := kernelsFor(n, cg, l.k, l.cols, n.Scheme != quant.PerBlock)
		if adjoint {
			quantize, kernels = kernelsFor(n, m/group, l.k, l.cols, onGrid)
		}
		var err error
		if h.w, err = prepareWeights(data, shape, group, adjoint, quantize, n.Scheme); err != nil {
			return nil, layer{}, fmt.Errorf("weight %q: %w", n.Inputs[1], err)
		}
		if quantize { // the input's grid, or the node's calibration, if any (ops.Node.Activations)
			switch h.w.act = n.Activations(); {
			case onGrid:
				h.w.act = grid
				kernels += " (QDQ activations)"
			case h.w.act.Static():
				kernels += " (static activations)"
			case h.w.act == nil && cg < quantizeMinChannels && !adjoint:
				h.w.perImage = true
				kernels += " (per-image activations)"
			}
		}
		l.kernels = kernels
		if !adjoint && !quantize && planar(shape, group) {
			h.planar = &depthwiseWeights{w: data}
		}
		if dispatch.AutodiffBuilt {
			h.kernel = data
			if quantize {
				if h.kernel, err = dequantizedWeight(data, shape, group, adjoint, n.Scheme); err != nil {
					return nil, layer{}, err
				}
			}
		}
	}
	if group > 1 {
		l.kernels += fmt.Sprintf(", %d groups", group)
	}
	return h, l, nil
}
