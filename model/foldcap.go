package model

import (
	"math"

	"github.com/quantserve/quantserve/tensor"
)

// DefaultMaxFoldBytes is the largest output, in bytes, a node folded at
// load may produce when Options.MaxFoldBytes is 0.
const DefaultMaxFoldBytes = 256 << 20

// foldCap returns the cap on a folded node's output bytes.
func (o *Options) foldCap() int64 {
	if o.MaxFoldBytes > 0 {
		return o.MaxFoldBytes
	}
	return DefaultMaxFoldBytes
}

// foldTooLarge reports whether folding n would produce more than limit
// bytes, for the operators whose output size follows from their input
// values (ConstantOfShape, Expand, Tile, Range, Pad, Resize, Upsample,
// OneHot), before anything is allocated. Other operators are measured
// once folded (outputBytes).
func foldTooLarge(n *node, limit int64) bool {
	in := n.consts
	if normDomain(n.pb.Domain) != "" || len(in) == 0 || in[0] == nil {
		return false
	}
	elems := -1.0
	size := 0
	switch n.pb.OpType {
	case "ConstantOfShape":
		size = 4
		if a := n.attrs["value"]; a != nil && a.T != nil {
			if dt, err := DataTypeFromONNX(a.T.DataType); err == nil {
				size = dt.Size()
			}
		}
		elems = product(in[0].Float64s())
	case "Expand":
		if len(in) > 1 && in[1] != nil {
			elems = broadcastElems(in[0].Shape, in[1].Float64s())
		}
	case "Tile":
		if len(in) > 1 && in[1] != nil {
			elems = float64(in[0].Len()) * product(in[1].Float64s())
		}
	case "Range":
		if len(in) == 3 && in[1] != nil && in[2] != nil && in[0].Len() == 1 && in[1].Len() == 1 && in[2].Len() == 1 {
			start, limit, delta := in[0].Float64s()[0], in[1].Float64s()[0], in[2].Float64s()[0]
			if delta != 0 {
				elems = math.Ceil((limit - start) / delta)
			}
		}
	case "Pad":
		if len(in) > 1 && in[1] != nil && len(in) < 4 {
			pads := in[1].Float64s()
			if r := len(in[0].Shape); len(pads) == 2*r {
				elems = 1
				for i, d := range in[0].Shape {
					elems *= math.Max(float64(d)+pads[i]+pads[i+r], 0)
				}
			}
		}
	case "Resize", "Upsample":
		elems = resizedElems(in)
	case "OneHot":
		if len(in) > 1 && in[1] != nil && in[1].Len() == 1 {
			elems = float64(in[0].Len()) * math.Abs(in[1].Float64s()[0])
		}
		size = 8 // the values' type: at most 8 bytes
	}
	if size == 0 {
		size = in[0].DType.Size()
	}
	return elems*float64(max(size, 1)) > float64(limit)
}

func product(v []float64) float64 {
	p := 1.0
	for _, d := range v {
		p *= math.Abs(d)
	}
	return p
}

// broadcastElems is the element count of shape broadcast with the
// shape given as values.
func broadcastElems(shape []int, to []float64) float64 {
	p := 1.0
	for i := 0; i < max(len(shape), len(to)); i++ {
		a, b := 1.0, 1.0
		if j := len(shape) - 1 - i; j >= 0 {
			a = float64(shape[j])
		}
		if j := len(to) - 1 - i; j >= 0 {
			b = math.Abs(to[j])
		}
		p *= math.Max(a, b)
	}
	return p
}

// resizedElems is the element count of Resize's (or Upsample's) output
// from its sizes or scales input, -1 when neither is known.
func resizedElems(in []*tensor.Tensor) float64 {
	x := in[0]
	if len(in) > 3 && in[3] != nil && in[3].Len() == len(x.Shape) {
		return product(in[3].Float64s())
	}
	for _, s := range []int{2, 1} { // scales: input 2 from opset 11, input 1 before
		if len(in) > s && in[s] != nil && in[s].DType.IsFloat() && in[s].Len() == len(x.Shape) && len(x.Shape) > 0 {
			p := 1.0
			for i, f := range in[s].Float64s() {
				p *= math.Floor(float64(x.Shape[i]) * math.Abs(f))
			}
			return p
		}
	}
	return -1
}

// outputBytes is the memory a node's outputs hold.
func outputBytes(outs []*tensor.Tensor) int64 {
	var n int64
	for _, t := range outs {
		if t != nil {
			n += int64(t.Len()) * int64(max(t.DType.Size(), 1))
		}
	}
	return n
}
