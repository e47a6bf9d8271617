package norm

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestInstanceAndGroupNorm checks both against direct per-group
// statistics, and GroupNormalization-18 (a scale per group) against -21
// (a scale per channel) given the same scales.
func TestInstanceAndGroupNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	N, C, S, G := 2, 6, 5, 3
	x := opstest.Normal(r, N, C, S)
	xv := x.Float64s()
	scaleG, biasG := opstest.Normal(r, G), opstest.Normal(r, G)
	scaleC, biasC := make([]float32, C), make([]float32, C)
	for c := 0; c < C; c++ {
		scaleC[c], biasC[c] = scaleG.Data.([]float32)[c/(C/G)], biasG.Data.([]float32)[c/(C/G)]
	}
	want := func(groups int, scale, bias []float32, eps float64) []float64 {
		y := make([]float64, len(xv))
		per := C / groups * S
		for blk := 0; blk < N*groups; blk++ {
			vals := xv[blk*per : (blk+1)*per]
			var m, v float64
			for _, e := range vals {
				m += e / float64(per)
			}
			for _, e := range vals {
				v += (e - m) * (e - m) / float64(per)
			}
			for j, e := range vals {
				c := (blk*per + j) / S % C
				y[blk*per+j] = float64(scale[c])*(e-m)/math.Sqrt(v+eps) + float64(bias[c])
			}
		}
		return y
	}
	runOn := func(opset int64, op string, x, scale, bias *tensor.Tensor, attrs ...*onnxpb.Attribute) (*tensor.Tensor, error) {
		res, err := run(t, opset, op, 1, []*tensor.Tensor{x, scale, bias}, attrs...)
		if err != nil {
			return nil, err
		}
		return res[0], nil
	}
	sc, bc := tensor.From([]int{C}, scaleC), tensor.From([]int{C}, biasC)
	y21, err := runOn(21, "GroupNormalization", x, sc, bc, opstest.AttrInt("num_groups", int64(G)), opstest.AttrFloat("epsilon", 1e-3))
	if err != nil {
		t.Fatal(err)
	}
	opstest.Close(t, "GroupNormalization-21", y21.Float64s(), want(G, scaleC, biasC, 1e-3), 1e-5)
	y18, err := runOn(18, "GroupNormalization", x, scaleG, biasG, opstest.AttrInt("num_groups", int64(G)), opstest.AttrFloat("epsilon", 1e-3))
	if err != nil {
		t.Fatal(err)
	}
	opstest.Close(t, "GroupNormalization-18", y18.Float64s(), y21.Float64s(), 1e-6)
	yi, err := runOn(22, "InstanceNormalization", x, sc, bc)
	if err != nil {
		t.Fatal(err)
	}
	opstest.Close(t, "InstanceNormalization", yi.Float64s(), want(C, scaleC, biasC, 1e-5), 1e-5)

	if _, err := runOn(21, "GroupNormalization", x, sc, bc, opstest.AttrInt("num_groups", 4)); !errors.Is(err, ops.ErrInput) || !strings.Contains(err.Error(), "do not split into 4 groups") {
		t.Errorf("6 channels in 4 groups: %v", err)
	}
	if _, err := runOn(18, "GroupNormalization", x, sc, bc, opstest.AttrInt("num_groups", int64(G))); !errors.Is(err, ops.ErrInput) {
		t.Errorf("GroupNormalization-18 with a scale per channel: %v", err)
	}
	if _, err := runOn(22, "InstanceNormalization", x, scaleG, biasG); !errors.Is(err, ops.ErrInput) {
		t.Errorf("InstanceNormalization with 3 scales for 6 channels: %v", err)
	}
	for _, c := range []struct {
		opset int64
		attrs []*onnxpb.Attribute
		want  string
	}{
		{21, nil, "needs num_groups"},
		{21, []*onnxpb.Attribute{opstest.AttrInt("num_groups", 2), opstest.AttrInt("stash_type", 7)}, "stash_type 7"},
		{18, []*onnxpb.Attribute{opstest.AttrInt("num_groups", 2), opstest.AttrInt("stash_type", 1)}, `"stash_type" is defined from opset 21`},
	} {
		_, err := compile(c.opset, "GroupNormalization", 3, 1, c.attrs...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("opset %d %v: %v, want %q", c.opset, c.attrs, err, c.want)
		}
	}
	// Zero channels or images: empty outputs, no division by zero.
	empty := tensor.From([]int{0, 6, 5}, []float32{})
	if res, err := runOn(22, "InstanceNormalization", empty, sc, bc); err != nil || res.Len() != 0 {
		t.Errorf("empty batch: %v", err)
	}
	noC := tensor.From([]int{2, 0, 5}, []float32{})
	if res, err := runOn(22, "InstanceNormalization", noC, tensor.From([]int{0}, []float32{}), tensor.From([]int{0}, []float32{})); err != nil || res.Len() != 0 {
		t.Errorf("no channels: %v", err)
	}
}
