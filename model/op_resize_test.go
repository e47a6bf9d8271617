package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/tensor"
)

func geomF32(shape []int, v ...float32) *tensor.Tensor { return tensor.From(shape, v) }

func TestResizeOpsetForms(t *testing.T) {
	x := geomF32([]int{1, 1, 2, 2}, 1, 2, 3, 4)
	got, err := geomRun(7, "Upsample", []geomArg{geomIn("x", x)}, geomStr("mode", "nearest"), geomFloats("scales", 1, 1, 2, 2))
	geomWant(t, got, err, []int{1, 1, 4, 4}, []float32{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4})
	// Upsample 9 and Resize 10: asymmetric coordinates
	row := geomF32([]int{1, 2}, 1, 2)
	got, err = geomRun(9, "Upsample", []geomArg{geomIn("x", row), geomConst("s", geomF32([]int{2}, 1, 2))}, geomStr("mode", "linear"))
	geomWant(t, got, err, []int{1, 4}, []float32{1, 1.5, 2, 2})
	// Resize 10 rounds up when it shrinks
	five := geomF32([]int{1, 5}, 1, 2, 3, 4, 5)
	got, err = geomRun(10, "Resize", []geomArg{geomIn("x", five), geomIn("s", geomF32([]int{2}, 1, 0.6))})
	geomWant(t, got, err, []int{1, 3}, []float32{1, 3, 5})
	// tf_half_pixel_for_nn lives in opsets 11 and 12 only
	empty := geomF32([]int{0})
	got, err = geomRun(11, "Resize", []geomArg{geomIn("x", row), geomConst("roi", empty), geomConst("s", geomF32([]int{2}, 1, 2))}, geomStr("coordinate_transformation_mode", "tf_half_pixel_for_nn"))
	geomWant(t, got, err, []int{1, 4}, []float32{1, 2, 2, 2})
	refused := []struct {
		opset int64
		attr  string
		val   string
	}{
		{13, "coordinate_transformation_mode", "tf_half_pixel_for_nn"},
		{18, "coordinate_transformation_mode", "half_pixel_symmetric"},
		{13, "keep_aspect_ratio_policy", "not_larger"}, // an opset 18 attribute
		{19, "mode", "area"},
		{19, "nearest_mode", "nearest"},
	}
	for _, c := range refused {
		_, err := geomLoad(c.opset, "Resize", []geomArg{geomIn("x", row), geomConst("roi", empty), geomConst("s", geomF32([]int{2}, 1, 2))}, geomStr(c.attr, c.val))
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("opset %d %s=%s: %v", c.opset, c.attr, c.val, err)
		}
	}
	if _, err := geomLoad(7, "Upsample", []geomArg{geomIn("x", row)}, geomFloats("scales", 1, 0.5)); err == nil {
		t.Error("Upsample loads with a scale below 1")
	}
	if _, err := geomRun(9, "Upsample", []geomArg{geomIn("x", row), geomIn("s", geomF32([]int{2}, 1, 0.5))}); !errors.Is(err, ErrInput) {
		t.Errorf("Upsample 9 scale 0.5: %v", err)
	}
}

