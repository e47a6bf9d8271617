package detection

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "NonMaxSuppression", Since: 10, Fold: true}, buildNonMaxSuppression)
}

// NonMaxSuppressionAttrs are NonMaxSuppression's attributes.
type NonMaxSuppressionAttrs struct {
	CenterPointBox int64 `onnx:"center_point_box"`
}

// box is a box as [min, max] per axis.
type box struct{ x0, x1, y0, y1 float32 }

func corners(b []float32, center bool) box {
	if center { // [x_center, y_center, width, height]
		return box{b[0] - b[2]/2, b[0] + b[2]/2, b[1] - b[3]/2, b[1] + b[3]/2}
	}
	// [y1, x1, y2, x2], any diagonal pair of corners
	return box{min(b[1], b[3]), max(b[1], b[3]), min(b[0], b[2]), max(b[0], b[2])}
}

// overlaps reports whether the intersection over union of a and b exceeds
// threshold; empty or degenerate boxes never do.
func (a box) overlaps(b box, threshold float32) bool {
	ix0, ix1 := max(a.x0, b.x0), min(a.x1, b.x1)
	iy0, iy1 := max(a.y0, b.y0), min(a.y1, b.y1)
	if ix1 <= ix0 || iy1 <= iy0 {
		return false
	}
	inter := (ix1 - ix0) * (iy1 - iy0)
	areaA := (a.x1 - a.x0) * (a.y1 - a.y0)
	areaB := (b.x1 - b.x0) * (b.y1 - b.y0)
	union := areaA + areaB - inter
	if inter <= 0 || areaA <= 0 || areaB <= 0 || union <= 0 {
		return false
	}
	return inter/union > threshold
}

// nonMaxSuppression is a compiled NonMaxSuppression: how its boxes are
// given.
type nonMaxSuppression struct {
	center bool // [x_center, y_center, width, height] rather than corners
}

func buildNonMaxSuppression(n *ops.Node, at *NonMaxSuppressionAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 5, 1, 1); err != nil {
		return nil, err
	}
	if at.CenterPointBox != 0 && at.CenterPointBox != 1 {
		return nil, fmt.Errorf("center_point_box %d is not 0 or 1", at.CenterPointBox)
	}
	return &nonMaxSuppression{center: at.CenterPointBox == 1}, nil
}

func (op *nonMaxSuppression) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	boxes, ok1 := in[0].Data.([]float32)
	scores, ok2 := in[1].Data.([]float32)
	if !ok1 || !ok2 || in[0].Rank() != 3 || in[0].Shape[2] != 4 || in[1].Rank() != 3 || in[1].Shape[0] != in[0].Shape[0] || in[1].Shape[2] != in[0].Shape[1] {
		return nil, ops.InputErrorf("NonMaxSuppression takes FP32 boxes [batches, boxes, 4] and scores [batches, classes, boxes], got %v%s and %v%s",
			in[0].DType, tensor.ShapeString(in[0].Shape), in[1].DType, tensor.ShapeString(in[1].Shape))
	}
	batches, nBoxes, classes := in[0].Shape[0], in[0].Shape[1], in[1].Shape[1]
	var limit int64
	if t := ops.Optional(in, 2); t != nil && t.Len() > 0 {
		v, err := ops.ScalarInt(t, "max_output_boxes_per_class")
		if err != nil {
			return nil, err
		}
		limit = max(v, 0)
	}
	iou, _, err := scalarFloat(in, 3, "iou_threshold")
	if err != nil {
		return nil, err
	}
	scoreMin, hasScoreMin, err := scalarFloat(in, 4, "score_threshold")
	if err != nil {
		return nil, err
	}
	var selected []int64
	type cand struct {
		score float32
		idx   int
	}
	cands := make([]cand, 0, nBoxes)
	var kept []box
	for b := 0; b < batches; b++ {
		for cl := 0; cl < classes; cl++ {
			if err := c.Err(); err != nil {
				return nil, err
			}
			cands = cands[:0]
			row := scores[(b*classes+cl)*nBoxes : (b*classes+cl+1)*nBoxes]
			for i, s := range row {
				if !hasScoreMin || s > scoreMin {
					cands = append(cands, cand{s, i})
				}
			}
			// best score first; equal scores keep the lower index first
			slices.SortStableFunc(cands, func(x, y cand) int { return cmp.Compare(y.score, x.score) })
			kept = kept[:0]
			for _, cd := range cands {
				if int64(len(kept)) >= limit {
					break
				}
				if err := c.Tick(len(kept) + 1); err != nil { // the overlaps weighed
					return nil, err
				}
				bx := corners(boxes[(b*nBoxes+cd.idx)*4:(b*nBoxes+cd.idx+1)*4], op.center)
				if slices.ContainsFunc(kept, func(k box) bool { return bx.overlaps(k, iou) }) {
					continue
				}
				kept = append(kept, bx)
				selected = append(selected, int64(b), int64(cl), int64(cd.idx))
			}
		}
	}
	return []*tensor.Tensor{tensor.From([]int{len(selected) / 3, 3}, selected)}, nil
}

// scalarFloat reads the optional one-value FP32 input i: its value and
// whether it is given.
func scalarFloat(in []*tensor.Tensor, i int, what string) (float32, bool, error) {
	t := ops.Optional(in, i)
	if t == nil || t.Len() == 0 {
		return 0, false, nil
	}
	v, ok := t.Data.([]float32)
	if !ok || len(v) != 1 {
		return 0, false, ops.InputErrorf("%s must be one FP32 value", what)
	}
	return v[0], true, nil
}
