package model

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/ops/norm"
	"github.com/quantserve/quantserve/tensor"
)

// TestBatchNormFoldDropsConstants: a BatchNormalization whose scale, B,
// mean and var are constants folds them at load, and the compiler then
// feeds the node none of the four and keeps none of them; its answer is
// the one with the parameters as inputs.
func TestBatchNormFoldDropsConstants(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const C = 3
	x := pnRandom(r, 2, C, 4)
	p := [4]*tensor.Tensor{pnRandom(r, C), pnRandom(r, C), pnRandom(r, C), tensor.From([]int{C}, []float32{0.5, 1, 2})}
	var want []float64
	for _, consts := range []bool{false, true} {
		ins := []pnInput{{name: "x", dt: tensor.Float32}}
		in := map[string]*tensor.Tensor{"x": x}
		for i, name := range []string{"scale", "B", "mean", "var"} {
			pi := pnInput{name: name, dt: tensor.Float32}
			if consts {
				pi.init = p[i]
			} else {
				in[name] = p[i]
			}
			ins = append(ins, pi)
		}
		m, err := pnModel(15, "BatchNormalization", ins, []string{"y"})
		if err != nil {
			t.Fatal(err)
		}
		st := m.Steps()[0]
		bn, ok := st.Operator.(*norm.BatchNorm)
		if !ok {
			t.Fatalf("BatchNormalization compiled to %T", st.Operator)
		}
		if consts != (bn.Folded() != nil) || consts && len(m.constants) != 0 {
			t.Fatalf("constants %v: folded %v, constants kept %d", consts, bn.Folded() != nil, len(m.constants))
		}
		res, err := m.Run(context.Background(), in, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !consts {
			want = res["y"].Float64s()
			continue
		}
		got := res["y"].Float64s()
		for i := range want {
			if d := got[i] - want[i]; d > 1e-6 || d < -1e-6 {
				t.Fatalf("folded: element %d = %v, with the parameters as inputs %v", i, got[i], want[i])
			}
		}
	}
}
