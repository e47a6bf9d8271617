package model

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	register(Descriptor{Type: "Gather", Since: 1, Fold: true}, buildGather)
	register(Descriptor{Type: "GatherElements", Since: 11, Fold: true}, buildGatherElements)
	register(Descriptor{Type: "GatherND", Since: 11, Fold: true}, buildGatherND)
	register(Descriptor{Type: "Scatter", Since: 9, Fold: true}, func(n *node, at *ScatterAttrs) (opFunc, error) {
		return buildScatterElements(n, &ScatterElementsAttrs{Axis: at.Axis, Reduction: "none"})
	})
	register(Descriptor{Type: "ScatterElements", Since: 11, Fold: true}, buildScatterElements)
	register(Descriptor{Type: "ScatterND", Since: 11, Fold: true}, buildScatterND)
	register(Descriptor{Type: "TensorScatter", Since: 24, Fold: true}, buildTensorScatter)
	register(Descriptor{Type: "Compress", Since: 9, Fold: true}, buildCompress)
	register(Descriptor{Type: "NonZero", Since: 9, Fold: true}, buildNonZero)
	register(Descriptor{Type: "OneHot", Since: 9, Fold: true}, buildOneHot)
	register(Descriptor{Type: "TopK", Since: 1, Until: 9, Fold: true}, buildTopK)
	register(Descriptor{Type: "TopK", Since: 10, Fold: true}, buildTopK)
	register(Descriptor{Type: "Unique", Since: 11, Fold: true}, buildUnique)
	register(Descriptor{Type: "Trilu", Since: 14, Fold: true}, buildTrilu)
	register(Descriptor{Type: "EyeLike", Since: 9, Fold: true}, buildEyeLike)
	register(Descriptor{Type: "Hardmax", Since: 1, Until: 12, Fold: true}, func(n *node, at *HardmaxLegacyAttrs) (opFunc, error) {
		return buildHardmax(n, at.Axis, true)
	})
	register(Descriptor{Type: "Hardmax", Since: 13, Fold: true}, func(n *node, at *HardmaxAttrs) (opFunc, error) {
		return buildHardmax(n, at.Axis, false)
	})
	register(Descriptor{Type: "CumSum", Since: 11, Fold: true}, cumulativeBuilder("CumSum"))
	register(Descriptor{Type: "CumProd", Since: 26, Fold: true}, cumulativeBuilder("CumProd"))
	register(Descriptor{Type: "ReverseSequence", Since: 10, Fold: true}, buildReverseSequence)
	register(Descriptor{Type: "Det", Since: 11, Fold: true}, buildDet)
	register(Descriptor{Type: "Einsum", Since: 12, Fold: true}, buildEinsum)
	register(Descriptor{Type: "BitCast", Since: 26, Fold: true}, buildBitCast)
}

// GatherAttrs are Gather's attributes.
type GatherAttrs struct {
	Axis int64 `onnx:"axis"`
}

// GatherElementsAttrs are GatherElements' attributes.
type GatherElementsAttrs struct {
	Axis int64 `onnx:"axis"`
}

// GatherNDAttrs are GatherND's attributes (batch_dims from opset 12).
type GatherNDAttrs struct {
	BatchDims int64 `onnx:"batch_dims"`
}

// ScatterAttrs are the attributes of Scatter (opset 9–10, deprecated in
// 11 for ScatterElements).
type ScatterAttrs struct {
	Axis int64 `onnx:"axis"`
}

// ScatterElementsAttrs are ScatterElements' attributes: reduction add
// and mul from opset 16, max and min from 18.
type ScatterElementsAttrs struct {
	Axis      int64  `onnx:"axis"`
	Reduction string `onnx:"reduction" default:"none"`
}

// ScatterNDAttrs are ScatterND's attributes (reduction as for
// ScatterElements).
type ScatterNDAttrs struct {
	Reduction string `onnx:"reduction" default:"none"`
}

// TensorScatterAttrs are TensorScatter's attributes.
type TensorScatterAttrs struct {
	Axis int64  `onnx:"axis" default:"-2"`
	Mode string `onnx:"mode" default:"linear"`
}

// CompressAttrs are Compress's attributes.
type CompressAttrs struct {
	Axis *int64 `onnx:"axis"` // nil: the input is flattened
}

// OneHotAttrs are OneHot's attributes.
type OneHotAttrs struct {
	Axis int64 `onnx:"axis" default:"-1"`
}

// TopKAttrs are TopK's attributes; K is an attribute before opset 10
// and an input after.
type TopKAttrs struct {
	Axis    int64  `onnx:"axis" default:"-1"`
	Largest bool   `onnx:"largest" default:"true"`
	Sorted  bool   `onnx:"sorted" default:"true"`
	K       *int64 `onnx:"k"`
}

// UniqueAttrs are Unique's attributes.
type UniqueAttrs struct {
	Axis   *int64 `onnx:"axis"` // nil: unique elements of the flattened input
	Sorted bool   `onnx:"sorted" default:"true"`
}

// TriluAttrs are Trilu's attributes.
type TriluAttrs struct {
	Upper bool `onnx:"upper" default:"true"`
}

// EyeLikeAttrs are EyeLike's attributes.
type EyeLikeAttrs struct {
	DType *int64 `onnx:"dtype"` // nil: the input's type
	K     int64  `onnx:"k"`
}

// HardmaxAttrs are Hardmax's attributes from opset 13: along axis alone.
type HardmaxAttrs struct {
	Axis int64 `onnx:"axis" default:"-1"`
}

// HardmaxLegacyAttrs are Hardmax's attributes before opset 13: the input
// is coerced to 2-D at axis.
type HardmaxLegacyAttrs struct {
	Axis int64 `onnx:"axis" default:"1"`
}

// CumulativeAttrs are the attributes of CumSum and CumProd.
type CumulativeAttrs struct {
	Exclusive bool `onnx:"exclusive"`
	Reverse   bool `onnx:"reverse"`
}

// ReverseSequenceAttrs are ReverseSequence's attributes.
type ReverseSequenceAttrs struct {
	BatchAxis int64 `onnx:"batch_axis" default:"1"`
	TimeAxis  int64 `onnx:"time_axis"`
}

// EinsumAttrs are Einsum's attributes.
type EinsumAttrs struct {
	Equation string `onnx:"equation"`
}

// BitCastAttrs are BitCast's attributes.
type BitCastAttrs struct {
	To int64 `onnx:"to"`
}

// idxValues reads a tensor of INT32 or INT64 indices.
func idxValues(t *tensor.Tensor, what string) ([]int64, error) {
	switch d := t.Data.(type) {
	case []int64:
		return d, nil
	case []int32:
		v := make([]int64, len(d))
		for i, x := range d {
			v[i] = int64(x)
		}
		return v, nil
	}
	return nil, inputErrorf("%s must be INT32 or INT64, got %v", what, t.DType)
}

// idxWrap maps an index in [-dim, dim) to [0, dim).
func idxWrap(i int64, dim int, what string) (int, error) {
	if i < -int64(dim) || i >= int64(dim) {
		return 0, inputErrorf("%s index %d is out of range for an axis of %d", what, i, dim)
	}
	if i < 0 {
		i += int64(dim)
	}
	return int(i), nil
}

// idxProduct multiplies dimensions of a tensor that exists and is not
// empty, so the product cannot exceed its element count.
func idxProduct(dims []int) int {
	p := 1
	for _, d := range dims {
		p *= d
	}
	return p
}

// idxNew returns a new tensor of type dt and the given shape, refusing
// shapes beyond tensor.MaxElements.
func idxNew(dt tensor.DataType, shape []int) (*tensor.Tensor, int, error) {
	n, err := tensor.NumElements(shape)
	if err != nil {
		return nil, 0, inputErrorf("%v", err)
	}
	return &tensor.Tensor{DType: dt, Shape: shape, Data: moverOf(dt).alloc(n)}, n, nil
}

func idxOut(t *tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{t} }

