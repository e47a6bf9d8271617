package conv

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/quant"
)

// qgatherCase is a convolution whose im2col rows are quantized from the
// image: input shape (NC…), weight shape, group, strides, dilations and
// pads.
type qgatherCase struct {
	x, w               []int
	group              int
	strides, dil, pads []int64
	from               string // which rows are quantized from the image: "both", "static" or "none"
}

func qgatherCases() []qgatherCase {
	return []qgatherCase{
		{x: []int{2, 16, 7, 6}, w: []int{8, 16, 3, 3}, group: 1, pads: []int64{1, 1, 1, 1}, from: "both"},
		{x: []int{2, 8, 9, 9}, w: []int{5, 8, 3, 3}, group: 1, strides: []int64{2, 2}, pads: []int64{1, 1, 1, 1}, from: "both"},
		{x: []int{2, 16, 8, 8}, w: []int{7, 16, 3, 1}, group: 1, strides: []int64{1, 2}, pads: []int64{1, 0, 1, 0}, from: "both"}, // odd columns unread
		{x: []int{1, 8, 9, 8}, w: []int{6, 8, 3, 3}, group: 1, dil: []int64{2, 2}, pads: []int64{2, 2, 2, 2}, from: "both"},
		{x: []int{2, 16, 6, 7}, w: []int{4, 8, 3, 3}, group: 2, pads: []int64{1, 1, 1, 1}, from: "both"},
		{x: []int{1, 9, 5, 6}, w: []int{3, 9, 2, 3}, group: 1, pads: []int64{0, 1, 2, 0}, from: "both"},
		{x: []int{2, 8, 13}, w: []int{5, 8, 5}, group: 1, pads: []int64{2, 2}, from: "both"},
		{x: []int{1, 8, 3, 4, 3}, w: []int{4, 8, 2, 2, 2}, group: 1, pads: []int64{1, 0, 1, 1, 1, 0}, from: "both"},
		{x: []int{1, 8, 2, 2}, w: []int{3, 8, 3, 3}, group: 1, pads: []int64{3, 3, 3, 3}, from: "both"}, // rows all padding
		{x: []int{1, 64, 6, 5}, w: []int{16, 64, 3, 3}, group: 1, pads: []int64{1, 1, 1, 1}, from: "both"},
		{x: []int{2, 16, 64, 64}, w: []int{4, 16, 3, 3}, group: 1, pads: []int64{1, 1, 1, 1}, from: "both"}, // prepared on two threads
		{x: []int{2, 3, 7, 7}, w: []int{4, 3, 3, 3}, group: 1, strides: []int64{2, 2}, pads: []int64{1, 1, 1, 1}, from: "static"},
		{x: []int{1, 12, 5, 5}, w: []int{6, 4, 3, 3}, group: 3, pads: []int64{1, 1, 1, 1}, from: "static"},
		{x: []int{2, 16, 8, 8}, w: []int{7, 16, 1, 1}, group: 1, strides: []int64{2, 2}, from: "both"},                          // a pixel in four read
		{x: []int{2, 8, 9, 9}, w: []int{5, 8, 3, 3}, group: 1, strides: []int64{3, 3}, pads: []int64{1, 0, 1, 0}, from: "both"}, // each read once
		{x: []int{1, 4, 8, 8}, w: []int{7, 4, 1, 1}, group: 1, strides: []int64{2, 2}, from: "none"},
	}
}

func (c qgatherCase) String() string {
	return fmt.Sprintf("x%v w%v group %d strides %v dilations %v pads %v", c.x, c.w, c.group, c.strides, c.dil, c.pads)
}

