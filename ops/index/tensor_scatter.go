package index

import (
	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "TensorScatter", Since: 24, Fold: true}, buildTensorScatter)
}

// TensorScatterAttrs are TensorScatter's attributes.
type TensorScatterAttrs struct {
	Axis int64  `onnx:"axis" default:"-2"`
	Mode string `onnx:"mode" default:"linear"`
}

// tensorScatter is a compiled TensorScatter: the cache's sequence axis
// and whether writes wrap around it.
type tensorScatter struct {
	axis     int64
	circular bool
}

func buildTensorScatter(n *ops.Node, at *TensorScatterAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 3, 1, 1); err != nil {
		return nil, err
	}
	if at.Mode != "linear" && at.Mode != "circular" {
		return nil, ops.Unsupportedf("TensorScatter mode %q", at.Mode)
	}
	return tensorScatter{axis: at.Axis, circular: at.Mode == "circular"}, nil
}

func (s tensorScatter) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	var wi *tensor.Tensor
	if len(in) > 2 {
		wi = in[2]
	}
	y, err := scatterCache(c, in[0], in[1], wi, s.axis, s.circular)
	if err != nil {
		return nil, err
	}
	return out1(y), nil
}

// scatterCache writes update into a copy of the cache along axis, at
// each batch entry's write index (a KV-cache update).
func scatterCache(oc *ops.Context, cache, update, writeIdx *tensor.Tensor, axis int64, circular bool) (*tensor.Tensor, error) {
	if err := ops.SameType("TensorScatter", cache, update); err != nil {
		return nil, err
	}
	r := cache.Rank()
	if r < 2 {
		return nil, ops.InputErrorf("TensorScatter needs a cache of rank >= 2")
	}
	a, err := ops.NormAxis(axis, r)
	if err != nil {
		return nil, err
	}
	if a == 0 {
		return nil, ops.InputErrorf("TensorScatter axis cannot be the batch axis")
	}
	if update.Rank() != r {
		return nil, ops.InputErrorf("TensorScatter update has rank %d, the cache %d", update.Rank(), r)
	}
	for i, d := range update.Shape {
		if i != a && d != cache.Shape[i] || i == a && d > cache.Shape[i] {
			return nil, ops.InputErrorf("TensorScatter update %s does not fit the cache %s", tensor.ShapeString(update.Shape), tensor.ShapeString(cache.Shape))
		}
	}
	batch, maxSeq, seq := cache.Shape[0], cache.Shape[a], update.Shape[a]
	var w []int64
	if writeIdx != nil {
		if writeIdx.DType != tensor.Int64 || !ops.EqualShape(writeIdx.Shape, []int{batch}) {
			return nil, ops.InputErrorf("TensorScatter write_indices must be INT64 of shape [%d], got %v%s", batch, writeIdx.DType, tensor.ShapeString(writeIdx.Shape))
		}
		w = writeIdx.Data.([]int64)
		for _, v := range w {
			if !circular && (v < 0 || v > int64(maxSeq-seq)) {
				return nil, ops.InputErrorf("TensorScatter write index %d leaves no room for %d entries of %d", v, seq, maxSeq)
			}
		}
	}
	mv := tensorops.MoverOf(cache.DType)
	data, err := clone(oc, mv, cache.Data, cache.Len())
	if err != nil {
		return nil, err
	}
	y := &tensor.Tensor{DType: cache.DType, Shape: cache.Shape, Data: data}
	if update.Len() == 0 {
		return y, nil
	}
	inner := product(cache.Shape[a+1:])
	prefixes := product(cache.Shape[:a])
	perBatch := prefixes / batch
	for p := 0; p < prefixes; p++ {
		var start int64
		if w != nil {
			start = w[p/perBatch]
		}
		for s := 0; s < seq; s++ {
			pos := start + int64(s)
			if circular {
				pos = (pos%int64(maxSeq) + int64(maxSeq)) % int64(maxSeq)
			}
			to, from := (p*maxSeq+int(pos))*inner, (p*seq+s)*inner
			err := oc.InPieces(inner, func(lo, hi int) { mv.CopyN(y.Data, to+lo, update.Data, from+lo, hi-lo) })
			if err != nil {
				return nil, err
			}
		}
	}
	return y, nil
}
