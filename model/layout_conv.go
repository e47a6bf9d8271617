package model

import (
	"slices"

	"github.com/quantserve/quantserve/onnx/onnxpb"
)

// layoutConvs chooses, for each FusedConv, whether it reads its input and
// writes its output channels-last: a value flows NHWC when a fused
// convolution that can write it so produces it and every reader is a fused
// convolution that reads it so (as its input, scaled or not, or its
// residual; a convolution writing NHWC takes its residual NHWC too) or,
// beside such a convolution, a global pool (GlobalAveragePool or
// GlobalMaxPool, which then runs as its channels-last form in the
// rewrite domain: a squeeze-and-excitation block's image stays NHWC for
// its squeeze and its scaled convolution), or a 2-D MaxPool, which then
// runs as its channels-last form in the rewrite domain: its output flows
// NHWC in turn when it may (a ResNet's stem, or a network's last pool
// that only its final global pool reads, which then reads it
// channels-last), and is written NCHW otherwise (nchw_out: a last pool
// before a flatten), the pool transposing its output rather than the
// convolution its larger input.
// Graph outputs and values any other operator reads stay NCHW. Values
// only fused convolutions read, in either layout, live in pooled buffers.
func layoutConvs(r *rewriter) bool {
	outputs := map[string]bool{}
	for _, o := range r.g.Outputs {
		outputs[o.Name] = true
	}
	type use struct {
		n   *onnxpb.Node
		pos int
	}
	fused := map[string]*onnxpb.Node{} // by output
	for _, n := range r.g.Nodes {
		if !r.dead[n] && isFusedConv(n) && len(n.Outputs) == 1 && r.fusedConvCanNHWC(n) {
			fused[n.Outputs[0]] = n
		}
	}
	if len(fused) == 0 {
		return false
	}
	changed := orderSEImages(r, fused)
	readers := map[string][]use{}
	for _, n := range r.g.Nodes {
		if r.dead[n] {
			continue
		}
		for i, in := range n.Inputs {
			if in != "" {
				readers[in] = append(readers[in], use{n, i})
			}
		}
	}
	nhwc := map[string]bool{}
	for v := range fused {
		nhwc[v] = !outputs[v]
	}
	// A 2-D MaxPool of such a value (a ResNet's stem) may pass the layout
	// on: it runs channels-last when its input and its output both are.
	maxPools := map[string]*onnxpb.Node{} // by output
	for _, n := range r.g.Nodes {
		if !r.dead[n] && isMaxPool2D(n) && (n.Domain == rewriteDomain || maxPoolAttrsKnown(n, r.opset(n))) && fused[n.Inputs[0]] != nil {
			maxPools[n.Outputs[0]] = n
			nhwc[n.Outputs[0]] = !outputs[n.Outputs[0]]
		}
	}
	for changed := true; changed; {
		changed = false
		for v, ok := range nhwc {
			if !ok {
				continue
			}
			// Global pools read it channels-last beside a fused
			// convolution (a squeeze-and-excitation block's image), or
			// alone when a max pool wrote it (a network's last pool
			// before its final global pool: no transpose between the
			// two). A convolution's image that only pools read stays
			// NCHW.
			keep, byConv := len(readers[v]) > 0, maxPools[v] != nil
			for _, u := range readers[v] {
				switch {
				case isGlobalPool(u.n) && u.pos == 0: // pools channels-last
					continue
				case u.pos == 0 && passesLayout(u.n, maxPools): // channels-last, its output either way
				case !isFusedConv(u.n) || !r.fusedConvCanNHWC(u.n):
					keep = false
				case u.pos == fusedX: // scaled pixel by pixel, when it has a channel scale
				case u.pos == fusedResidual:
				default:
					keep = false
				}
				byConv = true
			}
			if !byConv {
				keep = false
			}
			// Its own residual must arrive in its layout; a max pool's
			// input must be channels-last for its output to be.
			if p := fused[v]; p != nil && len(p.Inputs) > fusedResidual && p.Inputs[fusedResidual] != "" && !nhwc[p.Inputs[fusedResidual]] {
				keep = false
			}
			if p := maxPools[v]; p != nil && !nhwc[p.Inputs[0]] {
				keep = false
			}
			if !keep {
				nhwc[v], changed = false, true
			}
		}
	}
	// A value only fused convolutions read, in either layout, lives in a
	// pooled buffer, which its last reader returns to the pool.
	// Global pooling may read such a value too (a squeeze-and-excitation
	// block's), in either layout, before its last fused reader: it reads
	// the value and keeps nothing of it.
	order := map[*onnxpb.Node]int{}
	for i, n := range r.g.Nodes {
		order[n] = i
	}
	pooled := map[string]bool{}
	lastReader := map[string]*onnxpb.Node{}
	for _, n := range r.g.Nodes {
		if r.dead[n] || !isFusedConv(n) || len(n.Outputs) != 1 {
			continue
		}
		v := n.Outputs[0]
		var last *onnxpb.Node
		ok := !outputs[v] && len(readers[v]) > 0
		for _, u := range readers[v] {
			switch {
			case isFusedConv(u.n) && slices.Contains(fusedReadPositions, u.pos):
				if last == nil || order[u.n] > order[last] {
					last = u.n
				}
			case isGlobalPool(u.n) && u.pos == 0:
			default:
				ok = false
			}
		}
		for _, u := range readers[v] {
			if last == nil || !isFusedConv(u.n) && order[u.n] > order[last] {
				ok = false
			}
		}
		if pooled[v] = ok; ok {
			lastReader[v] = last
		}
	}
	for i, n := range r.g.Nodes {
		// A global pool (or a max pool) reads a channels-last value as
		// quantserve's operator of its name, any other as ONNX's; a max
		// pool reading one writes NCHW (nchw_out) unless its output
		// flows channels-last.
		if r.dead[n] || !isGlobalPool(n) && !passesLayout(n, maxPools) {
			continue
		}
		in := nhwc[n.Inputs[0]]
		toNCHW := in && passesLayout(n, maxPools) && !nhwc[n.Outputs[0]]
		if (n.Domain == rewriteDomain) == in && (attrOf(n, "nchw_out") != nil) == toNCHW {
			continue
		}
		c := *n
		c.Domain = ""
		if in {
			c.Domain = rewriteDomain
		}
		c.Attributes = slices.DeleteFunc(slices.Clone(n.Attributes), func(a *onnxpb.Attribute) bool { return a.Name == "nchw_out" })
		if toNCHW {
			c.Attributes = append(c.Attributes, &onnxpb.Attribute{Name: "nchw_out", Type: onnxpb.AttrInt, I: 1})
		}
		r.g.Nodes[i] = &c
		changed = true
	}
	for i, n := range r.g.Nodes {
		if r.dead[n] || !isFusedConv(n) {
			continue
		}
		var want []*onnxpb.Attribute
		if nhwc[n.Inputs[fusedX]] {
			want = append(want, &onnxpb.Attribute{Name: "nhwc_in", Type: onnxpb.AttrInt, I: 1})
		}
		if nhwc[n.Outputs[0]] {
			want = append(want, &onnxpb.Attribute{Name: "nhwc_out", Type: onnxpb.AttrInt, I: 1})
		}
		if pooled[n.Outputs[0]] {
			want = append(want, &onnxpb.Attribute{Name: "pooled_out", Type: onnxpb.AttrInt, I: 1})
		}
		if len(n.Inputs) > fusedResidual && nhwc[n.Inputs[fusedResidual]] {
			want = append(want, &onnxpb.Attribute{Name: "nhwc_residual", Type: onnxpb.AttrInt, I: 1})
		}
		var recycle []int64
		var names []string
		for _, pos := range fusedReadPositions {
			if pos < len(n.Inputs) && lastReader[n.Inputs[pos]] == n && !slices.Contains(names, n.Inputs[pos]) {
				recycle, names = append(recycle, int64(pos)), append(names, n.Inputs[pos])
			}
		}
		if recycle != nil {
			want = append(want, &onnxpb.Attribute{Name: "recycle_inputs", Type: onnxpb.AttrInts, Ints: recycle})
		}
		layout := func(a *onnxpb.Attribute) bool {
			return a.Name == "nhwc_in" || a.Name == "nhwc_out" || a.Name == "nhwc_residual" || a.Name == "pooled_out" || a.Name == "recycle_inputs"
		}
		var have []*onnxpb.Attribute
		for _, a := range n.Attributes {
			if layout(a) {
				have = append(have, a)
			}
		}
		if slices.EqualFunc(have, want, func(a, b *onnxpb.Attribute) bool {
			return a.Name == b.Name && a.I == b.I && slices.Equal(a.Ints, b.Ints)
		}) {
			continue
		}
		c := *n
		c.Attributes = append(slices.DeleteFunc(slices.Clone(n.Attributes), layout), want...)
		r.g.Nodes[i] = &c
		changed = true
	}
	return changed
}

