//go:build autodiff

package autodiff

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/ops/norm"
	"github.com/quantserve/quantserve/tensor"
)

// Loss names.
const (
	CrossEntropy = "cross_entropy"
	MSE          = "mse"
)

// lossSeed computes a loss on the model's output (slot out, value y) and
// returns its value with the slot and gradient to start backward from.
//
// cross_entropy takes INT64 class ids, one per row of a [batch, classes]
// output. When the output is a Softmax (or LogSoftmax) over the classes, the
// loss is taken on its input, as softmax cross-entropy, and its gradient
// seeds that input: (softmax - onehot)/batch. Otherwise the output is read
// as logits. mse takes an FP32 target of the output's shape: mean((y-t)²).
func lossSeed(m *model.Model, vals []*tensor.Tensor, out int, loss string, target *tensor.Tensor) (float64, int, []float32, error) {
	y := vals[out]
	yv, err := floats(y, "the output")
	if err != nil {
		return 0, 0, nil, err
	}
	switch loss {
	case MSE:
		t, ok := target.Data.([]float32)
		if !ok || !equalShape(target.Shape, y.Shape) {
			return 0, 0, nil, fmt.Errorf("%w: mse targets must be FP32 of the output's shape %v, got %v%v", errBadRequest, y.Shape, target.DType, target.Shape)
		}
		n := float64(len(yv))
		var l float64
		g := make([]float32, len(yv))
		for i := range yv {
			d := float64(yv[i] - t[i])
			l += d * d
			g[i] = float32(2 * d / n)
		}
		return l / n, out, g, nil
	case CrossEntropy:
		ids, ok := target.Data.([]int64)
		if !ok || y.Rank() != 2 || len(ids) != y.Shape[0] {
			return 0, 0, nil, fmt.Errorf("%w: cross_entropy targets must be INT64 class ids, one per row of the [batch, classes] output %v; got %v%v", errBadRequest, y.Shape, target.DType, target.Shape)
		}
		rows, classes := y.Shape[0], y.Shape[1]
		for _, id := range ids {
			if id < 0 || id >= int64(classes) {
				return 0, 0, nil, fmt.Errorf("%w: class id %d is outside [0, %d)", errBadRequest, id, classes)
			}
		}
		// (Log)Softmax over the classes: the loss is softmax
		// cross-entropy on its input, whose gradient is exact and stable.
		seedSlot, logits := out, yv
		if st, ok := producer(m, out); ok && (norm.Softmax.Has(st.Desc) || norm.LogSoftmax.Has(st.Desc)) && st.In[0] >= 0 {
			var axis int64
			switch at := st.Params.(type) {
			case *norm.SoftmaxAttrs:
				axis = at.Axis
			case *norm.SoftmaxLegacyAttrs:
				axis = at.Axis
			}
			if z, ok := vals[st.In[0]].Data.([]float32); ok && equalShape(vals[st.In[0]].Shape, y.Shape) && (axis == 1 || axis == -1) {
				seedSlot, logits = st.In[0], z
			}
		}
		var l float64
		g := make([]float32, len(logits))
		for r := 0; r < rows; r++ {
			row := logits[r*classes : (r+1)*classes]
			mx := math.Inf(-1)
			for _, v := range row {
				mx = math.Max(mx, float64(v))
			}
			var sum float64
			for _, v := range row {
				sum += math.Exp(float64(v) - mx)
			}
			lse := mx + math.Log(sum)
			l += lse - float64(row[ids[r]])
			for c, v := range row {
				p := math.Exp(float64(v) - lse)
				if int64(c) == ids[r] {
					p--
				}
				g[r*classes+c] = float32(p / float64(rows))
			}
		}
		return l / float64(rows), seedSlot, g, nil
	}
	return 0, 0, nil, fmt.Errorf("%w: unknown loss %q (cross_entropy or mse)", errBadRequest, loss)
}

// producer returns the step that writes slot s.
func producer(m *model.Model, s int) (model.Step, bool) {
	for _, st := range m.Steps() {
		for _, o := range st.Out {
			if o == s {
				return st, true
			}
		}
	}
	return model.Step{}, false
}