func buildGather(n *node, at *GatherAttrs) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	axis := at.Axis
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		y, err := gatherAxis(in[0], in[1], axis)
		if err != nil {
			return nil, err
		}
		return idxOut(y), nil
	}, nil
}

// gatherAxis takes the entries indices selects along axis of x: output
// shape x[:axis] + indices + x[axis+1:]. Each entry is a contiguous run
// of the trailing dimensions (a row of an embedding table), copied whole.
func gatherAxis(x, indices *tensor.Tensor, axis int64) (*tensor.Tensor, error) {
	if x.Rank() == 0 {
		return nil, inputErrorf("Gather needs data of rank >= 1")
	}
	a, err := normAxis(axis, x.Rank())
	if err != nil {
		return nil, err
	}
	idx, err := idxValues(indices, "Gather indices")
	if err != nil {
		return nil, err
	}
	shape := slices.Concat(x.Shape[:a], indices.Shape, x.Shape[a+1:])
	y, size, err := idxNew(x.DType, shape)
	if err != nil || size == 0 {
		return y, err
	}
	dim, inner, outer := x.Shape[a], idxProduct(x.Shape[a+1:]), idxProduct(x.Shape[:a])
	offs := make([]int, len(idx))
	for j, i := range idx {
		k, err := idxWrap(i, dim, "Gather")
		if err != nil {
			return nil, err
		}
		offs[j] = k * inner
	}
	mv := moverOf(x.DType)
	for o := 0; o < outer; o++ {
		mv.runs(y.Data, o*len(offs)*inner, x.Data, o*dim*inner, offs, inner)
	}
	return y, nil
}

func buildGatherElements(n *node, at *GatherElementsAttrs) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	axis := at.Axis
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		offs, err := elementOffsets("GatherElements", x, in[1], axis)
		if err != nil {
			return nil, err
		}
		y, _, err := idxNew(x.DType, slices.Clone(in[1].Shape))
		if err != nil {
			return nil, err
		}
		moverOf(x.DType).runs(y.Data, 0, x.Data, 0, offs, 1)
		return idxOut(y), nil
	}, nil
}

// elementOffsets returns, for each element of indices (of x's rank, no
// larger than x off axis), the offset in x of the element it addresses:
// its own position with the index along axis (GatherElements,
// ScatterElements).
func elementOffsets(op string, x, indices *tensor.Tensor, axis int64) ([]int, error) {
	r := x.Rank()
	if r == 0 {
		return nil, inputErrorf("%s needs data of rank >= 1", op)
	}
	a, err := normAxis(axis, r)
	if err != nil {
		return nil, err
	}
	if indices.Rank() != r {
		return nil, inputErrorf("%s indices have rank %d, data rank %d", op, indices.Rank(), r)
	}
	for i, d := range indices.Shape {
		if i != a && d > x.Shape[i] {
			return nil, inputErrorf("%s indices %s do not fit data %s", op, tensor.ShapeString(indices.Shape), tensor.ShapeString(x.Shape))
		}
	}
	idx, err := idxValues(indices, op+" indices")
	if err != nil {
		return nil, err
	}
	offs := make([]int, len(idx))
	if len(idx) == 0 {
		return offs, nil
	}
	strides := tensor.Strides(x.Shape)
	walk := slices.Clone(strides)
	walk[a] = 0
	it := tensor.NewIter(indices.Shape, walk)
	for k := 0; it.Next(); k++ {
		j, err := idxWrap(idx[k], x.Shape[a], op)
		if err != nil {
			return nil, err
		}
		offs[k] = it.Off(0) + j*strides[a]
	}
	return offs, nil
}

func buildGatherND(n *node, at *GatherNDAttrs) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	b := at.BatchDims
	if b < 0 {
		return nil, fmt.Errorf("GatherND batch_dims %d is negative", b)
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		offs, run, shape, err := ndOffsets("GatherND", x, in[1], int(min(b, 64)))
		if err != nil {
			return nil, err
		}
		y, _, err := idxNew(x.DType, shape)
		if err != nil {
			return nil, err
		}
		moverOf(x.DType).runs(y.Data, 0, x.Data, 0, offs, run)
		return idxOut(y), nil
	}, nil
}

// ndOffsets resolves GatherND/ScatterND indices (shape [..., k]) against
// x whose first b dimensions are batch dimensions shared with indices: the
// offset in x of each slice addressed, the slice's length, and the shape
// indices[:-1] + x[b+k:] of the gathered (or scattered) values.
func ndOffsets(op string, x, indices *tensor.Tensor, b int) (offs []int, run int, shape []int, err error) {
	r, q := x.Rank(), indices.Rank()
	if q < 1 || b >= q || b >= r {
		return nil, 0, nil, inputErrorf("%s batch_dims %d does not fit data of rank %d and indices of rank %d", op, b, r, q)
	}
	k := indices.Shape[q-1]
	if k > r-b {
		return nil, 0, nil, inputErrorf("%s indices address %d dimensions of %d", op, k, r-b)
	}
	if !equalShape(x.Shape[:b], indices.Shape[:b]) {
		return nil, 0, nil, inputErrorf("%s batch dimensions differ: %s and %s", op, tensor.ShapeString(x.Shape[:b]), tensor.ShapeString(indices.Shape[:b]))
	}
	idx, err := idxValues(indices, op+" indices")
	if err != nil {
		return nil, 0, nil, err
	}
	shape = slices.Concat(indices.Shape[:q-1], x.Shape[b+k:])
	size, err := tensor.NumElements(shape)
	if err != nil {
		return nil, 0, nil, inputErrorf("%v", err)
	}
	if size == 0 {
		return nil, 0, shape, nil
	}
	run = idxProduct(x.Shape[b+k:])
	batches := idxProduct(x.Shape[:b])
	per := idxProduct(indices.Shape[b : q-1]) // index tuples per batch
	batchSize := idxProduct(x.Shape[b:])
	strides := tensor.Strides(x.Shape)
	offs = make([]int, batches*per)
	for bi := 0; bi < batches; bi++ {
		for i := 0; i < per; i++ {
			t := bi*per + i
			off := bi * batchSize
			for j := 0; j < k; j++ {
				v, err := idxWrap(idx[t*k+j], x.Shape[b+j], op)
				if err != nil {
					return nil, 0, nil, err
				}
				off += v * strides[b+j]
			}
			offs[t] = off
		}
	}
	return offs, run, shape, nil
}

// checkReduction refuses a scatter reduction the node's opset does not
// define.
func checkReduction(n *node, red string) error {
	switch {
	case red == "none":
	case (red == "add" || red == "mul") && n.opset >= 16:
	case (red == "max" || red == "min") && n.opset >= 18:
	default:
		return unsupportedf("reduction %q at opset %d", red, n.opset)
	}
	return nil
}

func buildScatterElements(n *node, at *ScatterElementsAttrs) (opFunc, error) {
	if err := n.checkArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	if err := checkReduction(n, at.Reduction); err != nil {
		return nil, err
	}
	axis, red := at.Axis, at.Reduction
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, upd := in[0], in[2]
		if err := sameType("ScatterElements", x, upd); err != nil {
			return nil, err
		}
		if !equalShape(in[1].Shape, upd.Shape) {
			return nil, inputErrorf("ScatterElements indices %s and updates %s differ in shape", tensor.ShapeString(in[1].Shape), tensor.ShapeString(upd.Shape))
		}
		offs, err := elementOffsets("ScatterElements", x, in[1], axis)
		if err != nil {
			return nil, err
		}
		y, err := scatterInto(x, offs, upd, 1, red)
		if err != nil {
			return nil, err
		}
		return idxOut(y), nil
	}, nil
}