// qgatherImage returns random images channels-last of c's input shape,
// with awkward pixels: all zero, all negative, -0 beside +0, and one image
// a thousand times larger.
func qgatherImage(r *rand.Rand, c qgatherCase) []float32 {
	x := randomFloats(r, c.x)
	ch := c.x[1]
	for p := 0; p < len(x)/ch; p++ {
		px := x[p*ch : (p+1)*ch]
		switch p % 11 {
		case 3:
			clear(px)
		case 5:
			for i := range px {
				px[i] = -float32(math.Abs(float64(px[i])))
			}
		case 7:
			for i := range px {
				px[i] = float32(math.Copysign(0, float64(i%2*2-1)))
			}
		}
	}
	if c.x[0] > 1 {
		for i := len(x) / c.x[0]; i < 2*len(x)/c.x[0]; i++ {
			x[i] *= 1000
		}
	}
	return x
}

func (c qgatherCase) geometry(t testing.TB) *Geometry {
	t.Helper()
	kernel := ints64(c.w[2:])
	g, err := forwardGeometry("Conv", c.x, c.w, "", c.group, kernel, c.strides, c.dil, c.pads)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// rowBytes returns the bytes of rows (k values each): their product with
// the k×k identity of integer weights.
func rowBytes(t testing.TB, e *gemm.Engine, rows *gemm.QRows, k int) []int32 {
	t.Helper()
	id := make([]int32, k*k)
	for i := 0; i < k; i++ {
		id[i*k+i] = 1
	}
	w, err := gemm.PackQInt(k, k, id, quant.PerTensor, []float32{1})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int32, rows.Rows()*k)
	if err := e.QMatMulInt32(rows, w, out, k); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestQGatherRowsMatchGathering quantizes the im2col rows of every tile
// from the image, with static and with per-row parameters, on every
// table, and compares them with the rows gathered as floats and quantized
// by QuantizeRowsAs: the same bytes (read through an identity product),
// and the same products, bit for bit (so the same zero points and
// scales).
func TestQGatherRowsMatchGathering(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	static, err := gemm.StaticActivations(-1.5, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range qgatherCases() {
		g := c.geometry(t)
		xt := qgatherImage(r, c)
		wv := randomFloats(r, c.w)
		for _, act := range []*gemm.Activations{nil, static} {
			cw, err := prepareWeights(wv, c.w, c.group, false, true, quant.PerChannel)
			if err != nil {
				t.Fatal(err)
			}
			cw.act = act
			for _, e := range engines() {
				if g.Batch*g.InSize()*g.C > 100000 && e.Threads() < 2 {
					continue // the large image is for the split preparation
				}
				what := fmt.Sprintf("%v static=%v %s", c, act.Static(), engineName(e))
				oc := ops.NewContext(context.Background(), e, false)
				taps := tapsOf(g)
				qi, err := cw.qimageOf(oc, g, taps, xt, g.direct())
				if err != nil {
					t.Fatal(err)
				}
				if want := c.from == "both" || c.from == "static" && act.Static(); want != (qi != nil) {
					t.Fatalf("%s: rows quantized from the image: %v, want %v", what, qi != nil, want)
				}
				if qi == nil {
					continue
				}
				outSize, mg := g.OutSize(), g.mg()
				img := g.InSize() * g.C
				tile := 5
				if outSize > 1000 {
					tile = 120
				}
				var got, want gemm.QRows
				for b := 0; b < g.Batch; b++ {
					for gi := 0; gi < g.Group; gi++ {
						for p0 := 0; p0 < outSize; p0 += tile {
							n := min(tile, outSize-p0)
							if err := qi.rows(e.Table(), &got, b, gi, p0, n); err != nil {
								t.Fatal(err)
							}
							rows := make([]float32, n*cw.k)
							taps.gatherRows(rows, xt[b*img:(b+1)*img], gi, p0, n)
							if err := e.QuantizeRowsAs(&want, rows, n, cw.k, cw.k, act); err != nil {
								t.Fatal(err)
							}
							if !slices.Equal(rowBytes(t, e, &got, cw.k), rowBytes(t, e, &want, cw.k)) {
								t.Fatalf("%s: image %d group %d positions %d+%d: bytes differ", what, b, gi, p0, n)
							}
							y1, y2 := make([]float32, n*mg), make([]float32, n*mg)
							if err := e.QMatMulRows(&got, cw.q[gi], y1, mg); err != nil {
								t.Fatal(err)
							}
							if err := e.QMatMulRows(&want, cw.q[gi], y2, mg); err != nil {
								t.Fatal(err)
							}
							if !slices.Equal(y1, y2) {
								t.Fatalf("%s: image %d group %d positions %d+%d: products differ", what, b, gi, p0, n)
							}
						}
					}
				}
				qi.free()
			}
		}
	}
}

// TestQGatherNotFinite runs int8 convolutions on images holding NaN or
// ±Inf: read by some row, an input error naming it (a 4xx), as before;
// in a pixel no row reads (an odd column at stride 2 of a kernel one
// column wide), the same output, bit for bit, as the finite image gives.
func TestQGatherNotFinite(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	static, _ := gemm.StaticActivations(-2, 2)
	cases := qgatherCases()
	for _, c := range []qgatherCase{cases[0], cases[2], cases[len(cases)-3]} {
		g := c.geometry(t)
		wv := randomFloats(r, c.w)
		for _, act := range []*gemm.Activations{nil, static} {
			cw, err := prepareWeights(wv, c.w, c.group, false, true, quant.PerChannel)
			if err != nil {
				t.Fatal(err)
			}
			cw.act = act
			for _, e := range engines() {
				oc := ops.NewContext(context.Background(), e, false)
				for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
					what := fmt.Sprintf("%v static=%v %v %s", c, act.Static(), bad, engineName(e))
					xt := qgatherImage(r, c)
					qi, err := cw.qimageOf(oc, g, tapsOf(g), xt, false)
					if err != nil || qi == nil {
						t.Fatalf("%s: the finite image's rows not quantized from it (%v)", what, err)
					}
					lazy := qi.lazy
					qi.free()
					y := make([]float32, g.Batch*g.M*g.OutSize())
					if err := cw.forwardTo(oc, g, xt, y, &output{nhwcIn: true}); err != nil {
						t.Fatal(err)
					}
					read := slices.Clone(xt)
					read[(2*g.In[1]+2)*g.C+2] = bad // pixel (2, 2): read by every kernel
					err = cw.forwardTo(oc, g, read, make([]float32, len(y)), &output{nhwcIn: true})
					if !errors.Is(err, ops.ErrInput) || !strings.Contains(err.Error(), gemm.ErrNotFinite.Error()) {
						t.Fatalf("%s: read by a row: error %v, want an input error of ErrNotFinite's", what, err)
					}
					if lazy { // each tile's error is the one gathering makes
						qr, err := cw.qimageOf(oc, g, tapsOf(g), read, false)
						if err != nil || qr == nil {
							t.Fatalf("%s: rows not quantized as they are read (%v)", what, err)
						}
						for p0 := 0; p0 < g.OutSize(); p0 += 5 {
							n := min(5, g.OutSize()-p0)
							var got, want gemm.QRows
							gotErr := qr.rows(e.Table(), &got, 0, 0, p0, n)
							rows := make([]float32, n*cw.k)
							tapsOf(g).gatherRows(rows, read[:g.InSize()*g.C], 0, p0, n)
							wantErr := e.QuantizeRowsAs(&want, rows, n, cw.k, cw.k, act)
							if wantErr != nil {
								wantErr = ops.InputErrorf("%v", wantErr)
							}
							if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !errors.Is(gotErr, ops.ErrInput) && gotErr != nil {
								t.Fatalf("%s: positions %d+%d: error %v, want %v", what, p0, n, gotErr, wantErr)
							}
						}
					}
					if c.strides == nil {
						continue
					}
					unread := slices.Clone(xt)
					unread[(g.In[1]+1)*g.C+2] = bad // pixel (1, 1): stride 2 reads columns 0, 2, …
					y2 := make([]float32, len(y))
					if err := cw.forwardTo(oc, g, unread, y2, &output{nhwcIn: true}); err != nil {
						t.Fatalf("%s: read by no row: %v", what, err)
					}
					if !slices.Equal(y, y2) {
						t.Fatalf("%s: read by no row: the output differs from the finite image's", what)
					}
				}
			}
		}
	}
}

// TestQGatherMeasuring runs an int8 convolution whose activations are
// being measured (calibration): it quantizes per row, as with nil
// activations, bit for bit, and records the range of every im2col row,
// padding's zeros included.
func TestQGatherMeasuring(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	c := qgatherCases()[0]
	g := c.geometry(t)
	xt := qgatherImage(r, c)
	for i := range xt {
		xt[i] = float32(math.Abs(float64(xt[i]))) + 1 // positive: the padding's zeros set the low end
	}
	xt[7] = 1e6
	wv := randomFloats(r, c.w)
	for _, e := range engines() {
		oc := ops.NewContext(context.Background(), e, false)
		dyn, err := prepareWeights(wv, c.w, c.group, false, true, quant.PerChannel)
		if err != nil {
			t.Fatal(err)
		}
		meas, _ := prepareWeights(wv, c.w, c.group, false, true, quant.PerChannel)
		meas.act = gemm.MeasureActivations()
		y1 := make([]float32, g.Batch*g.M*g.OutSize())
		y2 := make([]float32, len(y1))
		if err := dyn.forwardTo(oc, g, xt, y1, &output{nhwcIn: true}); err != nil {
			t.Fatal(err)
		}
		if err := meas.forwardTo(oc, g, xt, y2, &output{nhwcIn: true}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(y1, y2) {
			t.Fatalf("%s: measuring changes the output", engineName(e))
		}
		lo, hi, rows := meas.act.Range()
		if lo != 0 || hi != 1e6 || rows != int64(g.Batch*g.OutSize()) {
			t.Fatalf("%s: measured [%v, %v] over %d rows, want [0, 1e6] over %d", engineName(e), lo, hi, rows, g.Batch*g.OutSize())
		}
	}
}

// TestQGatherRowsAllocations: quantizing a tile's rows from the image
// into a QRows that held as many before allocates nothing, prepared
// (per row and static) or as the rows are read: an int8 network's 3×3
// layers make hundreds of tiles a run.
func TestQGatherRowsAllocations(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	static, err := gemm.StaticActivations(-1.5, 2)
	if err != nil {
		t.Fatal(err)
	}
	e := gemm.New(gemm.Default().Table(), 1)
	defer e.Close()
	oc := ops.NewContext(context.Background(), e, false)
	for _, c := range []qgatherCase{
		{x: []int{1, 16, 9, 8}, w: []int{8, 16, 3, 3}, group: 1, pads: []int64{1, 1, 1, 1}},
		{x: []int{1, 16, 8, 8}, w: []int{7, 16, 1, 1}, group: 1, strides: []int64{2, 2}}, // quantized as read
	} {
		g := c.geometry(t)
		xt := qgatherImage(r, c)
		for _, act := range []*gemm.Activations{nil, static} {
			cw, err := prepareWeights(randomFloats(r, c.w), c.w, c.group, false, true, quant.PerChannel)
			if err != nil {
				t.Fatal(err)
			}
			cw.act = act
			qi, err := cw.qimageOf(oc, g, tapsOf(g), xt, g.direct())
			if err != nil || qi == nil {
				t.Fatalf("%v: not quantized from the image (%v)", c, err)
			}
			var q gemm.QRows
			tile := func() {
				if err := qi.rows(e.Table(), &q, 0, 0, 3, 20); err != nil {
					t.Fatal(err)
				}
			}
			tile()
			if n := testing.AllocsPerRun(20, tile); n > 0 && !raceEnabled { // the race detector's sync.Pool drops some of what it is given
				t.Errorf("%v static=%v lazy=%v: %v allocations a tile", c, act.Static(), qi.lazy, n)
			}
			qi.free()
		}
	}
}

// TestQGatherPerImage quantizes the rows of input layers (fewer channels
// than rows quantize one by one) with one range an image: on every table,
// the bytes and products of the rows gathered as floats and quantized
// with the static parameters of their own image's range, the second image
// a thousand times the first (the 224×224 images' ranges are taken on
// two threads in parts). An image holding NaN, or one all zeros, leaves
// the rows to be quantized one by one.
func TestQGatherPerImage(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for _, c := range []qgatherCase{
		{x: []int{2, 3, 11, 13}, w: []int{4, 3, 7, 7}, group: 1, strides: []int64{2, 2}, pads: []int64{3, 3, 3, 3}},
		{x: []int{2, 3, 7, 7}, w: []int{4, 3, 3, 3}, group: 1, strides: []int64{2, 2}, pads: []int64{1, 1, 1, 1}},
		{x: []int{2, 1, 41}, w: []int{4, 1, 5}, group: 1, strides: []int64{2}, dil: []int64{2}, pads: []int64{3, 1}},
		{x: []int{2, 3, 224, 224}, w: []int{8, 3, 7, 7}, group: 1, strides: []int64{2, 2}, pads: []int64{3, 3, 3, 3}},
	} {
		g := c.geometry(t)
		xt := qgatherImage(r, c)
		cw, err := prepareWeights(randomFloats(r, c.w), c.w, c.group, false, true, quant.PerChannel)
		if err != nil {
			t.Fatal(err)
		}
		cw.perImage = true
		img := g.InSize() * g.C
		big := g.Batch*img > 100000
		if big && testing.Short() {
			continue // minutes under an emulator
		}
		tile := 5
		if big {
			tile = 120
		}
		for _, e := range engines() {
			if big && e.Threads() < 2 {
				continue // the large images are for the split ranges
			}
			what := fmt.Sprintf("%v %s", c, engineName(e))
			oc := ops.NewContext(context.Background(), e, false)
			taps := tapsOf(g)
			qi, err := cw.qimageOf(oc, g, taps, xt, false)
			if err != nil || qi == nil {
				t.Fatalf("%s: rows not quantized from the image (%v)", what, err)
			}
			var got, want gemm.QRows
			for b := 0; b < g.Batch; b++ {
				xb := xt[b*img : (b+1)*img]
				act, err := gemm.StaticActivations(slices.Min(xb), slices.Max(xb))
				if err != nil {
					t.Fatal(err)
				}
				for p0 := 0; p0 < g.OutSize(); p0 += tile {
					n := min(tile, g.OutSize()-p0)
					if err := qi.rows(e.Table(), &got, b, 0, p0, n); err != nil {
						t.Fatal(err)
					}
					rows := make([]float32, n*cw.k)
					taps.gatherRows(rows, xb, 0, p0, n)
					if err := e.QuantizeRowsAs(&want, rows, n, cw.k, cw.k, act); err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(rowBytes(t, e, &got, cw.k), rowBytes(t, e, &want, cw.k)) {
						t.Fatalf("%s: image %d positions %d+%d: bytes differ", what, b, p0, n)
					}
					y1, y2 := make([]float32, n*g.M), make([]float32, n*g.M)
					if err := e.QMatMulRows(&got, cw.q[0], y1, g.M); err != nil {
						t.Fatal(err)
					}
					if err := e.QMatMulRows(&want, cw.q[0], y2, g.M); err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(y1, y2) {
						t.Fatalf("%s: image %d positions %d+%d: products differ", what, b, p0, n)
					}
				}
			}
			qi.free()
			for _, bad := range []struct {
				name string
				x    []float32
			}{
				{"NaN", slices.Clone(xt)},
				{"zeros", make([]float32, len(xt))},
			} {
				if bad.name == "NaN" {
					bad.x[len(bad.x)-1] = float32(math.NaN())
				}
				if qi, err := cw.qimageOf(oc, g, taps, bad.x, false); err != nil || qi != nil {
					t.Errorf("%s: image of %s quantized from the image (%v)", what, bad.name, err)
				}
			}
		}
	}
}
