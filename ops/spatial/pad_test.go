package spatial

import (
	"errors"
	"fmt"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestPadModes(t *testing.T) {
	x := seq(1, 4) // 1 2 3 4
	cases := []struct {
		mode  string
		pads  []int64
		shape []int
		want  []float32
	}{
		{"constant", []int64{0, 2, 0, 1}, []int{1, 7}, []float32{9, 9, 1, 2, 3, 4, 9}},
		{"edge", []int64{0, 2, 0, 1}, []int{1, 7}, []float32{1, 1, 1, 2, 3, 4, 4}},
		{"reflect", []int64{0, 2, 0, 1}, []int{1, 7}, []float32{3, 2, 1, 2, 3, 4, 3}},
		{"wrap", []int64{0, 2, 0, 1}, []int{1, 7}, []float32{3, 4, 1, 2, 3, 4, 1}},
		// pads beyond the axis: reflect and wrap repeat
		{"reflect", []int64{0, 7, 0, 0}, []int{1, 11}, []float32{2, 1, 2, 3, 4, 3, 2, 1, 2, 3, 4}},
		{"wrap", []int64{0, 6, 0, 0}, []int{1, 10}, []float32{3, 4, 1, 2, 3, 4, 1, 2, 3, 4}},
		// negative pads crop first; the rest is padded from what is left
		{"wrap", []int64{0, -1, 0, 2}, []int{1, 5}, []float32{2, 3, 4, 2, 3}},
		{"edge", []int64{0, 1, 0, -2}, []int{1, 3}, []float32{1, 1, 2}},
		{"constant", []int64{1, -1, -1, 0}, []int{1, 3}, []float32{9, 9, 9}},
		{"constant", []int64{0, -1, 0, -3}, []int{1, 0}, []float32{}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.mode, c.pads), func(t *testing.T) {
			got, err := run(t, 19, "Pad", ins(x, opstest.I64s(c.pads...), tensor.Scalar(float32(9))), opstest.AttrString("mode", c.mode))
			check(t, got, err, c.shape, c.want)
			// the opset-2 form takes the same pads as attributes
			if c.mode != "wrap" {
				got, err = run(t, 7, "Pad", ins(x), opstest.AttrString("mode", c.mode), opstest.AttrInts("pads", c.pads...), opstest.AttrFloat("value", 9))
				check(t, got, err, c.shape, c.want)
			}
		})
	}
}

func TestPadAxesAndTypes(t *testing.T) {
	x := tensor.From([]int{2, 2}, []string{"a", "b", "c", "d"})
	got, err := run(t, 18, "Pad", ins(x, opstest.I64s(1, 0), tensor.Scalar("z"), tensor.From([]int{1}, []int32{-1})))
	check(t, got, err, []int{2, 3}, []string{"z", "a", "b", "z", "c", "d"})
	h := tensor.From([]int{3}, tensor.Float32ToHalf[tensor.BF16]([]float32{1, 2, 3}))
	got, err = run(t, 13, "Pad", ins(h, opstest.I64s(1, 1)), opstest.AttrString("mode", "reflect"))
	check(t, got, err, []int{5}, tensor.Float32ToHalf[tensor.BF16]([]float32{2, 1, 2, 3, 2}))
	// a zero-size axis pads with the constant only
	got, err = run(t, 13, "Pad", ins(tensor.From([]int{0, 2}, []float32{}), opstest.I64s(1, 0, 1, 0)))
	check(t, got, err, []int{2, 2}, []float32{0, 0, 0, 0})
	// a scalar pads nothing
	got, err = run(t, 13, "Pad", ins(tensor.Scalar(float32(5)), opstest.I64s()))
	check(t, got, err, nil, []float32{5})
}

func TestPadRefusesBadInput(t *testing.T) {
	x := seq(2, 3)
	bad := []struct {
		name  string
		opset int64
		in    []*tensor.Tensor
		mode  string
	}{
		{"pads too short", 13, ins(x, opstest.I64s(1, 1)), "constant"},
		{"crop past the axis", 13, ins(x, opstest.I64s(0, -2, 0, -2)), "constant"},
		{"reflect an emptied axis", 13, ins(x, opstest.I64s(0, -3, 0, 1)), "reflect"},
		{"huge pad", 13, ins(x, opstest.I64s(1<<40, 0, 0, 0)), "constant"},
		{"output too large", 13, ins(x, opstest.I64s(1<<30, 1<<30, 0, 0)), "constant"},
		{"float pads", 13, ins(x, tensor.From([]int{4}, []float32{0, 0, 0, 0})), "constant"},
		{"value of another type", 13, ins(x, opstest.I64s(0, 0, 0, 0), tensor.Scalar(int64(1))), "constant"},
		{"repeated axes", 18, ins(x, opstest.I64s(0, 0, 0, 0), tensor.Scalar(float32(0)), opstest.I64s(1, -1)), "constant"},
		{"axis out of range", 18, ins(x, opstest.I64s(0, 0), tensor.Scalar(float32(0)), opstest.I64s(2)), "constant"},
	}
	for _, c := range bad {
		_, err := run(t, c.opset, "Pad", c.in, opstest.AttrString("mode", c.mode))
		if !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: got %v, want an input error", c.name, err)
		}
	}
	// wrap arrived in opset 19, axes in 18
	if err := compile(18, "Pad", 2, opstest.AttrString("mode", "wrap")); !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("wrap at opset 18: %v", err)
	}
	if err := compile(13, "Pad", 4); err == nil {
		t.Error("Pad with an axes input compiles at opset 13")
	}
}

// TestPadMap checks the map the gradient of Pad reads against the forward
// pass, in both forms.
func TestPadMap(t *testing.T) {
	x := seq(1, 4)
	out, src, err := PadMap("Pad", &Pad11Attrs{Mode: "reflect"}, 13, ins(x, opstest.I64s(0, 2, 0, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(out, src) != "[1 7] [[0] [2 1 0 1 2 3 2]]" {
		t.Errorf("Pad 13 map: %v %v", out, src)
	}
	out2, src2, err := PadMap("Pad", &PadAttrs{Mode: "reflect", Pads: []int64{0, 2, 0, 1}}, 7, ins(x))
	if err != nil || fmt.Sprint(out2, src2) != fmt.Sprint(out, src) {
		t.Errorf("Pad 7 map: %v %v, %v", out2, src2, err)
	}
	if _, _, err := PadMap("Resize", &ResizeAttrs{}, 13, ins(x)); err == nil || err.Error() != "model: PadMap of a Resize node" {
		t.Errorf("PadMap of Resize: %v", err)
	}
}

func BenchmarkPad(b *testing.B) {
	shape := []int{1, 64, 112, 112}
	n, _ := tensor.NumElements(shape)
	x := tensor.From(shape, make([]float32, n))
	pads := []int64{0, 0, 1, 1, 0, 0, 1, 1}
	out := []int{1, 64, 114, 114}
	m, _ := tensor.NumElements(out)
	c := opstest.Background()
	for _, mode := range []string{"constant", "edge"} {
		b.Run(mode+"_1x64x112x112_by1", func(b *testing.B) {
			b.SetBytes(int64(4 * m))
			b.ReportAllocs()
			for b.Loop() {
				o, src, err := padSource(x.Shape, mode, pads)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := gather(c, x, o, src, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(mode+"_1x64x112x112_by1_elementwise", func(b *testing.B) {
			b.SetBytes(int64(4 * m))
			b.ReportAllocs()
			for b.Loop() {
				o, src, _ := padSource(x.Shape, mode, pads)
				naiveGather(x.Data.([]float32), shape, o, src, 0)
			}
		})
	}
}