func TestResizeTypes(t *testing.T) {
	// nearest moves any type; an extrapolated string or bool is its zero value
	s := tensor.From([]int{2}, []string{"a", "b"})
	got, err := geomRun(19, "Resize", []geomArg{geomIn("x", s), geomConst("", nil), geomConst("s", geomF32([]int{1}, 2))})
	geomWant(t, got, err, []int{4}, []string{"a", "a", "b", "b"})
	b := tensor.From([]int{2}, []bool{true, false})
	got, err = geomRun(19, "Resize", []geomArg{geomIn("x", b), geomConst("roi", geomF32([]int{2}, -1, 2)), geomConst("", nil), geomConst("sz", geomI64(4))}, geomStr("coordinate_transformation_mode", "tf_crop_and_resize"))
	geomWant(t, got, err, []int{4}, []bool{false, true, false, false})
	if _, err := geomRun(19, "Resize", []geomArg{geomIn("x", s), geomConst("", nil), geomConst("s", geomF32([]int{1}, 2))}, geomStr("mode", "linear")); !errors.Is(err, ErrInput) {
		t.Errorf("linear strings: %v", err)
	}
	// integers interpolate in float64, saturate and truncate; FP16 rounds once
	vals := []float64{0, 255, 0, 255, 10}
	u8 := make([]uint8, len(vals))
	f64 := make([]float64, len(vals))
	f32 := make([]float32, len(vals))
	for i, v := range vals {
		u8[i], f64[i], f32[i] = uint8(v), v, float32(v)
	}
	args := func(x *tensor.Tensor) []geomArg {
		return []geomArg{geomIn("x", x), geomConst("", nil), geomConst("s", geomF32([]int{1}, 2.5))}
	}
	ref, err := geomRun(19, "Resize", args(tensor.From([]int{5}, f64)), geomStr("mode", "cubic"))
	if err != nil {
		t.Fatal(err)
	}
	got, err = geomRun(19, "Resize", args(tensor.From([]int{5}, u8)), geomStr("mode", "cubic"))
	if err != nil {
		t.Fatal(err)
	}
	over := false
	for i, v := range ref.Data.([]float64) {
		want := uint8(math.Max(math.Min(v, 255), 0))
		over = over || v > 255 || v < 0
		if g := got.Data.([]uint8)[i]; g != want {
			t.Fatalf("uint8[%d] = %d, want %d (from %v)", i, g, want, v)
		}
	}
	if !over {
		t.Fatal("the case does not overshoot: it does not test saturation")
	}
	h, err := geomRun(19, "Resize", args(tensor.From([]int{5}, tensor.Float32ToHalf[tensor.F16](f32))), geomStr("mode", "cubic"))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range ref.Data.([]float64) {
		if g := h.Data.([]tensor.F16)[i]; g != tensor.F16FromFloat64(v) && math.Abs(float64(g.Float32())-v) > 1e-3*math.Abs(v)+1e-3 {
			t.Fatalf("fp16[%d] = %v, want %v", i, g.Float32(), v)
		}
	}
}

func TestResizeRefusesBadInput(t *testing.T) {
	x := geomSeq(1, 2, 3)
	scales := func(v ...float32) []geomArg {
		return []geomArg{geomIn("x", x), geomConst("", nil), geomIn("s", geomF32([]int{len(v)}, v...))}
	}
	sizes := func(v ...int64) []geomArg {
		return []geomArg{geomIn("x", x), geomConst("", nil), geomConst("", nil), geomIn("sz", geomI64(v...))}
	}
	cases := map[string][]geomArg{
		"zero scale":        scales(1, 0, 1),
		"negative scale":    scales(1, -2, 1),
		"NaN scale":         scales(1, float32(math.NaN()), 1),
		"infinite scale":    scales(1, float32(math.Inf(1)), 1),
		"huge scale":        scales(1, 1e12, 1),
		"too large output":  scales(1, 1e5, 1e5),
		"scales count":      scales(1, 2),
		"negative size":     sizes(1, -2, 3),
		"sizes count":       sizes(1, 2),
		"no scales, sizes":  {geomIn("x", x)},
		"scales and sizes":  {geomIn("x", x), geomConst("", nil), geomIn("s", geomF32([]int{3}, 1, 1, 1)), geomIn("sz", geomI64(1, 2, 3))},
		"integer scales":    {geomIn("x", x), geomConst("", nil), geomIn("s", geomI64(1, 1, 1))},
		"float sizes":       {geomIn("x", x), geomConst("", nil), geomConst("", nil), geomIn("sz", geomF32([]int{3}, 1, 2, 3))},
		"a size from empty": {geomIn("x", geomSeq(1, 0, 3)), geomConst("", nil), geomConst("", nil), geomIn("sz", geomI64(1, 2, 3))},
	}
	for name, args := range cases {
		if _, err := geomRun(19, "Resize", args, geomStr("mode", "linear")); !errors.Is(err, ErrInput) {
			t.Errorf("%s: got %v, want an input error", name, err)
		}
	}
	crop := []geomArg{geomIn("x", x), geomIn("roi", geomF32([]int{2}, 0, 1)), geomConst("", nil), geomConst("sz", geomI64(1, 2, 3))}
	if _, err := geomRun(19, "Resize", crop, geomStr("coordinate_transformation_mode", "tf_crop_and_resize")); !errors.Is(err, ErrInput) {
		t.Errorf("roi of 2 values for 3 axes: %v", err)
	}
	if _, err := geomRun(19, "Resize", sizes(2, 3), geomInts("axes", 1, -2)); !errors.Is(err, ErrInput) {
		t.Errorf("repeated axes: %v", err)
	}
	// empty axes stay empty; a zero size empties the output
	got, err := geomRun(19, "Resize", []geomArg{geomIn("x", geomSeq(2, 0, 3)), geomConst("", nil), geomIn("s", geomF32([]int{3}, 2, 2, 2))}, geomStr("mode", "linear"))
	geomWant(t, got, err, []int{4, 0, 6}, []float32{})
	got, err = geomRun(19, "Resize", sizes(1, 0, 3), geomStr("mode", "cubic"))
	geomWant(t, got, err, []int{1, 0, 3}, []float32{})
}

