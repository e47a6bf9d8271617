package spatial

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "GridSample", Since: 16, Until: 19, Fold: true}, buildGridSample16)
	ops.Register(ops.Descriptor{Type: "GridSample", Since: 20, Fold: true}, buildGridSample)
}

// GridSample16Attrs are GridSample's attributes at opsets 16–19 (2-D
// images; modes bilinear, nearest, bicubic).
type GridSample16Attrs struct {
	AlignCorners bool   `onnx:"align_corners"`
	Mode         string `onnx:"mode" default:"bilinear"`
	PaddingMode  string `onnx:"padding_mode" default:"zeros"`
}

// GridSampleAttrs are GridSample's attributes from opset 20 on (any
// number of spatial dimensions; modes linear, nearest, cubic).
type GridSampleAttrs struct {
	AlignCorners bool   `onnx:"align_corners"`
	Mode         string `onnx:"mode" default:"linear"`
	PaddingMode  string `onnx:"padding_mode" default:"zeros"`
}

const (
	gridNearest = iota
	gridLinear
	gridCubic
)

// gridSample is a compiled GridSample: its interpolation, padding mode
// ("zeros", "border" or "reflection"), whether the corners of the grid
// are the centres of the corner pixels, and the number of spatial
// dimensions its opset allows (0: any).
type gridSample struct {
	mode    int
	padding string
	align   bool
	spatial int
}

func buildGridSample16(n *ops.Node, at *GridSample16Attrs) (ops.Operator, error) {
	modes := map[string]int{"bilinear": gridLinear, "nearest": gridNearest, "bicubic": gridCubic}
	mode, ok := modes[at.Mode]
	if !ok {
		return nil, ops.Unsupportedf("GridSample mode %q at opset %d", at.Mode, n.Opset)
	}
	return newGridSample(n, mode, at.PaddingMode, at.AlignCorners, 2)
}

func buildGridSample(n *ops.Node, at *GridSampleAttrs) (ops.Operator, error) {
	modes := map[string]int{"linear": gridLinear, "nearest": gridNearest, "cubic": gridCubic}
	mode, ok := modes[at.Mode]
	if !ok {
		return nil, ops.Unsupportedf("GridSample mode %q at opset %d", at.Mode, n.Opset)
	}
	return newGridSample(n, mode, at.PaddingMode, at.AlignCorners, 0)
}

func newGridSample(n *ops.Node, mode int, padding string, align bool, spatial int) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	switch padding {
	case "zeros", "border", "reflection":
	default:
		return nil, ops.Unsupportedf("GridSample padding_mode %q", padding)
	}
	return &gridSample{mode: mode, padding: padding, align: align, spatial: spatial}, nil
}

func (op *gridSample) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, grid := in[0], in[1]
	r := x.Rank() - 2
	if r < 1 || op.spatial != 0 && r != op.spatial {
		return nil, ops.InputErrorf("GridSample takes an (N, C, spatial...) input with %s spatial dimensions, got %s", gridSpatialName(op.spatial), tensor.ShapeString(x.Shape))
	}
	if !grid.DType.IsFloat() {
		return nil, ops.InputErrorf("GridSample grid must be floating point, got %v", grid.DType)
	}
	if grid.Rank() != r+2 || grid.Shape[0] != x.Shape[0] || grid.Shape[r+1] != r {
		return nil, ops.InputErrorf("GridSample grid %s does not fit input %s: want (N, out..., %d)", tensor.ShapeString(grid.Shape), tensor.ShapeString(x.Shape), r)
	}
	if x.DType == tensor.String || x.DType == tensor.Bool {
		return nil, ops.InputErrorf("GridSample does not take %v", x.DType)
	}
	out := append([]int{x.Shape[0], x.Shape[1]}, grid.Shape[1:r+1]...)
	total, err := tensor.NumElements(out)
	if err != nil {
		return nil, ops.InputErrorf("%v", err)
	}
	res := make([]float64, total)
	if total > 0 {
		for _, d := range x.Shape[2:] {
			if d == 0 {
				return nil, ops.InputErrorf("GridSample cannot sample an empty image %s", tensor.ShapeString(x.Shape))
			}
		}
		if err := op.sample(c, x.Float64s(), x.Shape, grid.Float64s(), out, res); err != nil {
			return nil, err
		}
	}
	y, err := tensorops.CastToContext(c, &tensor.Tensor{DType: tensor.Float64, Shape: out, Data: res}, x.DType)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}

func gridSpatialName(spatial int) string {
	if spatial == 0 {
		return "one or more"
	}
	return fmt.Sprint(spatial)
}

// gridReflect reflects x off the borders lo and hi until it lies between
// them.
func gridReflect(x, lo, hi float64) float64 {
	rng := hi - lo
	if rng <= 0 {
		return lo
	}
	switch {
	case x < lo:
		dx := lo - x
		k := math.Floor(dx / rng)
		rem := dx - k*rng
		if int64(k)%2 == 0 {
			return lo + rem
		}
		return hi - rem
	case x > hi:
		dx := x - hi
		k := math.Floor(dx / rng)
		rem := dx - k*rng
		if int64(k)%2 == 0 {
			return hi - rem
		}
		return lo + rem
	}
	return x
}

