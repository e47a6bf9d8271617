package spatial

import (
	"errors"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestDepthToSpaceRoundTrip(t *testing.T) {
	x := seq(2, 8, 2, 3)
	for _, mode := range []string{"DCR", "CRD"} {
		d2s, err := run(t, 13, "DepthToSpace", ins(x), opstest.AttrInt("blocksize", 2), opstest.AttrString("mode", mode))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(d2s.Shape, []int{2, 2, 4, 6}) {
			t.Fatalf("%s: shape %v", mode, d2s.Shape)
		}
		if mode == "CRD" {
			continue // SpaceToDepth inverts DCR
		}
		back, err := run(t, 13, "SpaceToDepth", ins(d2s), opstest.AttrInt("blocksize", 2))
		check(t, back, err, x.Shape, x.Data)
	}
	// CRD: channel c·4 + i·2 + j lands at (2h+i, 2w+j) of channel c
	x = seq(1, 4, 1, 1)
	got, err := run(t, 13, "DepthToSpace", ins(x), opstest.AttrInt("blocksize", 2), opstest.AttrString("mode", "CRD"))
	check(t, got, err, []int{1, 1, 2, 2}, []float32{1, 2, 3, 4})
	// opset 1 has no mode (DCR) and takes every type
	s := tensor.From([]int{1, 4, 1, 1}, []string{"a", "b", "c", "d"})
	got, err = run(t, 9, "DepthToSpace", ins(s), opstest.AttrInt("blocksize", 2))
	check(t, got, err, []int{1, 1, 2, 2}, []string{"a", "b", "c", "d"})
	got, err = run(t, 13, "DepthToSpace", ins(tensor.From([]int{0, 4, 1, 1}, []float32{})), opstest.AttrInt("blocksize", 2))
	check(t, got, err, []int{0, 1, 2, 2}, []float32{})
	for _, c := range []struct {
		op string
		x  *tensor.Tensor
	}{{"DepthToSpace", seq(1, 3, 2, 2)}, {"DepthToSpace", seq(4, 2, 2)}, {"SpaceToDepth", seq(1, 1, 3, 4)}} {
		if _, err := run(t, 13, c.op, ins(c.x), opstest.AttrInt("blocksize", 2)); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s %v: %v", c.op, c.x.Shape, err)
		}
	}
	if err := compile(13, "DepthToSpace", 1, opstest.AttrInt("blocksize", 0)); err == nil {
		t.Error("blocksize 0 compiles")
	}
	if err := compile(9, "DepthToSpace", 1, opstest.AttrInt("blocksize", 2), opstest.AttrString("mode", "CRD")); !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("mode at opset 9: %v", err)
	}
}
