package spatial

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestResizeOpsetForms(t *testing.T) {
	x := opstest.F32s([]int{1, 1, 2, 2}, 1, 2, 3, 4)
	got, err := run(t, 7, "Upsample", ins(x), opstest.AttrString("mode", "nearest"), opstest.AttrFloats("scales", 1, 1, 2, 2))
	check(t, got, err, []int{1, 1, 4, 4}, []float32{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4})
	// Upsample 9 and Resize 10: asymmetric coordinates
	row := opstest.F32s([]int{1, 2}, 1, 2)
	got, err = run(t, 9, "Upsample", ins(row, opstest.F32s([]int{2}, 1, 2)), opstest.AttrString("mode", "linear"))
	check(t, got, err, []int{1, 4}, []float32{1, 1.5, 2, 2})
	// Resize 10 rounds up when it shrinks
	five := opstest.F32s([]int{1, 5}, 1, 2, 3, 4, 5)
	got, err = run(t, 10, "Resize", ins(five, opstest.F32s([]int{2}, 1, 0.6)))
	check(t, got, err, []int{1, 3}, []float32{1, 3, 5})
	// tf_half_pixel_for_nn lives in opsets 11 and 12 only
	empty := opstest.F32s([]int{0})
	got, err = run(t, 11, "Resize", ins(row, empty, opstest.F32s([]int{2}, 1, 2)), opstest.AttrString("coordinate_transformation_mode", "tf_half_pixel_for_nn"))
	check(t, got, err, []int{1, 4}, []float32{1, 2, 2, 2})
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
		err := compile(c.opset, "Resize", 3, opstest.AttrString(c.attr, c.val))
		if !errors.Is(err, ops.ErrUnsupported) {
			t.Errorf("opset %d %s=%s: %v", c.opset, c.attr, c.val, err)
		}
	}
	if err := compile(7, "Upsample", 1, opstest.AttrFloats("scales", 1, 0.5)); err == nil {
		t.Error("Upsample compiles with a scale below 1")
	}
	if _, err := run(t, 9, "Upsample", ins(row, opstest.F32s([]int{2}, 1, 0.5))); !errors.Is(err, ops.ErrInput) {
		t.Errorf("Upsample 9 scale 0.5: %v", err)
	}
}

func TestResizeTypes(t *testing.T) {
	// nearest moves any type; an extrapolated string or bool is its zero value
	s := tensor.From([]int{2}, []string{"a", "b"})
	got, err := run(t, 19, "Resize", ins(s, nil, opstest.F32s([]int{1}, 2)))
	check(t, got, err, []int{4}, []string{"a", "a", "b", "b"})
	b := tensor.From([]int{2}, []bool{true, false})
	got, err = run(t, 19, "Resize", ins(b, opstest.F32s([]int{2}, -1, 2), nil, opstest.I64s(4)), opstest.AttrString("coordinate_transformation_mode", "tf_crop_and_resize"))
	check(t, got, err, []int{4}, []bool{false, true, false, false})
	if _, err := run(t, 19, "Resize", ins(s, nil, opstest.F32s([]int{1}, 2)), opstest.AttrString("mode", "linear")); !errors.Is(err, ops.ErrInput) {
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
	args := func(x *tensor.Tensor) []*tensor.Tensor {
		return ins(x, nil, opstest.F32s([]int{1}, 2.5))
	}
	ref, err := run(t, 19, "Resize", args(tensor.From([]int{5}, f64)), opstest.AttrString("mode", "cubic"))
	if err != nil {
		t.Fatal(err)
	}
	got, err = run(t, 19, "Resize", args(tensor.From([]int{5}, u8)), opstest.AttrString("mode", "cubic"))
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
	h, err := run(t, 19, "Resize", args(tensor.From([]int{5}, tensor.Float32ToHalf[tensor.F16](f32))), opstest.AttrString("mode", "cubic"))
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
	x := seq(1, 2, 3)
	scales := func(v ...float32) []*tensor.Tensor {
		return ins(x, nil, opstest.F32s([]int{len(v)}, v...))
	}
	sizes := func(v ...int64) []*tensor.Tensor {
		return ins(x, nil, nil, opstest.I64s(v...))
	}
	cases := map[string][]*tensor.Tensor{
		"zero scale":        scales(1, 0, 1),
		"negative scale":    scales(1, -2, 1),
		"NaN scale":         scales(1, float32(math.NaN()), 1),
		"infinite scale":    scales(1, float32(math.Inf(1)), 1),
		"huge scale":        scales(1, 1e12, 1),
		"too large output":  scales(1, 1e5, 1e5),
		"scales count":      scales(1, 2),
		"negative size":     sizes(1, -2, 3),
		"sizes count":       sizes(1, 2),
		"no scales, sizes":  {x},
		"scales and sizes":  {x, nil, opstest.F32s([]int{3}, 1, 1, 1), opstest.I64s(1, 2, 3)},
		"integer scales":    {x, nil, opstest.I64s(1, 1, 1)},
		"float sizes":       {x, nil, nil, opstest.F32s([]int{3}, 1, 2, 3)},
		"a size from empty": {seq(1, 0, 3), nil, nil, opstest.I64s(1, 2, 3)},
	}
	for name, args := range cases {
		if _, err := run(t, 19, "Resize", args, opstest.AttrString("mode", "linear")); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: got %v, want an input error", name, err)
		}
	}
	crop := ins(x, opstest.F32s([]int{2}, 0, 1), nil, opstest.I64s(1, 2, 3))
	if _, err := run(t, 19, "Resize", crop, opstest.AttrString("coordinate_transformation_mode", "tf_crop_and_resize")); !errors.Is(err, ops.ErrInput) {
		t.Errorf("roi of 2 values for 3 axes: %v", err)
	}
	if _, err := run(t, 19, "Resize", sizes(2, 3), opstest.AttrInts("axes", 1, -2)); !errors.Is(err, ops.ErrInput) {
		t.Errorf("repeated axes: %v", err)
	}
	// empty axes stay empty; a zero size empties the output
	got, err := run(t, 19, "Resize", ins(seq(2, 0, 3), nil, opstest.F32s([]int{3}, 2, 2, 2)), opstest.AttrString("mode", "linear"))
	check(t, got, err, []int{4, 0, 6}, []float32{})
	got, err = run(t, 19, "Resize", sizes(1, 0, 3), opstest.AttrString("mode", "cubic"))
	check(t, got, err, []int{1, 0, 3}, []float32{})
}