func buildScatterND(n *node, at *ScatterNDAttrs) (opFunc, error) {
	if err := n.checkArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	if err := checkReduction(n, at.Reduction); err != nil {
		return nil, err
	}
	red := at.Reduction
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, upd := in[0], in[2]
		if err := sameType("ScatterND", x, upd); err != nil {
			return nil, err
		}
		offs, run, shape, err := ndOffsets("ScatterND", x, in[1], 0)
		if err != nil {
			return nil, err
		}
		if !equalShape(shape, upd.Shape) {
			return nil, inputErrorf("ScatterND updates have shape %s, the indices address %s", tensor.ShapeString(upd.Shape), tensor.ShapeString(shape))
		}
		y, err := scatterInto(x, offs, upd, run, red)
		if err != nil {
			return nil, err
		}
		return idxOut(y), nil
	}, nil
}

// scatterInto returns a copy of x with runs of run elements of upd
// written (or combined by the reduction) at offs, in order.
func scatterInto(x *tensor.Tensor, offs []int, upd *tensor.Tensor, run int, red string) (*tensor.Tensor, error) {
	mv := moverOf(x.DType)
	out := mv.clone(x.Data)
	y := &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: out}
	if len(offs) == 0 || run == 0 {
		return y, nil
	}
	if red == "none" {
		mv.put(out, 0, offs, upd.Data, 0, run)
		return y, nil
	}
	switch d := out.(type) {
	case []float32:
		scatterReduce(d, upd.Data.([]float32), offs, run, red)
	case []float64:
		scatterReduce(d, upd.Data.([]float64), offs, run, red)
	case []int8:
		scatterReduce(d, upd.Data.([]int8), offs, run, red)
	case []uint8:
		scatterReduce(d, upd.Data.([]uint8), offs, run, red)
	case []int16:
		scatterReduce(d, upd.Data.([]int16), offs, run, red)
	case []uint16:
		scatterReduce(d, upd.Data.([]uint16), offs, run, red)
	case []int32:
		scatterReduce(d, upd.Data.([]int32), offs, run, red)
	case []uint32:
		scatterReduce(d, upd.Data.([]uint32), offs, run, red)
	case []int64:
		scatterReduce(d, upd.Data.([]int64), offs, run, red)
	case []uint64:
		scatterReduce(d, upd.Data.([]uint64), offs, run, red)
	case []tensor.F16:
		f := tensor.HalfToFloat32(d)
		scatterReduce(f, tensor.HalfToFloat32(upd.Data.([]tensor.F16)), offs, run, red)
		y.Data = tensor.Float32ToHalf[tensor.F16](f)
	case []tensor.BF16:
		f := tensor.HalfToFloat32(d)
		scatterReduce(f, tensor.HalfToFloat32(upd.Data.([]tensor.BF16)), offs, run, red)
		y.Data = tensor.Float32ToHalf[tensor.BF16](f)
	default:
		return nil, inputErrorf("scatter reduction %q does not take %v", red, x.DType)
	}
	return y, nil
}

func scatterReduce[T tensor.Numeric](dst, src []T, offs []int, run int, red string) {
	var f func(a, b T) T
	switch red {
	case "add":
		f = func(a, b T) T { return a + b }
	case "mul":
		f = func(a, b T) T { return a * b }
	case "max":
		f = func(a, b T) T { return max(a, b) }
	case "min":
		f = func(a, b T) T { return min(a, b) }
	}
	for i, o := range offs {
		d, s := dst[o:o+run], src[i*run:(i+1)*run]
		for j := range d {
			d[j] = f(d[j], s[j])
		}
	}
}

func buildTensorScatter(n *node, at *TensorScatterAttrs) (opFunc, error) {
	if err := n.checkArity(2, 3, 1, 1); err != nil {
		return nil, err
	}
	if at.Mode != "linear" && at.Mode != "circular" {
		return nil, unsupportedf("TensorScatter mode %q", at.Mode)
	}
	axis, circular := at.Axis, at.Mode == "circular"
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		var wi *tensor.Tensor
		if len(in) > 2 {
			wi = in[2]
		}
		y, err := tensorScatter(in[0], in[1], wi, axis, circular)
		if err != nil {
			return nil, err
		}
		return idxOut(y), nil
	}, nil
}

// tensorScatter writes update into a copy of the cache along axis, at
// each batch entry's write index (a KV-cache update).
func tensorScatter(cache, update, writeIdx *tensor.Tensor, axis int64, circular bool) (*tensor.Tensor, error) {
	if err := sameType("TensorScatter", cache, update); err != nil {
		return nil, err
	}
	r := cache.Rank()
	if r < 2 {
		return nil, inputErrorf("TensorScatter needs a cache of rank >= 2")
	}
	a, err := normAxis(axis, r)
	if err != nil {
		return nil, err
	}
	if a == 0 {
		return nil, inputErrorf("TensorScatter axis cannot be the batch axis")
	}
	if update.Rank() != r {
		return nil, inputErrorf("TensorScatter update has rank %d, the cache %d", update.Rank(), r)
	}
	for i, d := range update.Shape {
		if i != a && d != cache.Shape[i] || i == a && d > cache.Shape[i] {
			return nil, inputErrorf("TensorScatter update %s does not fit the cache %s", tensor.ShapeString(update.Shape), tensor.ShapeString(cache.Shape))
		}
	}
	batch, maxSeq, seq := cache.Shape[0], cache.Shape[a], update.Shape[a]
	var w []int64
	if writeIdx != nil {
		if writeIdx.DType != tensor.Int64 || !equalShape(writeIdx.Shape, []int{batch}) {
			return nil, inputErrorf("TensorScatter write_indices must be INT64 of shape [%d], got %v%s", batch, writeIdx.DType, tensor.ShapeString(writeIdx.Shape))
		}
		w = writeIdx.Data.([]int64)
		for _, v := range w {
			if !circular && (v < 0 || v > int64(maxSeq-seq)) {
				return nil, inputErrorf("TensorScatter write index %d leaves no room for %d entries of %d", v, seq, maxSeq)
			}
		}
	}
	mv := moverOf(cache.DType)
	y := &tensor.Tensor{DType: cache.DType, Shape: cache.Shape, Data: mv.clone(cache.Data)}
	if update.Len() == 0 {
		return y, nil
	}
	inner := idxProduct(cache.Shape[a+1:])
	prefixes := idxProduct(cache.Shape[:a])
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
			mv.copyN(y.Data, (p*maxSeq+int(pos))*inner, update.Data, (p*seq+s)*inner, inner)
		}
	}
	return y, nil
}

func buildCompress(n *node, at *CompressAttrs) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	axis := at.Axis
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, c := in[0], in[1]
		cond, ok := c.Data.([]bool)
		if !ok || c.Rank() != 1 {
			return nil, inputErrorf("Compress condition must be a 1-D BOOL tensor, got %v%s", c.DType, tensor.ShapeString(c.Shape))
		}
		a, dim, flat := 0, x.Len(), axis == nil
		if !flat {
			var err error
			if a, err = normAxis(*axis, x.Rank()); err != nil {
				return nil, err
			}
			dim = x.Shape[a]
		}
		var sel []int
		for i, keep := range cond {
			if !keep {
				continue
			}
			if i >= dim {
				return nil, inputErrorf("Compress condition selects entry %d of an axis of %d", i, dim)
			}
			sel = append(sel, i)
		}
		shape := []int{len(sel)}
		if !flat {
			shape = slices.Clone(x.Shape)
			shape[a] = len(sel)
		}
		y, size, err := idxNew(x.DType, shape)
		if err != nil || size == 0 {
			return idxOut(y), err
		}
		outer, inner := 1, 1
		if !flat {
			outer, inner = idxProduct(x.Shape[:a]), idxProduct(x.Shape[a+1:])
		}
		offs := make([]int, len(sel))
		for j, s := range sel {
			offs[j] = s * inner
		}
		mv := moverOf(x.DType)
		for o := 0; o < outer; o++ {
			mv.runs(y.Data, o*len(sel)*inner, x.Data, o*dim*inner, offs, inner)
		}
		return idxOut(y), nil
	}, nil
}

