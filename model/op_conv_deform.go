package model

import (
	"math"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	// DeformConv 22 only widened types.
	register(Descriptor{Type: "DeformConv", Since: 19, Fold: true}, buildDeformConv)
}

// DeformConvAttrs are the attributes of DeformConv.
type DeformConvAttrs struct {
	Dilations   []int64 `onnx:"dilations"`
	Group       int64   `onnx:"group" default:"1"`
	KernelShape []int64 `onnx:"kernel_shape"`
	OffsetGroup int64   `onnx:"offset_group" default:"1"`
	Pads        []int64 `onnx:"pads"`
	Strides     []int64 `onnx:"strides"`
}

// buildDeformConv implements DeformConv: a convolution whose kernel taps
// sample the input at learned fractional offsets (multilinear
// interpolation, zero outside the input), each scaled by a mask. It runs
// as Conv does, with the im2col rows gathered by sampling, and the product
// on the float tiles.
func buildDeformConv(n *node, at *DeformConvAttrs) (opFunc, error) {
	if err := n.checkArity(3, 5, 1, 1); err != nil {
		return nil, err
	}
	if err := checkConvAttrs("NOTSET", at.Group, at.KernelShape, at.Strides, at.Dilations, at.Pads); err != nil {
		return nil, err
	}
	if at.OffsetGroup < 1 || at.OffsetGroup > convMaxAttr {
		return nil, inputErrorf("offset_group %d must be positive", at.OffsetGroup)
	}
	exec := n.opts.Exec
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		var b, mask *tensor.Tensor
		if len(in) > 3 {
			b = in[3]
		}
		if len(in) > 4 {
			mask = in[4]
		}
		y, err := runDeformConv(exec, at, in[0], in[1], in[2], b, mask)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}

func runDeformConv(e *gemm.Engine, at *DeformConvAttrs, x, w, offset, b, mask *tensor.Tensor) (*tensor.Tensor, error) {
	const op = "DeformConv"
	if !convFloatType(x.DType) {
		return nil, inputErrorf("%s takes floating-point inputs, got %v", op, x.DType)
	}
	for _, t := range []*tensor.Tensor{w, offset, b, mask} {
		if t != nil && t.DType != x.DType {
			return nil, inputErrorf("%s operands have types %v and %v", op, x.DType, t.DType)
		}
	}
	g, err := convGeometry(op, x.Shape, w.Shape, "NOTSET", int(at.Group), at.KernelShape, at.Strides, at.Dilations, at.Pads)
	if err != nil {
		return nil, err
	}
	d, kk := len(g.In), g.KernelSize()
	og := int(at.OffsetGroup)
	if g.C%og != 0 {
		return nil, inputErrorf("%s input has %d channels, not a multiple of offset_group %d", op, g.C, og)
	}
	wantOff := append([]int{g.Batch, og * kk * d}, g.Out...)
	if !equalShape(offset.Shape, wantOff) {
		return nil, inputErrorf("%s offset %s must have shape %s", op, tensor.ShapeString(offset.Shape), tensor.ShapeString(wantOff))
	}
	if mask != nil {
		if want := append([]int{g.Batch, og * kk}, g.Out...); !equalShape(mask.Shape, want) {
			return nil, inputErrorf("%s mask %s must have shape %s", op, tensor.ShapeString(mask.Shape), tensor.ShapeString(want))
		}
	}
	var bias []float32
	if b != nil {
		if b.Rank() != 1 || b.Shape[0] != g.M {
			return nil, inputErrorf("%s bias %s must be 1-D with %d values", op, tensor.ShapeString(b.Shape), g.M)
		}
		bias = convAsFloat32(b)
	}
	outShape := append([]int{g.Batch, g.M}, g.Out...)
	size, _ := tensor.NumElements(outShape)
	y := make([]float32, size)
	xv, wv, ov := convAsFloat32(x), convAsFloat32(w), convAsFloat32(offset)
	var mv []float32
	if mask != nil {
		mv = convAsFloat32(mask)
	}
	cw, err := prepareConvWeights(wv, w.Shape, g.Group, false, false, 0)
	if err != nil {
		return nil, err
	}
	if err := deformForward(e, g, cw, og, xv, ov, mv, bias, y); err != nil {
		return nil, err
	}
	if x.DType == tensor.Float64 {
		r := make([]float64, len(y))
		for i, v := range y {
			r[i] = float64(v)
		}
		return tensor.From(outShape, r), nil
	}
	return convResult(x.DType, outShape, y), nil
}