// resizeByPasses is the general path: one pass per axis, in float64.
func resizeByPasses(x []float32, shape []int, p *ResizePlan) []float64 {
	cur := append([]int(nil), shape...)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	for i := range p.Axes {
		ax := &p.Axes[i]
		outer, inner := 1, 1
		for _, d := range cur[:ax.Axis] {
			outer *= d
		}
		for _, d := range cur[ax.Axis+1:] {
			inner *= d
		}
		out = resizePass(out, outer, ax.In, inner, ax)
		cur[ax.Axis] = ax.Out
	}
	resizeExtrapolate(out, p)
	return out
}

// TestResizeFastPathsMatchPasses compares the one-pass bilinear kernel
// (and the float32 passes) with the float64 axis-by-axis passes, and the
// nearest gather with the taps, on random images and every coordinate
// mode.
func TestResizeFastPathsMatchPasses(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	modes := []string{"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric", "tf_crop_and_resize"}
	fast := 0
	defer func() {
		if fast < 10 {
			t.Errorf("only %d trials ran the one-pass bilinear kernel", fast)
		}
	}()
	for trial := 0; trial < 120; trial++ {
		shape := []int{1 + r.IntN(2), 1 + r.IntN(3), 1 + r.IntN(9), 1 + r.IntN(9)}
		n, _ := tensor.NumElements(shape)
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		cfg := &ResizeAttrs{Mode: []string{"linear", "nearest", "cubic"}[trial%3], CoordinateTransformationMode: modes[(trial/3)%len(modes)], NearestMode: "round_prefer_floor", CubicCoeffA: -0.75}
		c, err := resizeConfigOf("Resize", &Resize18Attrs{
			Mode: cfg.Mode, CoordinateTransformationMode: cfg.CoordinateTransformationMode, NearestMode: cfg.NearestMode,
			CubicCoeffA: cfg.CubicCoeffA, KeepAspectRatioPolicy: "stretch", Antialias: trial%5 == 0,
		}, 19)
		if err != nil {
			t.Fatal(err)
		}
		sc := []float32{1, 1, float32(0.4 + 2.5*r.Float64()), float32(0.4 + 2.5*r.Float64())}
		roi := geomF32([]int{8}, 0, 0, 0.1, -0.2, 1, 1, 0.9, 1.3)
		p, err := c.plan([]*tensor.Tensor{tensor.From(shape, x), roi, geomF32([]int{4}, sc...)})
		if err != nil {
			t.Fatal(err)
		}
		if total, _ := tensor.NumElements(p.Shape); total == 0 {
			continue
		}
		if len(p.Axes) == 2 && bilinear2D(p.Axes, 4) {
			fast++
		}
		y, err := resizeApply(tensor.From(shape, x), p)
		if err != nil {
			t.Fatal(err)
		}
		got := y.Data.([]float32)
		var want []float64
		if p.Nearest {
			// every output element is the one input element its taps name
			want = resizeByPasses(x, shape, &ResizePlan{Shape: p.Shape, Axes: nearestAsWeights(p.Axes), Extrapolation: p.Extrapolation})
		} else {
			want = resizeByPasses(x, shape, p)
		}
		if len(got) != len(want) {
			t.Fatalf("%d outputs, want %d", len(got), len(want))
		}
		for i := range want {
			if math.Abs(float64(got[i])-want[i]) > 1e-5*(1+math.Abs(want[i])) {
				t.Fatalf("trial %d (%s %s, scales %v, shape %v): y[%d] = %v, want %v", trial, cfg.Mode, cfg.CoordinateTransformationMode, sc, shape, i, got[i], want[i])
			}
		}
	}
}