func buildNonZero(n *node, _ *noAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		var nz []int
		switch d := x.Data.(type) {
		case []bool:
			for i, v := range d {
				if v {
					nz = append(nz, i)
				}
			}
		case []string:
			return nil, inputErrorf("NonZero does not take %v", x.DType)
		default:
			for i, v := range x.Float64s() {
				if v != 0 {
					nz = append(nz, i)
				}
			}
		}
		// A scalar reads as a 1-D tensor of one element, as in ONNX Runtime.
		shape := x.Shape
		if len(shape) == 0 {
			shape = []int{1}
		}
		r := len(shape)
		out := make([]int64, r*len(nz))
		strides := tensor.Strides(shape)
		for j, flat := range nz {
			for d := 0; d < r; d++ {
				out[d*len(nz)+j] = int64(flat / strides[d] % shape[d])
			}
		}
		return tensor.From([]int{r, len(nz)}, out), nil
	}), nil
}

func buildOneHot(n *node, at *OneHotAttrs) (opFunc, error) {
	if err := n.checkArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	axis := at.Axis
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		ind, depthT, values := in[0], in[1], in[2]
		if depthT.Len() != 1 || depthT.DType == tensor.String || depthT.DType == tensor.Bool {
			return nil, inputErrorf("OneHot depth must be a numeric scalar, got %v%s", depthT.DType, tensor.ShapeString(depthT.Shape))
		}
		if values.Len() != 2 {
			return nil, inputErrorf("OneHot values must hold [off, on], got shape %s", tensor.ShapeString(values.Shape))
		}
		if ind.DType == tensor.String || ind.DType == tensor.Bool {
			return nil, inputErrorf("OneHot indices must be numeric, got %v", ind.DType)
		}
		df := math.Trunc(depthT.Float64s()[0])
		if !(df >= 0 && df <= tensor.MaxElements) {
			return nil, inputErrorf("OneHot depth %v is invalid", depthT.Float64s()[0])
		}
		depth := int(df)
		a, err := normAxis(axis, ind.Rank()+1)
		if err != nil {
			return nil, err
		}
		shape := slices.Concat(ind.Shape[:a], []int{depth}, ind.Shape[a:])
		y, size, err := idxNew(values.DType, shape)
		if err != nil || size == 0 {
			return idxOut(y), err
		}
		mv := moverOf(values.DType)
		mv.strided(y.Data, values.Data, []int{size}, []int{0}, 0) // all off
		inner := idxProduct(ind.Shape[a:])
		var offs []int
		for p, v := range ind.Float64s() {
			v = math.Trunc(v)
			if v < -df || v >= df || math.IsNaN(v) {
				continue // out of range: all off
			}
			if v < 0 {
				v += df
			}
			o, i := p/inner, p%inner
			offs = append(offs, (o*depth+int(v))*inner+i)
		}
		on := mv.alloc(len(offs))
		if len(offs) > 0 {
			mv.strided(on, values.Data, []int{len(offs)}, []int{0}, 1)
		}
		mv.put(y.Data, 0, offs, on, 0, 1)
		return idxOut(y), nil
	}, nil
}

// idxCompare returns a three-way comparison of two elements of x by
// their offsets. Floating-point NaNs order after every number and equal
// each other, as numpy sorts them.
func idxCompare(x *tensor.Tensor) (func(i, j int) int, error) {
	switch d := x.Data.(type) {
	case []float32:
		return func(i, j int) int { return idxNaNLast(d[i], d[j]) }, nil
	case []float64:
		return func(i, j int) int { return idxNaNLast(d[i], d[j]) }, nil
	case []tensor.F16:
		f := tensor.HalfToFloat32(d)
		return func(i, j int) int { return idxNaNLast(f[i], f[j]) }, nil
	case []tensor.BF16:
		f := tensor.HalfToFloat32(d)
		return func(i, j int) int { return idxNaNLast(f[i], f[j]) }, nil
	case []int8:
		return idxOrdered(d), nil
	case []uint8:
		return idxOrdered(d), nil
	case []int16:
		return idxOrdered(d), nil
	case []uint16:
		return idxOrdered(d), nil
	case []int32:
		return idxOrdered(d), nil
	case []uint32:
		return idxOrdered(d), nil
	case []int64:
		return idxOrdered(d), nil
	case []uint64:
		return idxOrdered(d), nil
	case []string:
		return idxOrdered(d), nil
	case []bool:
		return func(i, j int) int {
			switch {
			case d[i] == d[j]:
				return 0
			case d[j]:
				return -1
			}
			return 1
		}, nil
	}
	return nil, inputErrorf("cannot order %v elements", x.DType)
}

func idxOrdered[T cmp.Ordered](d []T) func(i, j int) int {
	return func(i, j int) int { return cmp.Compare(d[i], d[j]) }
}

func idxNaNLast[T float32 | float64](a, b T) int {
	an, bn := a != a, b != b
	switch {
	case an || bn:
		return cmp.Compare(idxBoolInt(an), idxBoolInt(bn))
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func idxBoolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// idxGeometry views a non-empty shape as [outer, dim, inner] around
// axis a.
func idxGeometry(shape []int, a int) (outer, dim, inner int) {
	return idxProduct(shape[:a]), shape[a], idxProduct(shape[a+1:])
}

// buildTopK implements TopK: K as an attribute (opsets 1–9) or an input
// (10 on); largest and sorted from opset 11.
func buildTopK(n *node, at *TopKAttrs) (opFunc, error) {
	legacy := n.opset < 10
	if legacy {
		if err := n.checkArity(1, 1, 1, 2); err != nil {
			return nil, err
		}
		if at.K == nil {
			return nil, fmt.Errorf("TopK needs the k attribute before opset 10")
		}
	} else {
		if err := n.checkArity(2, 2, 1, 2); err != nil {
			return nil, err
		}
		if at.K != nil {
			return nil, fmt.Errorf("TopK takes K as an input from opset 10, not an attribute")
		}
	}
	axis, largest := at.Axis, at.Largest
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		var k int64
		if legacy {
			k = *at.K
		} else {
			kv, err := idxValues(in[1], "TopK K")
			if err != nil {
				return nil, err
			}
			if len(kv) != 1 {
				return nil, inputErrorf("TopK K must hold one value, has %d", len(kv))
			}
			k = kv[0]
		}
		if x.Rank() == 0 {
			return nil, inputErrorf("TopK needs rank >= 1")
		}
		a, err := normAxis(axis, x.Rank())
		if err != nil {
			return nil, err
		}
		if k < 0 || k > int64(x.Shape[a]) {
			return nil, inputErrorf("TopK K %d is out of range for an axis of %d", k, x.Shape[a])
		}
		values, indices, err := topK(x, a, int(k), largest)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{values, indices}, nil
	}, nil
}

// topK returns the k largest (or smallest) entries along axis a and their
// indices, sorted; equal entries keep their order (lower index first).
func topK(x *tensor.Tensor, a, k int, largest bool) (*tensor.Tensor, *tensor.Tensor, error) {
	shape := slices.Clone(x.Shape)
	shape[a] = k
	values, size, err := idxNew(x.DType, shape)
	if err != nil {
		return nil, nil, err
	}
	idx := make([]int64, size)
	indices := tensor.From(shape, idx)
	if size == 0 {
		return values, indices, nil
	}
	order, err := idxCompare(x)
	if err != nil {
		return nil, nil, err
	}
	if largest {
		asc := order
		order = func(i, j int) int { return asc(j, i) }
	}
	outer, dim, inner := idxGeometry(x.Shape, a)
	cand := make([]int, dim)
	offs := make([]int, size)
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			base := o*dim*inner + j
			for i := range cand {
				cand[i] = base + i*inner
			}
			slices.SortStableFunc(cand, order)
			for i, c := range cand[:k] {
				p := (o*k+i)*inner + j
				offs[p] = c
				idx[p] = int64((c - base) / inner)
			}
		}
	}
	moverOf(x.DType).runs(values.Data, 0, x.Data, 0, offs, 1)
	return values, indices, nil
}

func buildUnique(n *node, at *UniqueAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 4); err != nil {
		return nil, err
	}
	axis, sorted := at.Axis, at.Sorted
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return uniqueOf(in[0], axis, sorted)
	}, nil
}

