package attention

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// attnView addresses a rank-4 (batch, head, sequence, feature) tensor, or
// a rank-3 (batch, sequence, head·feature) one, by strides: element
// (b, h, s, f) is data[b·bs + h·hs + s·ss + f].
type attnView[T float32 | float64] struct {
	data       []T
	bs, hs, ss int
}

func (v attnView[T]) at(b, h int) int { return b*v.bs + h*v.hs }

// headMajor views data of shape (batch, heads, seq, dim).
func headMajor[T float32 | float64](data []T, heads, seq, dim int) attnView[T] {
	return attnView[T]{data: data, bs: heads * seq * dim, hs: seq * dim, ss: dim}
}

// seqMajor views data of shape (batch, seq, heads·dim).
func seqMajor[T float32 | float64](data []T, heads, seq, dim int) attnView[T] {
	return attnView[T]{data: data, bs: seq * heads * dim, hs: dim, ss: heads * dim}
}

// packedBlock views the column block at column off of data, rows ld
// values wide, seq rows an image, as seqMajor views a tensor of its own
// (heads of dim columns each). Data of no rows (a batch or a sequence of
// none) views as empty: nothing reads it.
func packedBlock[T float32 | float64](data []T, off, ld, seq, dim int) attnView[T] {
	return attnView[T]{data: data[min(off, len(data)):], bs: seq * ld, hs: dim, ss: ld}
}

// attnShape is one attention problem's sizes.
type attnShape struct {
	b, hq, hkv int
	sq, t      int // query length and key/value length (past included)
	d, dv      int // query/key and value head sizes
}

// concatHeads returns past (b, h, p, d) followed along the sequence by
// cur (viewed by its strides, s positions), head-major.
func concatHeads[T float32 | float64](past []T, cur attnView[T], b, h, p, s, d int) []T {
	out := make([]T, b*h*(p+s)*d)
	for bi := 0; bi < b; bi++ {
		for hi := 0; hi < h; hi++ {
			dst := out[(bi*h+hi)*(p+s)*d:]
			if p > 0 {
				copy(dst[:p*d], past[(bi*h+hi)*p*d:])
			}
			base := cur.at(bi, hi)
			for j := 0; j < s; j++ {
				copy(dst[(p+j)*d:(p+j+1)*d], cur.data[base+j*cur.ss:])
			}
		}
	}
	return out
}

// float32s returns a floating-point tensor's values as float32 (its own
// slice for FP32, which the caller must not modify).
func float32s(x *tensor.Tensor) []float32 {
	v, _ := ops.Float32s(x, "")
	return v
}

// float64s returns a floating-point tensor's values as float64 (its own
// slice for FP64, which the caller must not modify).
func float64s(x *tensor.Tensor) []float64 {
	if d, ok := x.Data.([]float64); ok {
		return d
	}
	return x.Float64s()
}

// roundAs returns v as a slice of the floating-point type dt.
func roundAs[T float32 | float64](v []T, dt tensor.DataType) any {
	switch x := any(v).(type) {
	case []float32:
		return ops.RoundFloat32s(x, dt)
	case []float64:
		return ops.RoundFloat64s(x, dt)
	}
	return nil
}
