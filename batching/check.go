package batching

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/tensor"
)

// ErrNotBatchable reports a model that cannot keep the contract of
// max_batch_size > 0.
var ErrNotBatchable = errors.New("batching: the model cannot batch")

// probeRows is the batch Check runs.
const probeRows = 3

// Check tests at load that m can batch along dimension 0 (see the package
// documentation): every input and output has a dynamic first dimension,
// and, when every other input dimension is fixed, a batch of three
// generated rows gives bit for bit what the rows give alone. It returns
// whether the probe ran (it cannot when a dimension after the first is
// dynamic, an input holds strings, or the model refuses the generated
// values), and an error wrapping ErrNotBatchable when the model breaks the
// contract. The probe runs under ctx (the load's deadline): once ctx ends
// it stops and returns ctx's error.
func Check(ctx context.Context, m *model.Model) (probed bool, err error) {
	for _, sp := range append(append([]model.IOSpec(nil), m.Inputs...), m.Outputs...) {
		if sp.Shape != nil && (len(sp.Shape) == 0 || sp.Shape[0] >= 0) {
			return false, fmt.Errorf("%w: %q has shape %s; max_batch_size > 0 needs a dynamic first (batch) dimension", ErrNotBatchable, sp.Name, tensor.ShapeString(sp.Shape))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	batch := map[string]*tensor.Tensor{}
	for _, sp := range m.Inputs {
		if sp.Shape == nil || sp.DType == tensor.String {
			return false, nil
		}
		shape := append([]int{probeRows}, sp.Shape[1:]...)
		for _, d := range shape[1:] {
			if d < 0 {
				return false, nil
			}
		}
		t, err := tensor.New(sp.DType, shape)
		if err != nil {
			return false, nil
		}
		fill(t, rng)
		batch[sp.Name] = t
	}
	whole, err := m.Run(ctx, batch, nil)
	if err != nil {
		return false, ctx.Err() // nil unless the load's deadline ended the probe
	}
	if err := checkRows(whole, probeRows); err != nil {
		return true, err
	}
	for i := 0; i < probeRows; i++ {
		row := map[string]*tensor.Tensor{}
		for name, t := range batch {
			row[name] = t.SliceRows(i, 1)
		}
		alone, err := m.Run(ctx, row, nil)
		if err != nil {
			return false, ctx.Err()
		}
		for name, t := range alone {
			if !tensor.SameBits(t, whole[name].SliceRows(i, 1)) {
				return true, fmt.Errorf("%w: output %q of row %d differs between a batch of %d generated rows and the row alone: the model mixes rows of dimension 0 (set max_batch_size to 0)", ErrNotBatchable, name, i, probeRows)
			}
		}
	}
	return true, nil
}

// fill sets t to values that differ between rows: floats in [-1, 1),
// integers and booleans 0 or 1 (safe as indices and flags).
func fill(t *tensor.Tensor, rng *rand.Rand) {
	switch d := t.Data.(type) {
	case []float32:
		for i := range d {
			d[i] = float32(rng.Float64()*2 - 1)
		}
	case []float64:
		for i := range d {
			d[i] = rng.Float64()*2 - 1
		}
	case []tensor.F16:
		for i := range d {
			d[i] = tensor.F16From(float32(rng.Float64()*2 - 1))
		}
	case []tensor.BF16:
		for i := range d {
			d[i] = tensor.BF16From(float32(rng.Float64()*2 - 1))
		}
	case []bool:
		for i := range d {
			d[i] = rng.IntN(2) == 1
		}
	default:
		v := reflect.ValueOf(t.Data)
		for i := 0; i < v.Len(); i++ {
			if e := v.Index(i); e.CanInt() {
				e.SetInt(int64(rng.IntN(2)))
			} else {
				e.SetUint(uint64(rng.IntN(2)))
			}
		}
	}
}
