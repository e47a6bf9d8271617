//go:build autodiff

package autodiff

import (
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/ops/spatial"
	"github.com/quantserve/quantserve/tensor"
)

// Gradients of the geometry operators. Resize (every mode) and Pad (every
// mode) are linear in their input: each output element is a weighted sum
// of input elements (or a constant), by a map that depends only on the
// shapes and the other inputs. The backward pass applies the transpose of
// the very map the forward pass used (spatial.ResizePlanOf, spatial.PadMap).

func init() {
	bindGrad(resizeBackward, spatial.Resize, spatial.Upsample)
	bindGrad(padBackward, spatial.Pad)
}

func resizeBackward(st model.Step, in []*tensor.Tensor, _ *tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
	dx := make([][]float32, len(in))
	if !need[0] {
		return dx, nil // roi, scales and sizes have no gradient
	}
	if _, err := floats(in[0], "the input"); err != nil {
		return nil, err
	}
	p, err := spatial.ResizePlanOf(st.Op, st.Params, st.Opset, in)
	if err != nil {
		return nil, err
	}
	g := make([]float64, len(dy))
	for i, v := range dy {
		g[i] = float64(v)
	}
	// extrapolated outputs do not depend on the input
	outside := make([][]bool, len(p.Shape))
	for _, ax := range p.Axes {
		outside[ax.Axis] = ax.Outside
	}
	it := tensor.NewIter(p.Shape)
	for i := 0; it.Next(); i++ {
		for d, o := range it.Index() {
			if outside[d] != nil && outside[d][o] {
				g[i] = 0
				break
			}
		}
	}
	// the axes resample independently: undo them one at a time
	cur := append([]int(nil), p.Shape...)
	for k := len(p.Axes) - 1; k >= 0; k-- {
		ax := &p.Axes[k]
		outer, inner := 1, 1
		for _, d := range cur[:ax.Axis] {
			outer *= d
		}
		for _, d := range cur[ax.Axis+1:] {
			inner *= d
		}
		next := make([]float64, outer*ax.In*inner)
		for o := 0; o < outer; o++ {
			src := g[o*ax.Out*inner : (o+1)*ax.Out*inner]
			dst := next[o*ax.In*inner : (o+1)*ax.In*inner]
			for j := 0; j < ax.Out; j++ {
				row := src[j*inner : (j+1)*inner]
				for t := j * ax.Taps; t < (j+1)*ax.Taps; t++ {
					w := 1.0
					if ax.Weight != nil {
						w = ax.Weight[t]
					}
					if w == 0 {
						continue
					}
					d := dst[ax.Index[t]*inner : (ax.Index[t]+1)*inner]
					for i, v := range row {
						d[i] += w * v
					}
				}
			}
		}
		g = next
		cur[ax.Axis] = ax.In
	}
	dx[0] = f32(g)
	return dx, nil
}

func padBackward(st model.Step, in []*tensor.Tensor, _ *tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
	dx := make([][]float32, len(in))
	if !need[0] {
		return dx, nil // pads, the constant and axes have no gradient
	}
	x := in[0]
	if _, err := floats(x, "the input"); err != nil {
		return nil, err
	}
	out, src, err := spatial.PadMap(st.Op, st.Params, st.Opset, in)
	if err != nil {
		return nil, err
	}
	g := make([]float64, x.Len())
	st0 := tensor.Strides(x.Shape)
	if len(dy) > 0 {
		// every output element that reads the input adds its gradient there
		it := tensor.NewIter(out)
		for i := 0; it.Next(); i++ {
			off := 0
			for d, o := range it.Index() {
				s := src[d][o]
				if s < 0 {
					off = -1
					break
				}
				off += s * st0[d]
			}
			if off >= 0 {
				g[off] += float64(dy[i])
			}
		}
	}
	dx[0] = f32(g)
	return dx, nil
}
