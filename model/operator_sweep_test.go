package model

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/quantserve/quantserve/tensor"
)

// The sweeps below compile one node of every registered operator over
// inputs no exporter writes and run what loads: each must be refused at
// load or run to an error or a result, never panic.

// TestAbsentInputsNeverPanic gives each operator one to six inputs with
// one of them absent (ONNX's empty name), and all of them absent. An
// operator that reads a required input without checking it is named
// would dereference nil on such a model.
func TestAbsentInputsNeverPanic(t *testing.T) {
	x := tensor.From([]int{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	for _, d := range Operators() {
		if d.Refused {
			continue
		}
		for n := 1; n <= 6; n++ {
			for absent := -1; absent < n; absent++ {
				in := make([]sweepInput, n)
				for i := range in {
					if absent >= 0 && i != absent {
						in[i] = sweepInput{name: fmt.Sprintf("x%d", i), value: x}
					}
				}
				if err := sweepCase(d, in, 1); err != nil {
					t.Errorf("%v with input %d of %d absent (-1: all): %v", d, absent, n, err)
				}
			}
		}
	}
}

// TestOddInputsNeverPanic gives each operator one to five inputs drawn
// from scalars, empty tensors, integer, boolean and float64 values of
// small shapes, every other one an initializer (so folding at load runs
// the operator too), with one and two outputs.
func TestOddInputsNeverPanic(t *testing.T) {
	palette := []*tensor.Tensor{
		tensor.From([]int{2, 3}, []float32{1, 2, 3, 4, 5, 6}),
		tensor.From([]int{}, []float32{2}),
		tensor.From([]int{2}, []int64{1, 2}),
		tensor.From([]int{0}, []float32{}),
		tensor.From([]int{2, 3}, []bool{true, false, true, false, true, false}),
		tensor.From([]int{}, []int64{-1}),
		tensor.From([]int{1, 2, 2, 2}, []float32{1, 2, 3, 4, 5, 6, 7, 8}),
		tensor.From([]int{3}, []int32{0, 1, 2}),
		tensor.From([]int{2, 0}, []int64{}),
		tensor.From([]int{1}, []float64{3}),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, d := range Operators() {
		if d.Refused {
			continue
		}
		failed := false
		for n := 1; n <= 5 && !failed; n++ {
			// each kind for every input, then mixes
			for k := 0; k < 16 && !failed; k++ {
				in := make([]sweepInput, n)
				for i := range in {
					v := palette[r.IntN(len(palette))]
					if k < len(palette) {
						v = palette[k]
					}
					in[i] = sweepInput{name: fmt.Sprintf("x%d", i), value: v, init: i%2 == 1 || n == 1}
				}
				for outs := 1; outs <= 2; outs++ {
					if err := sweepCase(d, in, outs); err != nil {
						t.Errorf("%v on %v with %d outputs: %v", d, in, outs, err)
						failed = true
					}
				}
			}
		}
	}
}

// sweepInput is one input of a swept node: absent (no name), a graph
// input, or an initializer.
type sweepInput struct {
	name  string
	value *tensor.Tensor
	init  bool
}

func (s sweepInput) String() string {
	if s.name == "" {
		return "absent"
	}
	return fmt.Sprintf("%v%v", s.value.DType, s.value.Shape)
}

// sweepCase loads and runs one node of d over in with outs float
// outputs, and reports a panic as an error.
func sweepCase(d *Descriptor, in []sweepInput, outs int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	inputs := map[string]*tensor.Tensor{}
	pn := make([]pnInput, len(in))
	for i, x := range in {
		switch {
		case x.name == "":
		case x.init:
			pn[i] = pnInput{name: x.name, init: x.value}
		default:
			pn[i] = pnInput{name: x.name, dt: x.value.DType}
			inputs[x.name] = x.value
		}
	}
	names := make([]string, outs)
	for i := range names {
		names[i] = fmt.Sprintf("y%d", i)
	}
	// a bound on the work a node may ask for, not a test of speed
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	m, err := LoadContext(ctx, pnModelBytes(d.Domain, d.Since, d.Type, pn, names), Options{})
	if err != nil {
		return nil
	}
	m.Run(ctx, inputs, nil)
	return nil
}
