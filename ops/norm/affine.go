package norm

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// affinePlanes returns y = x·a[p] + b[p] for x made of len(a) planes of
// size elements each: the kernel every normalization ends in.
func affinePlanes[T tensor.Float](x []T, a, b []float64, size int, oc *ops.Context) ([]T, error) {
	y := make([]T, len(x))
	for pl := range a {
		if err := oc.Tick(size); err != nil {
			return nil, err
		}
		xs := x[pl*size : (pl+1)*size]
		ys := y[pl*size : (pl+1)*size]
		ys = ys[:len(xs)]
		ap, bp := T(a[pl]), T(b[pl])
		for i, v := range xs {
			ys[i] = v*ap + bp
		}
	}
	return y, nil
}

// affineChannels is affinePlanes with coefficients per channel, for
// planes laid out as n images of len(a) channels: batch-normalization's
// hot loop.
func affineChannels[T tensor.Float](x []T, a, b []T, size int, oc *ops.Context) ([]T, error) {
	y := make([]T, len(x))
	c := len(a)
	if c == 0 || size == 0 {
		return y, nil
	}
	for pl := 0; pl < len(x)/size; pl++ {
		if err := oc.Tick(size); err != nil {
			return nil, err
		}
		xs := x[pl*size : (pl+1)*size]
		ys := y[pl*size : (pl+1)*size]
		ys = ys[:len(xs)]
		ap, bp := a[pl%c], b[pl%c]
		i := 0
		for ; i+4 <= len(xs); i += 4 {
			ys[i] = xs[i]*ap + bp
			ys[i+1] = xs[i+1]*ap + bp
			ys[i+2] = xs[i+2]*ap + bp
			ys[i+3] = xs[i+3]*ap + bp
		}
		for ; i < len(xs); i++ {
			ys[i] = xs[i]*ap + bp
		}
	}
	return y, nil
}

// meanVar returns the mean and population variance of v, in float64 and
// two passes.
func meanVar[T tensor.Float](v []T) (mean, variance float64) {
	if len(v) == 0 {
		return 0, 0
	}
	var s float64
	for _, x := range v {
		s += float64(x)
	}
	mean = s / float64(len(v))
	var q float64
	for _, x := range v {
		d := float64(x) - mean
		q += d * d
	}
	return mean, q / float64(len(v))
}