// gridCubicCoeffs are Keys' cubic convolution weights (a = -0.75) of the
// four points around a sample at fraction t past the second.
func gridCubicCoeffs(t float64, c *[4]float64) {
	const a = -0.75
	x := t + 1
	c[0] = ((a*x-5*a)*x+8*a)*x - 4*a
	c[1] = ((a+2)*t-(a+3))*t*t + 1
	x = 1 - t
	c[2] = ((a+2)*x-(a+3))*x*x + 1
	x = 2 - t
	c[3] = ((a*x-5*a)*x+8*a)*x - 4*a
}

// sample fills res (N, C, out spatial...) by sampling x at grid. It stops
// with the request's error once the request ends.
func (op *gridSample) sample(oc *ops.Context, x []float64, xShape []int, grid []float64, out []int, res []float64) error {
	mode, padding, align := op.mode, op.padding, op.align
	r := len(xShape) - 2
	nb, c := xShape[0], xShape[1]
	dims := xShape[2:]
	inPlane := 1
	for _, d := range dims {
		inPlane *= d
	}
	outPlane := 1
	for _, d := range out[2:] {
		outPlane *= d
	}
	st := tensor.Strides(dims)
	lo, hi := make([]float64, r), make([]float64, r)
	for i, d := range dims {
		if align {
			lo[i], hi[i] = 0, float64(d-1)
		} else {
			lo[i], hi[i] = -0.5, float64(d)-0.5
		}
	}
	ntaps := map[int]int{gridNearest: 1, gridLinear: 2, gridCubic: 4}[mode]
	cost := 1 // the taps of one output element, up to ops.TickEvery
	for range r {
		cost = min(cost*ntaps, ops.TickEvery)
	}
	// per spatial dimension: tap offsets (-1: zero) and weights
	tapOff := make([][]int, r)
	tapW := make([][]float64, r)
	for i := range tapOff {
		tapOff[i] = make([]int, ntaps)
		tapW[i] = make([]float64, ntaps)
	}
	index := func(i, d int) int { // the element index of integer position i, -1 for zero
		switch padding {
		case "zeros":
			if i < 0 || i >= dims[d] {
				return -1
			}
		case "border":
			i = min(max(i, 0), dims[d]-1)
		default:
			i = int(gridReflect(float64(i), lo[d], hi[d]))
			i = min(max(i, 0), dims[d]-1)
		}
		return i * st[d]
	}
	pos := make([]int, r)
	var cc [4]float64
	for b := 0; b < nb; b++ {
		for p := 0; p < outPlane; p++ {
			g := grid[(b*outPlane+p)*r:]
			for d := 0; d < r; d++ {
				v := g[r-1-d] // the grid lists the innermost dimension first
				var xd float64
				if align {
					xd = (v + 1) / 2 * float64(dims[d]-1)
				} else {
					xd = ((v+1)*float64(dims[d]) - 1) / 2
				}
				xd = float64(float32(xd))
				if mode == gridNearest {
					xd = math.RoundToEven(xd) // halves to even, as the node tests expect in 2-D and 3-D
				}
				if xd < lo[d] || xd > hi[d] {
					switch padding {
					case "border":
						xd = min(max(xd, 0), float64(dims[d]-1))
					case "reflection":
						xd = gridReflect(xd, lo[d], hi[d])
					}
				}
				switch mode {
				case gridNearest:
					tapOff[d][0], tapW[d][0] = index(int(xd), d), 1
				case gridLinear:
					f := math.Floor(xd)
					t := xd - f
					i0 := int(f)
					tapOff[d][0], tapW[d][0] = index(i0, d), 1-t
					tapOff[d][1], tapW[d][1] = index(i0+1, d), t
				case gridCubic:
					f := math.Floor(xd)
					i0 := int(f)
					gridCubicCoeffs(xd-f, &cc)
					for k := 0; k < 4; k++ {
						tapOff[d][k], tapW[d][k] = index(i0-1+k, d), cc[k]
					}
				}
			}
			for ch := 0; ch < c; ch++ {
				if err := oc.Tick(cost); err != nil {
					return err
				}
				plane := x[(b*c+ch)*inPlane : (b*c+ch+1)*inPlane]
				// sum over the tensor product of the taps
				clear(pos)
				var sum float64
				for {
					off, w := 0, 1.0
					for d := 0; d < r; d++ {
						o := tapOff[d][pos[d]]
						if o < 0 {
							w = 0
							break
						}
						off += o
						w *= tapW[d][pos[d]]
					}
					if w != 0 {
						sum += w * plane[off]
					}
					d := r - 1
					for ; d >= 0; d-- {
						pos[d]++
						if pos[d] < ntaps {
							break
						}
						pos[d] = 0
					}
					if d < 0 {
						break
					}
				}
				res[(b*c+ch)*outPlane+p] = sum
			}
		}
	}
	return nil
}
