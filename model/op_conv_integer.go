package model

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// ConvInteger and QLinearConv run exactly on the int8 tiles.
//
// The tiles multiply unsigned activation bytes u (at most 128 with the
// row's zero point 64) by weight bytes in [-127, 127], the bounds that keep
// x86's pair sums from saturating, and return float32(Σ (u − zp)·b)·sa·sb.
// An integer convolution fits that product without rounding:
//
//   - Each row of im2col values v = x − x_zero_point (|v| <= 255) is split
//     into v = 64·h + l with h in [-4, 3] and l in [0, 63] (or taken whole
//     when every |v| <= 64), and each part gets one more column holding
//     −64: the row's range is then exactly [−64, 64], so the per-row
//     quantization has scale 1 and zero point 64 and carries the part
//     unchanged.
//   - The weight w − 128 (UINT8 w) or w (INT8 w) lies in [−128, 127]; the
//     tiles take max(b, −127), with scale 1, and the few −128 entries are
//     corrected from the rows (subtracting v at those k).
//   - K is cut into chunks of at most 2048, so every partial sum
//     (|Σ| <= 2048·64·127 < 2^24) is an integer float32 holds exactly.
//   - The weight zero point (and UINT8 w's 128) multiplies the row sum of
//     v: Σ v·(w − wzp) = Σ v·b + (shift − wzp)·Σ v.
//
// The sums are exact int64s, wrapped to int32 as the operator allows.

func init() {
	register(Descriptor{Type: "ConvInteger", Since: 10, Fold: true}, buildConvInteger)
	register(Descriptor{Type: "QLinearConv", Since: 10, Fold: true}, buildQLinearConv)
}

// convIntChunk is the most values of K one exact product sums.
const convIntChunk = 2048

// convIntWeights are integer weights prepared for exact products on the
// int8 tiles: for each group and K chunk, the chunk's K×N matrix plus a
// zero row for the range column, with unit scales.
type convIntWeights struct {
	k, n   int
	packed [][]*dispatch.QWeights // [group][chunk]
	shift  []int64                // per output channel: 128·[UINT8 w] − w_zero_point
	minus  [][]int                // per output channel: the k where the weight is −128
}

// prepareConvIntWeights prepares w (M×Cg×kernel, INT8 or UINT8) with zero
// points wzp (nil, one, or M values).
func prepareConvIntWeights(w *tensor.Tensor, wzp *tensor.Tensor, group int) (*convIntWeights, error) {
	shape := w.Shape
	m, cg, kk := shape[0], shape[1], convProd(shape[2:])
	mg := m / group
	raw, err := w.Int64s()
	if err != nil {
		return nil, err
	}
	zps, err := convZeroPoints("w", wzp, w.DType, m)
	if err != nil {
		return nil, err
	}
	var shift int64
	if w.DType == tensor.Uint8 {
		shift = 128
	}
	iw := &convIntWeights{k: kk * cg, n: mg, shift: make([]int64, m), minus: make([][]int, m)}
	for c := 0; c < m; c++ {
		iw.shift[c] = shift - zps[c%len(zps)]
	}
	for gi := 0; gi < group; gi++ {
		var chunks []*dispatch.QWeights
		for k0 := 0; k0 < iw.k || k0 == 0; k0 += convIntChunk {
			kc := min(convIntChunk, iw.k-k0)
			q := make([]int8, (kc+1)*mg)
			for co := 0; co < mg; co++ {
				for r := k0; r < k0+kc; r++ {
					kidx, ci := r/cg, r%cg
					b := raw[((gi*mg+co)*cg+ci)*kk+kidx] - shift
					if b == -128 {
						iw.minus[gi*mg+co] = append(iw.minus[gi*mg+co], r)
						b = -127
					}
					q[(r-k0)*mg+co] = int8(b)
				}
			}
			scales := make([]float32, mg)
			for i := range scales {
				scales[i] = 1
			}
			p, err := convPackQ(&quant.Weights{Scheme: quant.PerChannel, K: kc + 1, N: mg, Q: q, Scales: scales})
			if err != nil {
				return nil, err
			}
			chunks = append(chunks, p)
			if iw.k == 0 {
				break
			}
		}
		iw.packed = append(iw.packed, chunks)
	}
	return iw, nil
}