// TestResizePlanOf checks the plan the gradient of Resize reads: the
// axes that resample, with their taps.
func TestResizePlanOf(t *testing.T) {
	x := opstest.F32s([]int{1, 2}, 1, 2)
	p, err := ResizePlanOf("Upsample", &UpsampleAttrs{Mode: "nearest", Scales: []float32{1, 2}}, 7, ins(x))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(p.Shape, len(p.Axes), p.Axes[0].Axis, p.Axes[0].Taps, p.Axes[0].Index, p.Nearest) != "[1 4] 1 1 1 [0 0 1 1] true" {
		t.Errorf("Upsample 7 plan: %+v", p)
	}
	p, err = ResizePlanOf("Resize", &ResizeModeAttrs{Mode: "linear"}, 10, ins(x, opstest.F32s([]int{2}, 1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if ax := p.Axes[0]; fmt.Sprint(ax.Index, ax.Weight) != "[0 0 0 1 0 1 1 1] [0 1 0.5 0.5 0 1 0.5 0.5]" {
		t.Errorf("Resize 10 plan: %+v", ax)
	}
	if _, err := ResizePlanOf("Pad", &PadAttrs{}, 10, ins(x)); err == nil || err.Error() != "model: Pad with attributes *spatial.PadAttrs" {
		t.Errorf("ResizePlanOf of Pad: %v", err)
	}
}

// resizeByPasses is the general path: one pass per axis, in float64.
func resizeByPasses(t *testing.T, x []float32, shape []int, p *ResizePlan) []float64 {
	t.Helper()
	c := opstest.Background()
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
		var err error
		if out, err = resizePass(c, out, outer, ax.In, inner, ax); err != nil {
			t.Fatal(err)
		}
		cur[ax.Axis] = ax.Out
	}
	if err := resizeExtrapolate(c, out, p); err != nil {
		t.Fatal(err)
	}
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
		roi := opstest.F32s([]int{8}, 0, 0, 0.1, -0.2, 1, 1, 0.9, 1.3)
		p, err := c.plan([]*tensor.Tensor{tensor.From(shape, x), roi, opstest.F32s([]int{4}, sc...)})
		if err != nil {
			t.Fatal(err)
		}
		if total, _ := tensor.NumElements(p.Shape); total == 0 {
			continue
		}
		if len(p.Axes) == 2 && bilinear2D(p.Axes, 4) {
			fast++
		}
		y, err := resizeApply(opstest.Background(), tensor.From(shape, x), p)
		if err != nil {
			t.Fatal(err)
		}
		got := y.Data.([]float32)
		var want []float64
		if p.Nearest {
			// every output element is the one input element its taps name
			want = resizeByPasses(t, x, shape, &ResizePlan{Shape: p.Shape, Axes: nearestAsWeights(p.Axes), Extrapolation: p.Extrapolation})
		} else {
			want = resizeByPasses(t, x, shape, p)
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
	scales := opstest.F32s([]int{4}, 1, 1, 2, 2)
	ctx := opstest.Background()
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
				if _, err := c.Run(ctx, []*tensor.Tensor{xt, nil, scales}); err != nil {
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
						cur, _ = resizePass(ctx, cur, outer, ax.In, inner, ax)
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
