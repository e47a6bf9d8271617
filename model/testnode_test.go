package model

import (
	"fmt"
	"math/rand/v2"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// testNode is a node with the given numbers of inputs and outputs, for
// calling builders directly.
func testNode(ins, outs int) *node {
	n := &node{pb: &onnxpb.Node{}, name: "test"}
	for i := 0; i < ins; i++ {
		n.pb.Inputs = append(n.pb.Inputs, fmt.Sprintf("in%d", i))
	}
	for i := 0; i < outs; i++ {
		n.pb.Outputs = append(n.pb.Outputs, fmt.Sprintf("out%d", i))
	}
	n.consts = make([]*tensor.Tensor, ins)
	n.unused = make([]bool, ins)
	n.opts = &Options{Exec: gemm.Default()}
	return n
}

// randFloats returns n normal values shifted by offset.
func randFloats(r *rand.Rand, n int, offset float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() + offset)
	}
	return x
}