// uniqueOf returns Unique's four outputs: the unique elements (or slices
// along axis) in ascending or first-occurrence order, the index of each
// one's first occurrence, each input entry's position among them, and
// their counts.
func uniqueOf(x *tensor.Tensor, axis *int64, sorted bool) ([]*tensor.Tensor, error) {
	elem, err := idxCompare(x)
	if err != nil {
		return nil, err
	}
	count, a := x.Len(), 0
	compare := elem
	if axis != nil {
		if a, err = normAxis(*axis, x.Rank()); err != nil {
			return nil, err
		}
		if count = x.Shape[a]; x.Len() == 0 && count > 0 {
			return uniqueOfEmptySlices(x, a)
		}
		outer, dim, inner := 0, 0, 0
		if count > 0 {
			outer, dim, inner = idxGeometry(x.Shape, a)
		}
		compare = func(i, j int) int { // lexicographic over the slices
			for o := 0; o < outer; o++ {
				bi, bj := (o*dim+i)*inner, (o*dim+j)*inner
				for k := 0; k < inner; k++ {
					if c := elem(bi+k, bj+k); c != 0 {
						return c
					}
				}
			}
			return 0
		}
	}
	order := make([]int, count)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, compare)
	var first []int64 // first occurrence of each unique entry
	var counts []int64
	inverse := make([]int64, count)
	for i, e := range order {
		if i == 0 || compare(order[i-1], e) != 0 {
			first = append(first, int64(e))
			counts = append(counts, 0)
		}
		inverse[e] = int64(len(first) - 1)
		counts[len(counts)-1]++
	}
	if !sorted { // renumber in order of first occurrence
		rank := make([]int, len(first))
		for i := range rank {
			rank[i] = i
		}
		slices.SortFunc(rank, func(i, j int) int { return cmp.Compare(first[i], first[j]) })
		newID := make([]int64, len(first))
		f2, c2 := make([]int64, len(first)), make([]int64, len(first))
		for to, from := range rank {
			newID[from] = int64(to)
			f2[to], c2[to] = first[from], counts[from]
		}
		first, counts = f2, c2
		for i, g := range inverse {
			inverse[i] = newID[g]
		}
	}
	if first == nil {
		first, counts = []int64{}, []int64{}
	}
	u := len(first)
	idx := tensor.From([]int{u}, first)
	var y *tensor.Tensor
	if axis == nil {
		offs := make([]int, u)
		for i, f := range first {
			offs[i] = int(f)
		}
		mv := moverOf(x.DType)
		y = &tensor.Tensor{DType: x.DType, Shape: []int{u}, Data: mv.alloc(u)}
		mv.runs(y.Data, 0, x.Data, 0, offs, 1)
	} else if y, err = gatherAxis(x, idx, int64(a)); err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y, tensor.From([]int{u}, first), tensor.From([]int{count}, inverse), tensor.From([]int{u}, counts)}, nil
}

// uniqueOfEmptySlices is Unique along axis a of an empty x with count >
// 0 slices: all are equal (and empty), so the first is the only one.
func uniqueOfEmptySlices(x *tensor.Tensor, a int) ([]*tensor.Tensor, error) {
	count := x.Shape[a]
	shape := slices.Clone(x.Shape)
	shape[a] = 1
	y, _, err := idxNew(x.DType, shape)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y, idxI64(0), tensor.From([]int{count}, make([]int64, count)), idxI64(int64(count))}, nil
}

func idxI64(v int64) *tensor.Tensor { return tensor.From([]int{1}, []int64{v}) }

func buildTrilu(n *node, at *TriluAttrs) (opFunc, error) {
	if err := n.checkArity(1, 2, 1, 1); err != nil {
		return nil, err
	}
	upper := at.Upper
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		var k int64
		if len(in) > 1 && in[1] != nil {
			kv, err := idxValues(in[1], "Trilu k")
			if err != nil {
				return nil, err
			}
			if len(kv) != 1 {
				return nil, inputErrorf("Trilu k must be a scalar")
			}
			k = kv[0]
		}
		if x.Rank() < 2 {
			return nil, inputErrorf("Trilu needs rank >= 2, got %s", tensor.ShapeString(x.Shape))
		}
		mv := moverOf(x.DType)
		y := &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: mv.clone(x.Data)}
		if x.Len() == 0 {
			return idxOut(y), nil
		}
		rows, cols := x.Shape[x.Rank()-2], x.Shape[x.Rank()-1]
		k = min(max(k, -int64(rows)-1), int64(cols)+1) // beyond the matrix: all or nothing
		zero := mv.alloc(1)
		clampCol := func(c int64) int { return int(min(max(c, 0), int64(cols))) }
		for m := 0; m < x.Len()/(rows*cols); m++ {
			for i := 0; i < rows; i++ {
				row := (m*rows + i) * cols
				// keep j-i >= k (upper) or j-i <= k (lower)
				lo, hi := 0, clampCol(int64(i)+k)
				if !upper {
					lo, hi = clampCol(int64(i)+k+1), cols
				}
				if hi > lo {
					mv.fill(y.Data, row+lo, hi-lo, zero)
				}
			}
		}
		return idxOut(y), nil
	}, nil
}

func buildEyeLike(n *node, at *EyeLikeAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	var dt tensor.DataType
	if at.DType != nil {
		var err error
		if dt, err = DataTypeFromONNX(onnxpb.DataType(*at.DType)); err != nil {
			return nil, err
		}
		if dt == tensor.String {
			return nil, fmt.Errorf("EyeLike cannot make a %v tensor", dt)
		}
	}
	k := at.K
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		out := dt
		if out == tensor.Invalid {
			out = x.DType
		}
		if x.Rank() != 2 {
			return nil, inputErrorf("EyeLike needs a 2-D input, got %s", tensor.ShapeString(x.Shape))
		}
		oneVal, err := castTo(tensor.Scalar(int64(1)), out)
		if err != nil {
			return nil, inputErrorf("EyeLike cannot make a %v tensor", out)
		}
		y, size, err := idxNew(out, slices.Clone(x.Shape))
		if err != nil || size == 0 {
			return y, err
		}
		mv := moverOf(out)
		rows, cols := x.Shape[0], x.Shape[1]
		k := min(max(k, -int64(rows)), int64(cols)) // beyond the matrix: no diagonal
		for i := 0; i < rows; i++ {
			if j := int64(i) + k; j >= 0 && j < int64(cols) {
				mv.fill(y.Data, i*cols+int(j), 1, oneVal.Data)
			}
		}
		return y, nil
	}), nil
}

// buildHardmax implements Hardmax: 1 at the first largest entry along
// axis (legacy: of the 2-D coercion at axis), 0 elsewhere.
func buildHardmax(n *node, axis int64, legacy bool) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		if !x.DType.IsFloat() {
			return nil, inputErrorf("Hardmax does not take %v", x.DType)
		}
		if x.Rank() == 0 {
			return nil, inputErrorf("Hardmax needs rank >= 1")
		}
		a, err := normAxis(axis, x.Rank())
		if err != nil {
			return nil, err
		}
		out := make([]float64, x.Len())
		if len(out) > 0 {
			v := x.Float64s()
			outer, dim, inner := idxGeometry(x.Shape, a)
			if legacy {
				dim, inner = dim*inner, 1
			}
			for o := 0; o < outer; o++ {
				for j := 0; j < inner; j++ {
					base := o*dim*inner + j
					best := base
					for i := 1; i < dim; i++ {
						if v[base+i*inner] > v[best] {
							best = base + i*inner
						}
					}
					out[best] = 1
				}
			}
		}
		return castTo(tensor.From(slices.Clone(x.Shape), out), x.DType)
	}), nil
}

