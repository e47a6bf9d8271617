//go:build autodiff

package autodiff

import (
	"fmt"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/ops/index"
	"github.com/quantserve/quantserve/ops/logic"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

// Gradients of the indexing and shape operators: each routes dy back to
// the elements the forward pass read, adding where it read one twice.

func init() {
	bindGrad(gatherBackward, index.Gather)
	bindGrad(sliceBackward, tensorops.Slice)
	bindGrad(func(_ model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, _ []bool) ([][]float32, error) {
		dx := make([][]float32, len(in))
		dx[0] = reduceTo(dy, y.Shape, in[0].Shape)
		return dx, nil
	}, tensorops.Expand)
	bindGrad(tileBackward, tensorops.Tile)
	bindMultiGrad(splitBackward, tensorops.Split)
	bindGrad(elemWhereBackward, logic.Where)
}

// gatherBackward: dData[index run] += dY[run]; the indices take none.
func gatherBackward(st model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
	dx := make([][]float32, len(in))
	if !need[0] {
		return dx, nil
	}
	x, ind := in[0], in[1]
	a, err := axisOf(st.Params.(*index.GatherAttrs).Axis, x.Rank())
	if err != nil {
		return nil, err
	}
	idx, err := ind.Int64s()
	if err != nil {
		return nil, fmt.Errorf("autodiff: Gather indices: %w", err)
	}
	outer, dim, inner := geometry(x.Shape, a, false)
	g := make([]float32, x.Len())
	for o := 0; o < outer; o++ {
		for j, i := range idx {
			if i < 0 {
				i += int64(dim)
			}
			src := g[(o*dim+int(i))*inner:][:inner]
			for k, v := range dy[(o*len(idx)+j)*inner:][:inner] {
				src[k] += v
			}
		}
	}
	dx[0] = g
	return dx, nil
}

// sliceBackward writes dY into zeros through the view the slice read.
func sliceBackward(st model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, _ []bool) ([][]float32, error) {
	x := in[0]
	var lists [4][]int64
	if at, ok := st.Params.(*tensorops.SliceAttrs); ok { // before opset 10
		lists = [4][]int64{at.Starts, at.Ends, at.Axes, nil}
	} else {
		for i := range lists {
			if i+1 < len(in) && in[i+1] != nil {
				v, err := in[i+1].Int64s()
				if err != nil {
					return nil, fmt.Errorf("autodiff: Slice bounds: %w", err)
				}
				lists[i] = v
			}
		}
	}
	shape, strides, base, err := tensorops.SliceView(x.Shape, lists[0], lists[1], lists[2], lists[3])
	if err != nil {
		return nil, err
	}
	g := make([]float32, x.Len())
	it := tensor.NewIter(shape, strides).Start(0, base)
	for o := 0; it.Next(); o++ {
		g[it.Off(0)] = dy[o]
	}
	dx := make([][]float32, len(in))
	dx[0] = g
	return dx, nil
}

// tileBackward sums dY over the repeats: Y is X read through a view of
// shape [r0, d0, r1, d1, ...] with stride 0 along the repeats.
func tileBackward(_ model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, _ []bool) ([][]float32, error) {
	x := in[0]
	r := x.Rank()
	rows := tensor.Strides(x.Shape)
	view, strides := make([]int, 2*r), make([]int, 2*r)
	for i, d := range x.Shape {
		if d > 0 {
			view[2*i] = y.Shape[i] / d
		}
		view[2*i+1], strides[2*i+1] = d, rows[i]
	}
	g := make([]float64, x.Len())
	it := tensor.NewIter(view, strides)
	for o := 0; it.Next(); o++ {
		g[it.Off(0)] += float64(dy[o])
	}
	dx := make([][]float32, len(in))
	dx[0] = f32(g)
	return dx, nil
}

// splitBackward lays the outputs' gradients side by side along the axis
// (zeros for an output no gradient reaches).
func splitBackward(st model.Step, in []*tensor.Tensor, ys []*tensor.Tensor, dys [][]float32, _ []bool) ([][]float32, error) {
	x := in[0]
	a, err := axisOf(st.Params.(*tensorops.SplitAttrs).Axis, x.Rank())
	if err != nil {
		return nil, err
	}
	outer, dim, inner := geometry(x.Shape, a, false)
	g := make([]float32, x.Len())
	off := 0
	for j, y := range ys {
		if y == nil {
			return nil, fmt.Errorf("autodiff: Split output %d has no value in the trace", j)
		}
		part := y.Shape[a]
		if dys[j] != nil {
			for o := 0; o < outer; o++ {
				copy(g[(o*dim+off)*inner:][:part*inner], dys[j][o*part*inner:][:part*inner])
			}
		}
		off += part
	}
	dx := make([][]float32, len(in))
	dx[0] = g
	return dx, nil
}