// fusedReadPositions are the inputs of a fused convolution that may be
// pooled values it recycles.
var fusedReadPositions = []int{fusedX, fusedResidual, fusedXScale}

// fusedConvScalesX reports whether a fused convolution scales its image
// by a squeeze-and-excitation block's channel scale.
func fusedConvScalesX(n *onnxpb.Node) bool {
	return len(n.Inputs) > fusedXScale && n.Inputs[fusedXScale] != ""
}

// isGlobalPool reports whether n is a GlobalAveragePool or a
// GlobalMaxPool of one input, ONNX's or its channels-last form in the
// rewrite domain (ops/pool).
func isGlobalPool(n *onnxpb.Node) bool {
	d := normDomain(n.Domain)
	return (n.OpType == "GlobalAveragePool" || n.OpType == "GlobalMaxPool") && (d == "" || d == rewriteDomain) &&
		len(n.Inputs) == 1 && n.Inputs[0] != "" && len(n.Outputs) == 1 && len(n.Attributes) == 0
}

// passesLayout reports whether n is one of the max pools (by output)
// that may pass a channels-last value on.
func passesLayout(n *onnxpb.Node, maxPools map[string]*onnxpb.Node) bool {
	return len(n.Outputs) > 0 && maxPools[n.Outputs[0]] == n
}