// convZeroPoints returns a zero point tensor's values: one, or n (per
// output channel); a nil tensor is zero.
func convZeroPoints(what string, zp *tensor.Tensor, dt tensor.DataType, n int) ([]int64, error) {
	if zp == nil {
		return []int64{0}, nil
	}
	if zp.DType != dt {
		return nil, inputErrorf("%s_zero_point is %v, %s is %v", what, zp.DType, what, dt)
	}
	v, err := zp.Int64s()
	if err != nil {
		return nil, err
	}
	if zp.Rank() > 1 || len(v) != 1 && len(v) != n || len(v) == 0 {
		return nil, inputErrorf("%s_zero_point %s must be a scalar or hold %d values", what, tensor.ShapeString(zp.Shape), n)
	}
	return v, nil
}

// convIntInputs checks an integer convolution's x and w types.
func convIntTypes(op string, x, w tensor.DataType) error {
	if x != tensor.Uint8 && x != tensor.Int8 {
		return inputErrorf("%s takes UINT8 or INT8 x, got %v", op, x)
	}
	if w != tensor.Uint8 && w != tensor.Int8 {
		return inputErrorf("%s takes UINT8 or INT8 w, got %v", op, w)
	}
	return nil
}

// convIntImageOf writes image x (C×size integer values) channels-last
// into dst as float32 x − zp.
func convIntImageOf[T uint8 | int8](dst []float32, x []T, c, size int, zp int64) {
	z := float32(zp)
	for ch := 0; ch < c; ch++ {
		src := x[ch*size : (ch+1)*size]
		for p, v := range src {
			dst[p*c+ch] = float32(v) - z
		}
	}
}