func nearestAsWeights(axes []ResizeAxis) []ResizeAxis {
	out := make([]ResizeAxis, len(axes))
	for i, ax := range axes {
		ax.Weight = make([]float64, len(ax.Index))
		for k := range ax.Weight {
			ax.Weight[k] = 1
		}
		out[i] = ax
	}
	return out
}

func BenchmarkResize(b *testing.B) {
	shape := []int{1, 256, 64, 64}
	n, _ := tensor.NumElements(shape)
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i%251) / 251
	}
	xt := tensor.From(shape, x)
	scales := geomF32([]int{4}, 1, 1, 2, 2)
	for _, mode := range []string{"linear", "nearest"} {
		c, err := resizeConfigOf("Resize", &Resize18Attrs{Mode: mode, CoordinateTransformationMode: "half_pixel", NearestMode: "round_prefer_floor", CubicCoeffA: -0.75, KeepAspectRatioPolicy: "stretch"}, 19)
		if err != nil {
			b.Fatal(err)
		}
		p, err := c.plan([]*tensor.Tensor{xt, nil, scales})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%s_2x_1x256x64x64", mode), func(b *testing.B) {
			b.SetBytes(int64(4 * 4 * n))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.run([]*tensor.Tensor{xt, nil, scales}); err != nil {
					b.Fatal(err)
				}
			}
		})
		if mode == "linear" {
			// the general float32 path: one pass per axis
			b.Run("linear_2x_1x256x64x64_passes", func(b *testing.B) {
				b.SetBytes(int64(4 * 4 * n))
				b.ReportAllocs()
				for b.Loop() {
					cur := x
					dims := []int{256, 64, 64}
					for i := range p.Axes {
						ax := &p.Axes[i]
						outer, inner := 1, 1
						for _, d := range dims[:ax.Axis-1] {
							outer *= d
						}
						for _, d := range dims[ax.Axis:] {
							inner *= d
						}
						cur = resizePass(cur, outer, ax.In, inner, ax)
						dims[ax.Axis-1] = ax.Out
					}
				}
			})
		} else {
			// element by element: the gather without its row paths
			src := make([][]int, 4)
			for d := range src {
				src[d] = make([]int, p.Shape[d])
				for i := range src[d] {
					src[d][i] = i
				}
			}
			for _, ax := range p.Axes {
				src[ax.Axis] = ax.Index
			}
			b.Run("nearest_2x_1x256x64x64_elementwise", func(b *testing.B) {
				b.SetBytes(int64(4 * 4 * n))
				b.ReportAllocs()
				for b.Loop() {
					naiveGather(x, shape, p.Shape, src, 0)
				}
			})
		}
	}
}

func BenchmarkPad(b *testing.B) {
	shape := []int{1, 64, 112, 112}
	n, _ := tensor.NumElements(shape)
	x := tensor.From(shape, make([]float32, n))
	pads := []int64{0, 0, 1, 1, 0, 0, 1, 1}
	out := []int{1, 64, 114, 114}
	m, _ := tensor.NumElements(out)
	for _, mode := range []string{"constant", "edge"} {
		b.Run(mode+"_1x64x112x112_by1", func(b *testing.B) {
			b.SetBytes(int64(4 * m))
			b.ReportAllocs()
			for b.Loop() {
				o, src, err := padSource(x.Shape, mode, pads)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := geomGather(x, o, src, nil); err != nil {
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