// maxPoolAttrsKnown reports whether ONNX's MaxPool of the given opset
// knows every attribute n has (storage_order from opset 8, dilations and
// ceil_mode from 10): the channels-last form knows them all, and must not
// take a node ONNX's would refuse.
func maxPoolAttrsKnown(n *onnxpb.Node, opset int64) bool {
	for _, a := range n.Attributes {
		switch {
		case a.Name == "storage_order" && opset < 8:
			return false
		case (a.Name == "dilations" || a.Name == "ceil_mode") && opset < 10:
			return false
		}
	}
	return true
}

// isMaxPool2D reports whether n is a MaxPool of 2-D windows whose
// Indices output nobody reads, ONNX's or its channels-last form in the
// rewrite domain (ops/pool): one that may run channels-last.
func isMaxPool2D(n *onnxpb.Node) bool {
	if n.OpType != "MaxPool" || len(n.Inputs) != 1 || n.Inputs[0] == "" || len(n.Outputs) == 0 || n.Outputs[0] == "" {
		return false
	}
	if len(n.Outputs) > 1 && slices.ContainsFunc(n.Outputs[1:], func(o string) bool { return o != "" }) {
		return false
	}
	if d := normDomain(n.Domain); d != "" && d != rewriteDomain {
		return false
	}
	for _, a := range n.Attributes {
		switch a.Name {
		case "kernel_shape":
			if len(a.Ints) != 2 {
				return false
			}
		case "auto_pad", "pads", "strides", "dilations", "ceil_mode", "storage_order":
		case "nchw_out": // the channels-last form's own
			if normDomain(n.Domain) != rewriteDomain {
				return false
			}
		default:
			return false
		}
	}
	return attrOf(n, "kernel_shape") != nil
}

// orderSEImages puts the image of each squeeze-and-excitation block's
// scaled convolution at its input X, the channel scale at XScale (the
// Mul it absorbed may have them either way round; the convolution tells
// them apart by their shapes at run time, and the product is the same):
// the image is the operand a global pool reads (the squeeze) and a
// fused convolution that may write channels-last produces, when no
// global pool reads the other. It reports whether it swapped any.
func orderSEImages(r *rewriter, fused map[string]*onnxpb.Node) bool {
	squeezed := map[string]bool{}
	for _, n := range r.g.Nodes {
		if !r.dead[n] && isGlobalPool(n) {
			squeezed[n.Inputs[0]] = true
		}
	}
	changed := false
	for i, n := range r.g.Nodes {
		if r.dead[n] || !isFusedConv(n) || !fusedConvScalesX(n) || !r.fusedConvCanNHWC(n) {
			continue
		}
		x, s := n.Inputs[fusedX], n.Inputs[fusedXScale]
		if !squeezed[s] || fused[s] == nil || squeezed[x] {
			continue
		}
		c := *n
		c.Inputs = slices.Clone(n.Inputs)
		c.Inputs[fusedX], c.Inputs[fusedXScale] = s, x
		r.g.Nodes[i] = &c
		changed = true
	}
	return changed
}