// run computes acc (Batch×M×Out int32) = Σ (x − xzp)·(w − wzp) exactly.
func (iw *convIntWeights) run(e *dispatch.Exec, g *ConvGeometry, x *tensor.Tensor, xzp int64, acc []int32) error {
	inSize, outSize := g.InSize(), g.OutSize()
	mg := g.mg()
	if g.Batch == 0 || g.M == 0 || outSize == 0 {
		return nil
	}
	taps := newConvTaps(g)
	width := iw.k + len(iw.packed[0])
	tile := convTileRows(max(width, iw.n*2))
	tiles := (outSize + tile - 1) / tile
	xt := make([]float32, inSize*g.C)
	for b := 0; b < g.Batch; b++ {
		switch d := x.Data.(type) {
		case []uint8:
			convIntImageOf(xt, d[b*g.C*inSize:(b+1)*g.C*inSize], g.C, inSize, xzp)
		case []int8:
			convIntImageOf(xt, d[b*g.C*inSize:(b+1)*g.C*inSize], g.C, inSize, xzp)
		}
		ab := acc[b*g.M*outSize : (b+1)*g.M*outSize]
		err := convRun(e, tiles*g.Group, outSize*iw.k*g.M, func(e *dispatch.Exec, s *convScratch, task int) error {
			gi, p0 := task/tiles, task%tiles*tile
			n := min(tile, outSize-p0)
			s.rows = convGrow(s.rows, n*iw.k)
			taps.gatherRows(s.rows, xt, gi, p0, n)
			s.sums = convGrow(s.sums, n*mg)
			if err := iw.product(e, gi, s, n); err != nil {
				return err
			}
			for co := 0; co < mg; co++ {
				m := gi*mg + co
				dst := ab[m*outSize+p0 : m*outSize+p0+n]
				for r := range dst {
					dst[r] = int32(s.sums[r*mg+co])
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

// product sets s.sums (n×N) to group gi's exact sums over s.rows (n×K).
func (iw *convIntWeights) product(e *dispatch.Exec, gi int, s *convScratch, n int) error {
	k, mg := iw.k, iw.n
	rows := s.rows[:n*k]
	clear(s.sums)
	whole := true
	for _, v := range rows {
		if v < -64 || v > 64 {
			whole = false
			break
		}
	}
	passes := 1
	if !whole {
		passes = 2 // 64·h, then l
	}
	s.out = convGrow(s.out, n*mg)
	for ci, pw := range iw.packed[gi] {
		k0 := ci * convIntChunk
		kc := min(convIntChunk, k-k0)
		for pass := 0; pass < passes; pass++ {
			s.part = convGrow(s.part, n*(kc+1))
			for r := 0; r < n; r++ {
				src := rows[r*k+k0 : r*k+k0+kc]
				dst := s.part[r*(kc+1) : (r+1)*(kc+1)]
				switch {
				case whole:
					copy(dst, src)
				case pass == 0:
					for i, v := range src {
						dst[i] = float32(int32(v) >> 6) // floor(v/64)
					}
				default:
					for i, v := range src {
						dst[i] = float32(int32(v) & 63)
					}
				}
				dst[kc] = -64
			}
			if err := convQGemm(e, s.part, n, pw, s.out); err != nil {
				return err
			}
			mul := int64(1)
			if passes == 2 && pass == 0 {
				mul = 64
			}
			for i, v := range s.out[:n*mg] {
				s.sums[i] += mul * int64(v)
			}
		}
	}
	for r := 0; r < n; r++ {
		row := rows[r*k : (r+1)*k]
		var sum int64
		for _, v := range row {
			sum += int64(v)
		}
		for co := 0; co < mg; co++ {
			c := gi*mg + co
			t := iw.shift[c] * sum
			for _, kk := range iw.minus[c] {
				t -= int64(row[kk])
			}
			s.sums[r*mg+co] += t
		}
	}
	return nil
}

// convIntHeld prepares a constant integer weight of node n and records the
// Layer.
func convIntHeld(n *node, w, wzp *tensor.Tensor, group int) (*convIntWeights, error) {
	if w == nil || w.Rank() < 3 || w.DType != tensor.Uint8 && w.DType != tensor.Int8 || w.Shape[0]%group != 0 {
		return nil, nil // checked per call
	}
	if convProd(w.Shape) == 0 {
		return nil, nil
	}
	iw, err := prepareConvIntWeights(w, wzp, group)
	if err != nil {
		return nil, err
	}
	kernels := "int8 exact"
	if group > 1 {
		kernels += fmt.Sprintf(", %d groups", group)
	}
	n.model.Layers = append(n.model.Layers, Layer{Node: n.name, Op: n.pb.OpType, K: iw.k, N: iw.n, Kernels: kernels})
	return iw, nil
}

// convIntCore checks an integer convolution's operands and returns its
// exact int32 sums (Batch×M×Out) and output shape.
func convIntCore(e *dispatch.Exec, op string, at *ConvAttrs, held *convIntWeights, heldShape []int, x, xzp, w, wzp *tensor.Tensor) ([]int32, []int, error) {
	wShape := heldShape
	if held == nil {
		if w == nil {
			return nil, nil, inputErrorf("%s has no weight", op)
		}
		wShape = w.Shape
		if err := convIntTypes(op, x.DType, w.DType); err != nil {
			return nil, nil, err
		}
	} else if err := convIntTypes(op, x.DType, tensor.Int8); err != nil {
		return nil, nil, err
	}
	g, err := convGeometry(op, x.Shape, wShape, at.AutoPad, int(at.Group), at.KernelShape, at.Strides, at.Dilations, at.Pads)
	if err != nil {
		return nil, nil, err
	}
	xz, err := convZeroPoints("x", xzp, x.DType, 1)
	if err != nil {
		return nil, nil, err
	}
	if held == nil {
		if held, err = prepareConvIntWeights(w, wzp, g.Group); err != nil {
			return nil, nil, err
		}
	}
	shape := append([]int{g.Batch, g.M}, g.Out...)
	size, _ := tensor.NumElements(shape)
	acc := make([]int32, size)
	if held.k == 0 {
		return acc, shape, nil
	}
	if err := held.run(e, g, x, xz[0], acc); err != nil {
		return nil, nil, err
	}
	return acc, shape, nil
}

func buildConvInteger(n *node, at *ConvAttrs) (opFunc, error) {
	if err := n.checkArity(2, 4, 1, 1); err != nil {
		return nil, err
	}
	if err := checkConvAttrs(at.AutoPad, at.Group, at.KernelShape, at.Strides, at.Dilations, at.Pads); err != nil {
		return nil, err
	}
	var held *convIntWeights
	var heldShape []int
	wzpConst := len(n.consts) < 4 || n.pb.Inputs[3] == "" || n.consts[3] != nil
	if w := n.consts[1]; w != nil && wzpConst {
		var wzp *tensor.Tensor
		if len(n.consts) > 3 {
			wzp = n.consts[3]
		}
		var err error
		if held, err = convIntHeld(n, w, wzp, int(at.Group)); err != nil {
			return nil, err
		}
		if held != nil {
			heldShape = w.Shape
			n.unused[1] = true
			if len(n.unused) > 3 {
				n.unused[3] = true
			}
		}
	}
	exec := n.opts.Exec
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		var xzp, wzp *tensor.Tensor
		if len(in) > 2 {
			xzp = in[2]
		}
		if len(in) > 3 {
			wzp = in[3]
		}
		acc, shape, err := convIntCore(exec, "ConvInteger", at, held, heldShape, in[0], xzp, in[1], wzp)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{tensor.From(shape, acc)}, nil
	}, nil
}

func buildQLinearConv(n *node, at *ConvAttrs) (opFunc, error) {
	if err := n.checkArity(8, 9, 1, 1); err != nil {
		return nil, err
	}
	if err := checkConvAttrs(at.AutoPad, at.Group, at.KernelShape, at.Strides, at.Dilations, at.Pads); err != nil {
		return nil, err
	}
	var held *convIntWeights
	var heldShape []int
	if w, wzp := n.consts[3], n.consts[5]; w != nil && wzp != nil {
		var err error
		if held, err = convIntHeld(n, w, wzp, int(at.Group)); err != nil {
			return nil, err
		}
		if held != nil {
			heldShape = w.Shape
			n.unused[3], n.unused[5] = true, true
		}
	}
	exec := n.opts.Exec
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, xs, xzp, w, ws, wzp, ys, yzp := in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7]
		var bias *tensor.Tensor
		if len(in) > 8 {
			bias = in[8]
		}
		acc, shape, err := convIntCore(exec, "QLinearConv", at, held, heldShape, x, xzp, w, wzp)
		if err != nil {
			return nil, err
		}
		m := shape[1]
		xsv, ok1 := float32s(xs)
		wsv, ok2 := float32s(ws)
		ysv, ok3 := float32s(ys)
		if !ok1 || !ok2 || !ok3 || len(xsv) != 1 || len(ysv) != 1 || len(wsv) != 1 && len(wsv) != m {
			return nil, inputErrorf("QLinearConv takes FP32 scales: x and y per tensor, w per tensor or per output channel (%d)", m)
		}
		if yzp == nil {
			return nil, inputErrorf("QLinearConv needs y_zero_point")
		}
		lo, hi, ok := intRange(yzp.DType)
		if !ok || yzp.DType != tensor.Uint8 && yzp.DType != tensor.Int8 || yzp.Len() != 1 {
			return nil, inputErrorf("QLinearConv y_zero_point must be one UINT8 or INT8 value")
		}
		z := yzp.Float64s()[0]
		var bv []int32
		if bias != nil {
			b, ok := bias.Data.([]int32)
			if !ok || bias.Rank() != 1 || len(b) != m {
				return nil, inputErrorf("QLinearConv bias must be INT32 with %d values, got %v%s", m, bias.DType, tensor.ShapeString(bias.Shape))
			}
			bv = b
		}
		size := convProd(shape[2:])
		mult := make([]float64, m)
		for c := range mult {
			mult[c] = float64(xsv[0] * wsv[c%len(wsv)] / ysv[0]) // float32, as ONNX's reference computes it
		}
		out := make([]float64, len(acc))
		for i, v := range acc {
			c := i / max(size, 1) % m
			if bv != nil {
				v += bv[c]
			}
			out[i] = min(max(math.RoundToEven(float64(v)*mult[c]+z), lo), hi)
		}
		y, err := castTo(tensor.From(shape, out), yzp.DType)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}