// convAsFloat32 returns a float tensor's values as float32.
func convAsFloat32(t *tensor.Tensor) []float32 {
	if d, ok := t.Data.([]float64); ok {
		r := make([]float32, len(d))
		for i, v := range d {
			r[i] = float32(v)
		}
		return r
	}
	v, _ := convFloats(t)
	return v
}

// deformForward runs the deformable convolution tile by tile: rows of
// sampled, masked input values, multiplied on the float tiles.
func deformForward(e *gemm.Engine, g *ConvGeometry, cw *convWeights, og int, x, offset, mask, bias, y []float32) error {
	inSize, outSize, kk := g.InSize(), g.OutSize(), g.KernelSize()
	cg, mg := g.cg(), g.mg()
	if g.Batch == 0 || g.M == 0 || outSize == 0 {
		return nil
	}
	if cw.k == 0 {
		convFillBias(y, bias, g.Batch, g.M, outSize)
		return nil
	}
	d := len(g.In)
	taps := newConvTaps(g)
	tile := convTileRows(max(cw.k, cw.n))
	tiles := (outSize + tile - 1) / tile
	perOG := g.C / og
	inStr := tensor.Strides(g.In)
	corners := 1 << d
	for b := 0; b < g.Batch; b++ {
		xb := x[b*g.C*inSize : (b+1)*g.C*inSize]
		ob := offset[b*og*kk*d*outSize:]
		var mb []float32
		if mask != nil {
			mb = mask[b*og*kk*outSize:]
		}
		yb := y[b*g.M*outSize : (b+1)*g.M*outSize]
		err := convRun(e, tiles*g.Group, outSize*cw.k*g.M*4, func(e *gemm.Engine, s *convScratch, task int) error {
			gi, p0 := task/tiles, task%tiles*tile
			n := min(tile, outSize-p0)
			s.rows = convGrow(s.rows, n*cw.k)
			idx := make([]int, corners)
			wts := make([]float32, corners)
			pos := taps.pos(p0)
			for r := 0; r < n; r++ {
				p := p0 + r
				row := s.rows[r*cw.k : (r+1)*cw.k]
				for kidx := 0; kidx < kk; kidx++ {
					for ci := 0; ci < cg; ci++ {
						c := gi*cg + ci
						o := c / perOG
						if ci == 0 || c%perOG == 0 {
							deformCorners(g, taps, pos, ob, o, kidx, p, outSize, inStr, idx, wts)
						}
						m := float32(1)
						if mb != nil {
							m = mb[(o*kk+kidx)*outSize+p]
						}
						plane := xb[c*inSize : (c+1)*inSize]
						var v float32
						for j, at := range idx {
							if at >= 0 {
								v += wts[j] * plane[at]
							}
						}
						row[kidx*cg+ci] = v * m
					}
				}
				pos.next()
			}
			s.out = convGrow(s.out, n*mg)
			if err := cw.gemmTo(e, s, gi, s.rows, n, s.out, cw.n); err != nil {
				return err
			}
			for co := 0; co < mg; co++ {
				m := gi*mg + co
				var bv float32
				if bias != nil {
					bv = bias[m]
				}
				dst := yb[m*outSize+p0 : m*outSize+p0+n]
				for r := range dst {
					dst[r] = s.out[r*mg+co] + bv
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// deformCorners sets the 2^d interpolation corners (In index, or -1
// outside the input) and weights of kernel offset kidx at output position
// p, offset group o.
func deformCorners(g *ConvGeometry, taps *convTaps, pos *convPos, offset []float32, o, kidx, p, outSize int, inStr []int, idx []int, wts []float32) {
	d, kk := len(g.In), len(taps.lin)
	var fl [8]int
	var fr [8]float32
	for i := 0; i < d; i++ {
		off := offset[((o*kk+kidx)*d+i)*outSize+p]
		c := float32(pos.base[i]+taps.disp[kidx*d+i]) + off
		f := math.Floor(float64(c))
		fl[i], fr[i] = int(f), c-float32(f)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			fl[i], fr[i] = -2, 0 // no corner inside
		}
	}
	for j := range idx {
		lin, wt := 0, float32(1)
		for i := 0; i < d; i++ {
			v := fl[i]
			if j>>(d-1-i)&1 == 1 {
				v++
				wt *= fr[i]
			} else {
				wt *= 1 - fr[i]
			}
			if v < 0 || v >= g.In[i] {
				lin = -1
				break
			}
			lin += v * inStr[i]
		}
		idx[j], wts[j] = lin, wt
	}
}