// cumulativeBuilder builds CumSum or CumProd.
func cumulativeBuilder(op string) func(n *node, at *CumulativeAttrs) (opFunc, error) {
	return func(n *node, at *CumulativeAttrs) (opFunc, error) {
		if err := n.checkArity(2, 2, 1, 1); err != nil {
			return nil, err
		}
		exclusive, reverse, prod := at.Exclusive, at.Reverse, op == "CumProd"
		return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			x := in[0]
			av, err := idxValues(in[1], op+" axis")
			if err != nil {
				return nil, err
			}
			if len(av) != 1 {
				return nil, inputErrorf("%s axis must be a scalar", op)
			}
			if x.Rank() == 0 {
				return nil, inputErrorf("%s needs rank >= 1", op)
			}
			a, err := normAxis(av[0], x.Rank())
			if err != nil {
				return nil, err
			}
			y := &tensor.Tensor{DType: x.DType, Shape: x.Shape}
			g := [3]int{}
			if x.Len() > 0 {
				g[0], g[1], g[2] = idxGeometry(x.Shape, a)
			}
			switch d := x.Data.(type) {
			case []float32:
				y.Data = cumulativeAlong(d, g, exclusive, reverse, prod)
			case []float64:
				y.Data = cumulativeAlong(d, g, exclusive, reverse, prod)
			case []int8:
				y.Data = cumulativeAlong(d, g, exclusive, reverse, prod)
			case []uint8:
				y.Data = cumulativeAlong(d, g, exclusive, reverse, prod)
			case []int16:
				y.Data = cumulativeAlong(d, g, exclusive, reverse, prod)
			case []uint16:
				y.Data = cumulativeAlong(d, g, exclusive, reverse, prod)
			case []int32:
				y.Data = cumulativeAlong(d, g, exclusive, reverse, prod)
			case []uint32:
				y.Data = cumulativeAlong(d, g, exclusive, reverse, prod)
			case []int64:
				y.Data = cumulativeAlong(d, g, exclusive, reverse, prod)
			case []uint64:
				y.Data = cumulativeAlong(d, g, exclusive, reverse, prod)
			case []tensor.F16:
				y.Data = tensor.Float32ToHalf[tensor.F16](cumulativeAlong(tensor.HalfToFloat32(d), g, exclusive, reverse, prod))
			case []tensor.BF16:
				y.Data = tensor.Float32ToHalf[tensor.BF16](cumulativeAlong(tensor.HalfToFloat32(d), g, exclusive, reverse, prod))
			default:
				return nil, inputErrorf("%s does not take %v", op, x.DType)
			}
			return idxOut(y), nil
		}, nil
	}
}

// cumulativeAlong returns the running sums (or products) of x along the middle
// axis of geometry g = [outer, dim, inner].
func cumulativeAlong[T tensor.Numeric](x []T, g [3]int, exclusive, reverse, prod bool) []T {
	out := make([]T, len(x))
	outer, dim, inner := g[0], g[1], g[2]
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			base := o*dim*inner + j
			var acc T
			if prod {
				acc = 1
			}
			for s := 0; s < dim; s++ {
				i := s
				if reverse {
					i = dim - 1 - s
				}
				p := base + i*inner
				if exclusive {
					out[p] = acc
				}
				if prod {
					acc *= x[p]
				} else {
					acc += x[p]
				}
				if !exclusive {
					out[p] = acc
				}
			}
		}
	}
	return out
}

func buildReverseSequence(n *node, at *ReverseSequenceAttrs) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	ba, ta := at.BatchAxis, at.TimeAxis
	if ba < 0 || ba > 1 || ta < 0 || ta > 1 || ba == ta {
		return nil, fmt.Errorf("ReverseSequence batch_axis %d and time_axis %d must be 0 and 1", ba, ta)
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, lt := in[0], in[1]
		if x.Rank() < 2 {
			return nil, inputErrorf("ReverseSequence needs rank >= 2, got %s", tensor.ShapeString(x.Shape))
		}
		steps, batch := x.Shape[ta], x.Shape[ba]
		lens, err := idxValues(lt, "ReverseSequence sequence_lens")
		if err != nil {
			return nil, err
		}
		if len(lens) != batch || lt.Rank() != 1 {
			return nil, inputErrorf("ReverseSequence sequence_lens has shape %s for a batch of %d", tensor.ShapeString(lt.Shape), batch)
		}
		for _, l := range lens {
			if l < 0 || l > int64(steps) {
				return nil, inputErrorf("ReverseSequence length %d is out of range [0, %d]", l, steps)
			}
		}
		y, size, err := idxNew(x.DType, slices.Clone(x.Shape))
		if err != nil || size == 0 {
			return idxOut(y), err
		}
		inner := idxProduct(x.Shape[2:])
		d1 := x.Shape[1]
		offs := make([]int, x.Shape[0]*d1)
		for i0 := 0; i0 < x.Shape[0]; i0++ {
			for i1 := 0; i1 < d1; i1++ {
				t, b := i0, i1
				if ta == 1 {
					t, b = i1, i0
				}
				if l := int(lens[b]); t < l {
					t = l - 1 - t
				}
				src := t*d1 + b // time axis 0: [t, b]
				if ta == 1 {
					src = b*d1 + t
				}
				offs[i0*d1+i1] = src * inner
			}
		}
		moverOf(x.DType).runs(y.Data, 0, x.Data, 0, offs, inner)
		return idxOut(y), nil
	}, nil
}

func buildDet(n *node, _ *noAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		r := x.Rank()
		if !x.DType.IsFloat() {
			return nil, inputErrorf("Det does not take %v", x.DType)
		}
		if r < 2 || x.Shape[r-1] != x.Shape[r-2] {
			return nil, inputErrorf("Det needs square matrices [..., M, M], got %s", tensor.ShapeString(x.Shape))
		}
		shape := slices.Clone(x.Shape[:r-2])
		count, _ := tensor.NumElements(shape)
		out := make([]float64, count)
		m := x.Shape[r-1]
		if x.Len() > 0 {
			v := x.Float64s()
			for i := range out {
				out[i] = detLU(v[i*m*m:(i+1)*m*m], m)
			}
		} else {
			for i := range out {
				out[i] = 1 // of a 0×0 matrix
			}
		}
		return castTo(tensor.From(shape, out), x.DType)
	}), nil
}

// detLU returns det(a) of an m×m row-major matrix (modified in
// place) by LU decomposition with partial pivoting.
func detLU(a []float64, m int) float64 {
	det := 1.0
	for c := 0; c < m; c++ {
		p := c
		for r := c + 1; r < m; r++ {
			if math.Abs(a[r*m+c]) > math.Abs(a[p*m+c]) {
				p = r
			}
		}
		if a[p*m+c] == 0 {
			return 0
		}
		if p != c {
			for k := 0; k < m; k++ {
				a[p*m+k], a[c*m+k] = a[c*m+k], a[p*m+k]
			}
			det = -det
		}
		piv := a[c*m+c]
		det *= piv
		for r := c + 1; r < m; r++ {
			f := a[r*m+c] / piv
			if f == 0 {
				continue
			}
			for k := c + 1; k < m; k++ {
				a[r*m+k] -= f * a[c*m+k]
			}
		}
	}
	return det
}

func buildBitCast(n *node, at *BitCastAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	to, err := DataTypeFromONNX(onnxpb.DataType(at.To))
	if err != nil {
		return nil, err
	}
	if to == tensor.String {
		return nil, fmt.Errorf("BitCast cannot produce strings")
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		if x.DType == tensor.String || x.DType.Size() != to.Size() {
			return nil, inputErrorf("BitCast cannot reinterpret %v as %v: element sizes differ", x.DType, to)
		}
		raw := tensor.AppendLittleEndian(make([]byte, 0, x.Len()*to.Size()), x)
		return &tensor.Tensor{DType: to, Shape: x.Shape, Data: tensor.FromLittleEndian(to, raw, x.Len())}, nil
	}), nil
}

// einsumSpec is a parsed Einsum equation. Labels are letters, numbered
// A–Z 0–25 and a–z 26–51 (so their order is the equation's character
// order); -1 marks an ellipsis.
type einsumSpec struct {
	terms    [][]int // one per input
	out      []int   // explicit output, or nil
	explicit bool
}

