package spatial

import (
	"slices"

	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "Col2Im", Since: 18, Fold: true}, buildCol2Im)
}

// Col2ImAttrs are Col2Im's attributes; nil means ones (dilations,
// strides) or zeros (pads).
type Col2ImAttrs struct {
	Dilations []int64 `onnx:"dilations"`
	Pads      []int64 `onnx:"pads"`
	Strides   []int64 `onnx:"strides"`
}

// col2Im is a compiled Col2Im: its attributes, checked against the image
// rank at run time (nil: the default).
type col2Im struct {
	dilations, pads, strides []int64
}

func buildCol2Im(n *ops.Node, at *Col2ImAttrs) (ops.Operator, error) {
	if err := n.CheckArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	return &col2Im{dilations: slices.Clone(at.Dilations), pads: slices.Clone(at.Pads), strides: slices.Clone(at.Strides)}, nil
}

// col2ImAttr returns attribute v (name) for want positions: def in each
// when v is nil.
func col2ImAttr(v []int64, name string, def int64, want int) ([]int, error) {
	if v == nil {
		s := make([]int, want)
		for i := range s {
			s[i] = int(def)
		}
		return s, nil
	}
	if len(v) != want {
		return nil, ops.InputErrorf("Col2Im %s has %d values, needs %d", name, len(v), want)
	}
	s := make([]int, want)
	for i, e := range v {
		if e < 0 || e > 1<<20 || (name != "pads" && e == 0) {
			return nil, ops.InputErrorf("Col2Im %s %v is invalid", name, v)
		}
		s[i] = int(e)
	}
	return s, nil
}

func (op *col2Im) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	image, err1 := in[1].Int64s()
	block, err2 := in[2].Int64s()
	if err1 != nil || err2 != nil || in[1].Rank() != 1 || in[2].Rank() != 1 || len(image) != len(block) || len(image) == 0 {
		return nil, ops.InputErrorf("Col2Im image_shape and block_shape must be 1-D integer tensors of one length")
	}
	r := len(image)
	dil, err := col2ImAttr(op.dilations, "dilations", 1, r)
	if err != nil {
		return nil, err
	}
	pads, err := col2ImAttr(op.pads, "pads", 0, 2*r)
	if err != nil {
		return nil, err
	}
	strides, err := col2ImAttr(op.strides, "strides", 1, r)
	if err != nil {
		return nil, err
	}
	img, blk := make([]int, r), make([]int, r)
	for i := range r {
		if image[i] < 1 || image[i] > tensor.MaxElements || block[i] < 1 || block[i] > tensor.MaxElements {
			return nil, ops.InputErrorf("Col2Im image_shape %v or block_shape %v is invalid", image, block)
		}
		img[i], blk[i] = int(image[i]), int(block[i])
	}
	if x.Rank() != 3 {
		return nil, ops.InputErrorf("Col2Im takes an (N, C·∏block, L) input, got %s", tensor.ShapeString(x.Shape))
	}
	k, err := tensor.NumElements(blk)
	if err != nil {
		return nil, ops.InputErrorf("%v", err)
	}
	if x.Shape[1]%k != 0 {
		return nil, ops.InputErrorf("Col2Im: input dimension 1 (%d) is not a multiple of the block size %d", x.Shape[1], k)
	}
	cols := make([]int, r) // sliding blocks per dimension
	for i := range r {
		cols[i] = (img[i]+pads[i]+pads[i+r]-dil[i]*(blk[i]-1)-1)/strides[i] + 1
		if cols[i] < 1 {
			return nil, ops.InputErrorf("Col2Im: no block fits dimension %d", i)
		}
	}
	l, err := tensor.NumElements(cols)
	if err != nil {
		return nil, ops.InputErrorf("%v", err)
	}
	if x.Shape[2] != l {
		return nil, ops.InputErrorf("Col2Im: input has %d blocks, image_shape and block_shape give %d", x.Shape[2], l)
	}
	nb, ch := x.Shape[0], x.Shape[1]/k
	out := append([]int{nb, ch}, img...)
	total, err := tensor.NumElements(out)
	if err != nil {
		return nil, ops.InputErrorf("%v", err)
	}
	if x.DType == tensor.String || x.DType == tensor.Bool {
		return nil, ops.InputErrorf("Col2Im does not take %v", x.DType)
	}
	if err := c.Reserve(int64(total) * 16); err != nil { // the image in float64, and its cast
		return nil, err
	}
	xs := x.Float64s()
	res := make([]float64, total)
	plane := total / max(nb*ch, 1)
	imgSt := tensor.Strides(img)
	kIdx, bIdx := make([]int, r), make([]int, r)
	for b := 0; b < nb; b++ {
		for cc := 0; cc < ch; cc++ {
			dst := res[(b*ch+cc)*plane : (b*ch+cc+1)*plane]
			clear(kIdx)
			for kk := 0; kk < k; kk++ {
				if err := c.Tick(l * r); err != nil {
					return nil, err
				}
				clear(bIdx)
				src := xs[((b*ch+cc)*k+kk)*l:]
				for j := 0; j < l; j++ {
					off, ok := 0, true
					for d := 0; d < r; d++ {
						p := bIdx[d]*strides[d] - pads[d] + kIdx[d]*dil[d]
						if p < 0 || p >= img[d] {
							ok = false
							break
						}
						off += p * imgSt[d]
					}
					if ok {
						dst[off] += src[j]
					}
					next(bIdx, cols)
				}
				next(kIdx, blk)
			}
		}
	}
	y, err := tensorops.CastToContext(c, &tensor.Tensor{DType: tensor.Float64, Shape: out, Data: res}, x.DType)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}
