package conv

import (
	"math"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// DeformConv is a convolution whose kernel taps sample the input at
// learned fractional offsets (multilinear interpolation, zero outside the
// input), each scaled by a mask. It runs as Conv does, with the im2col
// rows gathered by sampling, and the product on the float tiles. Opset 22
// only widened its types.
var DeformConv = ops.Op{ops.Register(ops.Descriptor{Type: "DeformConv", Since: 19, Fold: true}, buildDeformConv)}

// DeformConvAttrs are the attributes of DeformConv.
type DeformConvAttrs struct {
	Dilations   []int64 `onnx:"dilations"`
	Group       int64   `onnx:"group" default:"1"`
	KernelShape []int64 `onnx:"kernel_shape"`
	OffsetGroup int64   `onnx:"offset_group" default:"1"`
	Pads        []int64 `onnx:"pads"`
	Strides     []int64 `onnx:"strides"`
}

// deformConv is a compiled DeformConv.
type deformConv struct{ at *DeformConvAttrs }

func buildDeformConv(n *ops.Node, at *DeformConvAttrs) (ops.Operator, error) {
	if err := n.CheckArity(3, 5, 1, 1); err != nil {
		return nil, err
	}
	if err := checkAttrs("NOTSET", at.Group, at.KernelShape, at.Strides, at.Dilations, at.Pads); err != nil {
		return nil, err
	}
	if at.OffsetGroup < 1 || at.OffsetGroup > maxAttr {
		return nil, ops.InputErrorf("offset_group %d must be positive", at.OffsetGroup)
	}
	return &deformConv{at: at}, nil
}

func (o *deformConv) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	const op = "DeformConv"
	at := o.at
	x, w, offset, b, mask := in[0], in[1], in[2], input(in, 3), input(in, 4)
	if !isFloat(x.DType) {
		return nil, ops.InputErrorf("%s takes floating-point inputs, got %v", op, x.DType)
	}
	for _, t := range []*tensor.Tensor{w, offset, b, mask} {
		if t != nil && t.DType != x.DType {
			return nil, ops.InputErrorf("%s operands have types %v and %v", op, x.DType, t.DType)
		}
	}
	g, err := forwardGeometry(op, x.Shape, w.Shape, "NOTSET", int(at.Group), at.KernelShape, at.Strides, at.Dilations, at.Pads)
	if err != nil {
		return nil, err
	}
	d, kk := len(g.In), g.KernelSize()
	og := int(at.OffsetGroup)
	if g.C%og != 0 {
		return nil, ops.InputErrorf("%s input has %d channels, not a multiple of offset_group %d", op, g.C, og)
	}
	wantOff := append([]int{g.Batch, og * kk * d}, g.Out...)
	if !ops.EqualShape(offset.Shape, wantOff) {
		return nil, ops.InputErrorf("%s offset %s must have shape %s", op, tensor.ShapeString(offset.Shape), tensor.ShapeString(wantOff))
	}
	if mask != nil {
		if want := append([]int{g.Batch, og * kk}, g.Out...); !ops.EqualShape(mask.Shape, want) {
			return nil, ops.InputErrorf("%s mask %s must have shape %s", op, tensor.ShapeString(mask.Shape), tensor.ShapeString(want))
		}
	}
	var bias []float32
	if b != nil {
		if b.Rank() != 1 || b.Shape[0] != g.M {
			return nil, ops.InputErrorf("%s bias %s must be 1-D with %d values", op, tensor.ShapeString(b.Shape), g.M)
		}
		bias = asFloat32(b)
	}
	outShape := append([]int{g.Batch, g.M}, g.Out...)
	size, _ := tensor.NumElements(outShape)
	y := make([]float32, size)
	xv, wv, ov := asFloat32(x), asFloat32(w), asFloat32(offset)
	var mv []float32
	if mask != nil {
		mv = asFloat32(mask)
	}
	cw, err := prepareWeights(wv, w.Shape, g.Group, false, false, 0)
	if err != nil {
		return nil, err
	}
	if err := deformForward(c, g, cw, og, xv, ov, mv, bias, y); err != nil {
		return nil, err
	}
	if x.DType == tensor.Float64 {
		r := make([]float64, len(y))
		for i, v := range y {
			r[i] = float64(v)
		}
		return ops.Result(tensor.From(outShape, r), nil)
	}
	return ops.Result(fromFloats(x.DType, outShape, y), nil)
}

// deformForward runs the deformable convolution tile by tile: rows of
// sampled, masked input values, multiplied on the float tiles.
func deformForward(c *ops.Context, g *Geometry, cw *gemmWeights, og int, x, offset, mask, bias, y []float32) error {
	inSize, outSize, kk := g.InSize(), g.OutSize(), g.KernelSize()
	cg, mg := g.cg(), g.mg()
	if g.Batch == 0 || g.M == 0 || outSize == 0 {
		return nil
	}
	if cw.k == 0 {
		fillBias(y, bias, g.Batch, g.M, outSize)
		return nil
	}
	d := len(g.In)
	taps := newTaps(g)
	tile := tileRows(max(cw.k, cw.n))
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
		err := run(c, tiles*g.Group, outSize*cw.k*g.M*4, func(e *gemm.Engine, s *scratch, task int) error {
			gi, p0 := task/tiles, task%tiles*tile
			n := min(tile, outSize-p0)
			s.rows = grow(s.rows, n*cw.k)
			idx := make([]int, corners)
			wts := make([]float32, corners)
			pos := taps.pos(p0)
			for r := 0; r < n; r++ {
				p := p0 + r
				row := s.rows[r*cw.k : (r+1)*cw.k]
				for kidx := 0; kidx < kk; kidx++ {
					for ci := 0; ci < cg; ci++ {
						ch := gi*cg + ci
						o := ch / perOG
						if ci == 0 || ch%perOG == 0 {
							deformCorners(g, taps, &pos, ob, o, kidx, p, outSize, inStr, idx, wts)
						}
						m := float32(1)
						if mb != nil {
							m = mb[(o*kk+kidx)*outSize+p]
						}
						plane := xb[ch*inSize : (ch+1)*inSize]
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
			s.out = grow(s.out, n*mg)
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
func deformCorners(g *Geometry, taps *taps, pos *position, offset []float32, o, kidx, p, outSize int, inStr []int, idx []int, wts []float32) {
	d, kk := len(g.In), len(taps.lin)
	var fl [8]int
	var fr [8]float32
	_, base := pos.coords()
	for i := 0; i < d; i++ {
		off := offset[((o*kk+kidx)*d+i)*outSize+p]
		c := float32(base[i]+taps.disp[kidx*d+i]) + off
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