const (
	einsumLetters  = 52
	einsumEllipsis = -1
)

// parseEinsum parses an equation for n inputs: "ij,jk->ik", "...ii->...i",
// "i,i" (implicit output: the labels used once, in order).
func parseEinsum(eq string, n int) (*einsumSpec, error) {
	eq = strings.Join(strings.Fields(eq), "")
	lhs, rhs, explicit := strings.Cut(eq, "->")
	parts := strings.Split(lhs, ",")
	if len(parts) != n {
		return nil, fmt.Errorf("Einsum equation %q has %d input terms for %d inputs", eq, len(parts), n)
	}
	sp := &einsumSpec{explicit: explicit}
	for _, p := range parts {
		t, err := parseEinsumTerm(p)
		if err != nil {
			return nil, fmt.Errorf("Einsum equation %q: %w", eq, err)
		}
		sp.terms = append(sp.terms, t)
	}
	if explicit {
		t, err := parseEinsumTerm(rhs)
		if err != nil {
			return nil, fmt.Errorf("Einsum equation %q: %w", eq, err)
		}
		seen := map[int]bool{}
		for _, l := range t {
			if seen[l] {
				return nil, fmt.Errorf("Einsum equation %q repeats an output label", eq)
			}
			seen[l] = true
			if l != einsumEllipsis && !slices.ContainsFunc(sp.terms, func(in []int) bool { return slices.Contains(in, l) }) {
				return nil, fmt.Errorf("Einsum equation %q has an output label no input has", eq)
			}
		}
		sp.out = t
	}
	return sp, nil
}

func parseEinsumTerm(t string) ([]int, error) {
	var labels []int
	ellipsis := false
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c >= 'A' && c <= 'Z':
			labels = append(labels, int(c-'A'))
		case c >= 'a' && c <= 'z':
			labels = append(labels, 26+int(c-'a'))
		case strings.HasPrefix(t[i:], "...") && !ellipsis:
			labels = append(labels, einsumEllipsis)
			ellipsis = true
			i += 2
		default:
			return nil, fmt.Errorf("term %q is malformed", t)
		}
	}
	return labels, nil
}

func buildEinsum(n *node, at *EinsumAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1<<16, 1, 1); err != nil {
		return nil, err
	}
	sp, err := parseEinsum(at.Equation, len(n.pb.Inputs))
	if err != nil {
		return nil, err
	}
	exec := n.opts.Exec
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		y, err := einsum(sp, in, func(a, b *tensor.Tensor) (*tensor.Tensor, error) { return matmul(exec, a, b) })
		if err != nil {
			return nil, err
		}
		return idxOut(y), nil
	}, nil
}

// einsumOperand is an input with one label per dimension.
type einsumOperand struct {
	t      *tensor.Tensor
	labels []int
}

// einsumBind resolves the spec against the inputs' ranks: each
// operand's labels (ellipsis dimensions get labels 52, 53, ...,
// right-aligned across operands), the output's labels, every label's
// size, and whether some operand broadcasts a label of size 1.
func einsumBind(sp *einsumSpec, in []*tensor.Tensor) (ops []einsumOperand, out []int, size map[int]int, broadcast bool, err error) {
	ell := 0 // ellipsis rank: the largest over the operands
	for i, t := range sp.terms {
		letters := len(t)
		if slices.Contains(t, einsumEllipsis) {
			letters--
			ell = max(ell, in[i].Rank()-letters)
		}
		if in[i].Rank() < letters || !slices.Contains(t, einsumEllipsis) && in[i].Rank() != letters {
			return nil, nil, nil, false, inputErrorf("Einsum input %d has rank %d, its term has %d labels", i, in[i].Rank(), letters)
		}
	}
	expand := func(t []int, rank int) []int {
		var labels []int
		for _, l := range t {
			if l != einsumEllipsis {
				labels = append(labels, l)
				continue
			}
			e := rank - (len(t) - 1)
			for j := ell - e; j < ell; j++ {
				labels = append(labels, einsumLetters+j)
			}
		}
		return labels
	}
	size = map[int]int{}
	uses := map[int]int{}
	for i, t := range sp.terms {
		labels := expand(t, in[i].Rank())
		for d, l := range labels {
			dim := in[i].Shape[d]
			s, ok := size[l]
			switch {
			case !ok || s == 1 && dim != 1:
				broadcast = broadcast || ok
				size[l] = dim
			case dim != s && dim == 1:
				broadcast = true
			case dim != s:
				return nil, nil, nil, false, inputErrorf("Einsum label sizes differ: %d and %d", s, dim)
			}
			uses[l]++
		}
		ops = append(ops, einsumOperand{in[i], labels})
	}
	if sp.explicit {
		out = expand(sp.out, ell+len(sp.out)-1)
	} else {
		for j := 0; j < ell; j++ {
			out = append(out, einsumLetters+j)
		}
		for l := 0; l < einsumLetters; l++ {
			if uses[l] == 1 {
				out = append(out, l)
			}
		}
	}
	return ops, out, size, broadcast, nil
}

// einsum evaluates the equation. Products of two operands run as batched
// matrix products (mm, the MatMul path on the dispatch kernels): each
// operand's repeated labels become its diagonal, labels no other operand
// or the output has are summed away, and the operands are folded left to
// right, each pair transposed to [batch, rows, contracted] ×
// [batch, contracted, cols]. Operands that broadcast a label of size 1
// take the general path, a strided walk over every label.
func einsum(sp *einsumSpec, in []*tensor.Tensor, mm func(a, b *tensor.Tensor) (*tensor.Tensor, error)) (*tensor.Tensor, error) {
	for i, t := range in {
		if t == nil || t.DType == tensor.Bool || t.DType == tensor.String {
			return nil, inputErrorf("Einsum input %d must be numeric", i)
		}
		if t.DType != in[0].DType {
			return nil, inputErrorf("Einsum inputs have types %v and %v", in[0].DType, t.DType)
		}
	}
	ops, out, size, broadcast, err := einsumBind(sp, in)
	if err != nil {
		return nil, err
	}
	dt := in[0].DType
	work := einsumWorkType(dt)
	for i := range ops {
		if ops[i].t, err = castTo(ops[i].t, work); err != nil {
			return nil, err
		}
	}
	outShape := make([]int, len(out))
	for i, l := range out {
		outShape[i] = size[l]
	}
	if _, err := tensor.NumElements(outShape); err != nil {
		return nil, inputErrorf("Einsum output: %v", err)
	}
	var y *tensor.Tensor
	if broadcast {
		y, err = einsumGeneral(ops, out, size)
	} else {
		y, err = einsumLowered(ops, out, mm)
	}
	if err != nil {
		return nil, err
	}
	return castTo(y, dt)
}

// einsumWorkType is the type Einsum computes dt in: FP16 and BF16 in
// float32, narrow integers in int64 (their wrap-around is the same).
func einsumWorkType(dt tensor.DataType) tensor.DataType {
	switch dt {
	case tensor.Float16, tensor.BFloat16:
		return tensor.Float32
	case tensor.Int8, tensor.Int16, tensor.Uint8, tensor.Uint16:
		return tensor.Int64
	}
	return dt
}

func einsumLowered(ops []einsumOperand, out []int, mm func(a, b *tensor.Tensor) (*tensor.Tensor, error)) (*tensor.Tensor, error) {
	for i := range ops {
		ops[i] = einsumDiagonal(ops[i])
	}
	// needed[i] = labels of the output and of operands after i
	needed := make([]map[int]bool, len(ops))
	later := map[int]bool{}
	for _, l := range out {
		later[l] = true
	}
	for i := len(ops) - 1; i >= 0; i-- {
		needed[i] = maps.Clone(later)
		for _, l := range ops[i].labels {
			later[l] = true
		}
	}
	var err error
	acc := ops[0]
	for i := 1; i < len(ops); i++ {
		b := ops[i]
		// labels only this operand (or only acc) has and nobody needs
		keepA := func(l int) bool { return needed[i][l] || slices.Contains(b.labels, l) }
		keepB := func(l int) bool { return needed[i][l] || slices.Contains(acc.labels, l) }
		if acc, err = einsumSumOut(acc, keepA); err != nil {
			return nil, err
		}
		if b, err = einsumSumOut(b, keepB); err != nil {
			return nil, err
		}
		if acc, err = einsumContract(acc, b, needed[i], mm); err != nil {
			return nil, err
		}
	}
	if acc, err = einsumSumOut(acc, func(l int) bool { return slices.Contains(out, l) }); err != nil {
		return nil, err
	}
	return einsumPermute(acc, out), nil
}

