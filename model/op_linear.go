package model

import (
	"fmt"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// quantserve.Linear is what the "linear" rewrite (rewrite_linear.go)
// makes of a MatMul followed by the Add of a bias, an activation and the
// Add of a residual (each optional, in that order):
//
//	Y = act(A·W + bias) + residual
//
// With a constant float32 weight (the int8 or float kernels hold it), a
// float32 bias as long as a row of the product and a residual of the
// product's shape, the bias, activation and residual are applied row by
// row on the product's output with the table's vector kernels, in the
// graph's order of operations; any other inputs run the graph's own
// operators one after the other, so the node computes what they did.

func init() {
	register(Descriptor{Domain: rewriteDomain, Type: "Linear", Since: 1, Fold: true}, buildLinear)
}

// LinearAttrs are quantserve.Linear's attributes.
type LinearAttrs struct {
	// Activation is "" (none), "Relu" or "Gelu" (the exact, erf form).
	Activation string `onnx:"activation"`
	// Opset is the ai.onnx opset of the operators the node replaces.
	Opset int64 `onnx:"opset"`
}

// linearChain is the operators a Linear node replaces, compiled as the
// graph had them, for the inputs the fused path does not take.
type linearChain struct {
	matmul, bias, act, residual opFunc
}

// compileONNXOp compiles an ai.onnx operator without attributes for n's
// model, its inputs known at load as consts and qdq say (nil: not known).
func compileONNXOp(n *node, typ string, opset int64, consts []*tensor.Tensor, qdq []*qdqWeight) (opFunc, *node, error) {
	d, err := lookup("", typ, opset)
	if err != nil {
		return nil, nil, err
	}
	pb := &onnxpb.Node{Name: n.pb.Name, OpType: typ, Inputs: make([]string, len(consts)), Outputs: []string{"y"}}
	for i := range pb.Inputs {
		pb.Inputs[i] = fmt.Sprintf("%s:%d", n.name, i)
	}
	sub := &node{pb: pb, name: n.name, opts: n.opts, model: n.model, c: n.c, opset: opset, attrs: Attrs{},
		consts: consts, qdq: qdq, unused: make([]bool, len(consts))}
	_, op, err := compileNodeWith(d, sub)
	if err != nil {
		return nil, nil, err
	}
	return runAlone(sub, op), sub, nil
}

func buildLinear(n *node, at *LinearAttrs) (opFunc, error) {
	if err := n.checkArity(2, 4, 1, 1); err != nil {
		return nil, err
	}
	if err := requireInputs(n, 2); err != nil {
		return nil, err
	}
	given := func(i int) bool { return i < len(n.pb.Inputs) && n.pb.Inputs[i] != "" }
	var ch linearChain
	// The MatMul as the graph has it: with a constant weight, on the
	// kernels (and recorded among the model's layers).
	mm, sub, err := compileONNXOp(n, "MatMul", at.Opset, []*tensor.Tensor{nil, n.consts[1]}, []*qdqWeight{nil, n.qdq[1]})
	if err != nil {
		return nil, err
	}
	ch.matmul = mm
	n.lin, n.unused[1] = sub.lin, sub.unused[1]
	none := []*tensor.Tensor{nil, nil}
	if given(2) {
		if ch.bias, _, err = compileONNXOp(n, "Add", at.Opset, none, nil); err != nil {
			return nil, err
		}
	}
	switch at.Activation {
	case "":
	case "Relu", "Gelu":
		if ch.act, _, err = compileONNXOp(n, at.Activation, at.Opset, none[:1], nil); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("activation %q is not Relu or Gelu", at.Activation)
	}
	if given(3) {
		if ch.residual, _, err = compileONNXOp(n, "Add", at.Opset, none, nil); err != nil {
			return nil, err
		}
	}

	// The fused path: the weight on the kernels, a constant float32 bias
	// of one row's length (or none).
	lin := sub.lin
	var bias []float32
	if lin != nil && given(2) {
		b := n.consts[2]
		if b != nil && b.DType == tensor.Float32 && b.Rank() == 1 && b.Shape[0] == lin.n {
			bias = b.Data.([]float32)
			n.unused[2] = true
		} else {
			lin = nil // a bias that broadcasts: the graph's Add adds it
		}
	}
	if lin == nil {
		return ch.run, nil
	}
	tb := kernelTable(n)
	act := at.Activation
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		y, err := lin.apply(in[0])
		if err != nil {
			return nil, err
		}
		var rd []float32
		if res := optionalInput(in, 3); res != nil {
			if rd, _ = res.Data.([]float32); rd == nil || !equalShape(res.Shape, y.Shape) {
				// a residual that broadcasts, or of another type: the
				// graph's operators take it from the bias on
				addRows(y.Data.([]float32), bias)
				if y, err = ch.rest(y, nil, res); err != nil {
					return nil, err
				}
				return []*tensor.Tensor{y}, nil
			}
		}
		yd := y.Data.([]float32)
		cols := lin.n
		for r := 0; r*cols < len(yd); r++ {
			row := yd[r*cols : (r+1)*cols]
			var rr []float32
			if rd != nil {
				rr = rd[r*cols : (r+1)*cols]
			}
			switch {
			case act == "Gelu":
				tb.Gelu(row, row, bias)
			case bias != nil && (act != "" || rr == nil):
				tb.AddBias(row, bias, nil)
			case bias != nil:
				tb.AddBias(row, bias, rr) // (y + bias) + residual
				continue
			}
			if act == "Relu" {
				reluSlice(row, row)
			}
			if rr != nil {
				tb.AddBias(row, rr, nil)
			}
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}

// addRows adds bias (nil: nothing) to each row of y.
func addRows(y, bias []float32) {
	for r := 0; len(bias) > 0 && r*len(bias) < len(y); r++ {
		row := y[r*len(bias) : (r+1)*len(bias)]
		for j, b := range bias {
			row[j] += b
		}
	}
}

// run computes the node with the graph's operators.
func (ch *linearChain) run(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	out, err := ch.matmul(in[:2])
	if err != nil {
		return nil, err
	}
	y, err := ch.rest(out[0], optionalInput(in, 2), optionalInput(in, 3))
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}

// rest applies to y, with the graph's operators, the bias (when not nil),
// the activation and the residual (when not nil).
func (ch *linearChain) rest(y, bias, res *tensor.Tensor) (*tensor.Tensor, error) {
	step := func(f opFunc, in ...*tensor.Tensor) error {
		out, err := f(in)
		if err == nil {
			y = out[0]
		}
		return err
	}
	if bias != nil {
		if err := step(ch.bias, y, bias); err != nil {
			return nil, err
		}
	}
	if ch.act != nil {
		if err := step(ch.act, y); err != nil {
			return nil, err
		}
	}
	if res != nil {
		if err := step(ch.residual, y, res); err != nil {
			return nil, err
		}
	}
	return y, nil
}