// einsumDiagonal returns op with each repeated label reduced to one
// dimension (its diagonal), as a strided view.
func einsumDiagonal(op einsumOperand) einsumOperand {
	var labels, shape, strides []int
	rows := tensor.Strides(op.t.Shape)
	for d, l := range op.labels {
		if k := slices.Index(labels, l); k >= 0 {
			strides[k] += rows[d]
			continue
		}
		labels = append(labels, l)
		shape = append(shape, op.t.Shape[d])
		strides = append(strides, rows[d])
	}
	if len(labels) == len(op.labels) {
		return op
	}
	t, err := stridedView(op.t, shape, strides, 0)
	if err != nil {
		panic(err) // no more elements than op.t
	}
	return einsumOperand{t, labels}
}

// einsumPermute returns op with its dimensions in the order of labels (a
// permutation of op's).
func einsumPermute(op einsumOperand, labels []int) *tensor.Tensor {
	p := make([]int, len(labels))
	identity := true
	for i, l := range labels {
		p[i] = slices.Index(op.labels, l)
		identity = identity && p[i] == i
	}
	if identity {
		return op.t
	}
	return transpose(op.t, p)
}

// einsumSumOut sums op over the labels keep refuses.
func einsumSumOut(op einsumOperand, keep func(l int) bool) (einsumOperand, error) {
	var kept, gone []int
	for _, l := range op.labels {
		if keep(l) {
			kept = append(kept, l)
		} else {
			gone = append(gone, l)
		}
	}
	if len(gone) == 0 {
		return op, nil
	}
	t := einsumPermute(op, slices.Concat(kept, gone))
	shape := t.Shape[:len(kept)]
	rows, _ := tensor.NumElements(shape)
	cols, _ := tensor.NumElements(t.Shape[len(kept):])
	var data any
	switch d := t.Data.(type) {
	case []float32:
		data = einsumRowSums[float32, float64](d, rows, cols)
	case []float64:
		data = einsumRowSums[float64, float64](d, rows, cols)
	case []int32:
		data = einsumRowSums[int32, int32](d, rows, cols)
	case []int64:
		data = einsumRowSums[int64, int64](d, rows, cols)
	case []uint32:
		data = einsumRowSums[uint32, uint32](d, rows, cols)
	case []uint64:
		data = einsumRowSums[uint64, uint64](d, rows, cols)
	default:
		return op, inputErrorf("Einsum does not take %v", t.DType)
	}
	return einsumOperand{&tensor.Tensor{DType: t.DType, Shape: slices.Clone(shape), Data: data}, kept}, nil
}

// einsumRowSums sums each row of a rows×cols matrix, accumulating in A.
func einsumRowSums[T, A tensor.Numeric](d []T, rows, cols int) []T {
	out := make([]T, rows)
	for r := range out {
		var s A
		for _, v := range d[r*cols : (r+1)*cols] {
			s += A(v)
		}
		out[r] = T(s)
	}
	return out
}

// einsumContract multiplies two operands, summing the labels they share
// that keep does not hold: a batched matrix product over the shared
// labels keep holds.
func einsumContract(a, b einsumOperand, keep map[int]bool, mm func(a, b *tensor.Tensor) (*tensor.Tensor, error)) (einsumOperand, error) {
	var batch, con, left, right []int
	for _, l := range a.labels {
		switch {
		case !slices.Contains(b.labels, l):
			left = append(left, l)
		case keep[l]:
			batch = append(batch, l)
		default:
			con = append(con, l)
		}
	}
	for _, l := range b.labels {
		if !slices.Contains(a.labels, l) {
			right = append(right, l)
		}
	}
	dims := func(op einsumOperand, labels []int) (shape []int, n int) {
		n = 1
		for _, l := range labels {
			d := op.t.Shape[slices.Index(op.labels, l)]
			shape = append(shape, d)
			n *= d
		}
		return shape, n
	}
	bShape, nb := dims(a, batch)
	lShape, nl := dims(a, left)
	_, nc := dims(a, con)
	rShape, nr := dims(b, right)
	if _, err := tensor.NumElements([]int{nb, nl, nr}); err != nil {
		return a, inputErrorf("Einsum intermediate product: %v", err)
	}
	at, err := einsumPermute(a, slices.Concat(batch, left, con)).Reshaped([]int{nb, nl, nc})
	if err != nil {
		return a, err
	}
	bt, err := einsumPermute(b, slices.Concat(batch, con, right)).Reshaped([]int{nb, nc, nr})
	if err != nil {
		return a, err
	}
	var y *tensor.Tensor
	if nc == 0 { // an empty sum: zeros
		y, _, err = idxNew(at.DType, []int{nb, nl, nr})
	} else {
		y, err = mm(at, bt)
	}
	if err != nil {
		return a, err
	}
	y, err = y.Reshaped(slices.Concat(bShape, lShape, rShape))
	if err != nil {
		return a, err
	}
	return einsumOperand{y, slices.Concat(batch, left, right)}, nil
}

// einsumGeneral evaluates the equation by walking every label's range
// once: each operand reads with stride 0 along labels it lacks or
// broadcasts, the output along the labels it sums. It computes in
// float64 (floating-point inputs) or int64.
func einsumGeneral(ops []einsumOperand, out []int, size map[int]int) (*tensor.Tensor, error) {
	labels := slices.Clone(out)
	for l := range size {
		if !slices.Contains(labels, l) {
			labels = append(labels, l)
		}
	}
	slices.Sort(labels[len(out):])
	space := make([]int, len(labels))
	for i, l := range labels {
		space[i] = size[l]
	}
	if _, err := tensor.NumElements(space); err != nil {
		return nil, inputErrorf("Einsum iterates over too many label combinations: %v", err)
	}
	strides := make([][]int, len(ops)+1)
	for k, op := range ops {
		rows := tensor.Strides(op.t.Shape)
		st := make([]int, len(labels))
		for d, l := range op.labels {
			if op.t.Shape[d] != 1 {
				st[slices.Index(labels, l)] += rows[d]
			}
		}
		strides[k] = st
	}
	outShape := space[:len(out)]
	outRows := tensor.Strides(outShape)
	strides[len(ops)] = append(slices.Clone(outRows), make([]int, len(labels)-len(out))...)
	n, _ := tensor.NumElements(outShape)
	if ops[0].t.DType.IsFloat() {
		vals := make([][]float64, len(ops))
		for k, op := range ops {
			vals[k] = op.t.Float64s()
		}
		acc := make([]float64, n)
		it := tensor.NewIter(space, strides...)
		for it.Next() {
			p := 1.0
			for k := range vals {
				p *= vals[k][it.Off(k)]
			}
			acc[it.Off(len(ops))] += p
		}
		return tensor.From(outShape, acc), nil
	}
	vals := make([][]int64, len(ops))
	for k, op := range ops {
		t, err := castTo(op.t, tensor.Int64)
		if err != nil {
			return nil, err
		}
		vals[k] = t.Data.([]int64)
	}
	acc := make([]int64, n)
	it := tensor.NewIter(space, strides...)
	for it.Next() {
		p := int64(1)
		for k := range vals {
			p *= vals[k][it.Off(k)]
		}
		acc[it.Off(len(ops))] += p
	}
	return tensor.From(outShape, acc), nil
}
