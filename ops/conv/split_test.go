package conv

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestSplitTile: a convolution with work enough to split gets at least
// minSplitTiles tiles of whole row tiles, never under minTileRows rows,
// and one too small keeps its tile.
func TestSplitTile(t *testing.T) {
	big := gemm.MinParallelWork
	for _, c := range []struct {
		tile, size, groups, work, want int
	}{
		{240, 288, 1, big, 36},      // 8 tiles of 36
		{240, 192, 1, big, 24},      // 8 tiles of 24
		{240, 96, 1, big, 24},       // never under 24 rows: 4 tiles
		{240, 288, 1, big - 1, 240}, // too little work: one tile
		{240, 288, 8, big, 240},     // 8 images already make 8 units
		{240, 2304, 1, big, 240},    // 10 tiles already
		{240, 1000, 3, big, 240},    // 3 tiles a group would be 336: capped
		{12, 288, 1, big, 12},       // a tile under 24 rows stays as it is
	} {
		got := splitTile(c.tile, c.size, c.groups, c.work)
		if got != c.want {
			t.Errorf("splitTile(%d, %d, %d, %d) = %d, want %d", c.tile, c.size, c.groups, c.work, got, c.want)
		}
		if got%12 != 0 && got != c.tile {
			t.Errorf("splitTile(%d, %d, %d, %d) = %d: not whole row tiles", c.tile, c.size, c.groups, c.work, got)
		}
	}
}

// TestSmallConvsSplit runs the small convolutions of a mobile CNN (the
// shapes of PaddleOCR's text-direction classifier) on a probed engine:
// those with the work of a few microseconds or more give work that splits
// across cores even at batch 1 (their tiles, their depthwise planes), the
// squeeze-and-excitation products on 1×1 planes do not; and two threads
// give the same bits as one, float32 and int8.
func TestSmallConvsSplit(t *testing.T) {
	for _, c := range []struct {
		c, m, group, h, w, k, stride int
		nhwcIn, nhwcOut, split       bool
		scaled                       bool // x times a per-channel scale first (an SE block's Mul)
	}{
		{3, 8, 1, 48, 192, 3, 2, false, true, true, false},      // the image's first conv
		{8, 8, 1, 24, 96, 1, 1, true, false, true, false},       // pointwise, 8 channels
		{8, 8, 8, 24, 96, 3, 2, false, false, true, false},      // depthwise, stride 2
		{32, 8, 1, 6, 96, 1, 1, false, true, true, false},       // pointwise down to 8
		{16, 88, 1, 3, 96, 1, 1, true, false, true, false},      // pointwise up to 88
		{200, 200, 200, 2, 96, 5, 1, false, false, true, false}, // depthwise 5×5
		{88, 22, 1, 1, 1, 1, 1, false, true, false, false},      // squeeze
		{22, 88, 1, 1, 1, 1, 1, true, false, false, false},      // excite
		{200, 32, 1, 2, 96, 1, 1, false, true, true, true},      // pointwise of an SE block's scaled image
		{22, 88, 1, 1, 1, 1, 1, false, false, false, true},      // one position, scaled
	} {
		name := fmt.Sprintf("%d-%d_g%d_%dx%d_k%d_s%d", c.c, c.m, c.group, c.h, c.w, c.k, c.stride)
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(c.c), uint64(c.m)))
			xs, ws := []int{1, c.c, c.h, c.w}, []int{c.m, c.c / c.group, c.k, c.k}
			if c.nhwcIn {
				xs = []int{1, c.h, c.w, c.c}
			}
			x := tensor.From(xs, randomFloats(r, xs))
			w := tensor.From(ws, randomFloats(r, ws))
			bias := tensor.From([]int{c.m}, randomFloats(r, []int{c.m}))
			p := int64(c.k / 2)
			attrs := []*onnxpb.Attribute{opstest.AttrInts("pads", p, p, p, p), opstest.AttrInts("strides", int64(c.stride), int64(c.stride)),
				opstest.AttrInt("group", int64(c.group)), opstest.AttrString("activation", "HardSwish")}
			if c.nhwcIn {
				attrs = append(attrs, opstest.AttrInt("nhwc_in", 1))
			}
			if c.nhwcOut {
				attrs = append(attrs, opstest.AttrInt("nhwc_out", 1))
			}
			in := make([]*tensor.Tensor, FusedInputs)
			in[FusedX], in[FusedW], in[FusedB] = x, w, bias
			xref := x.Data.([]float32)
			if c.scaled {
				sv := randomFloats(r, []int{c.c})
				in[FusedXScale] = tensor.From([]int{1, c.c, 1, 1}, sv)
				xref = slices.Clone(xref)
				for i := range xref {
					xref[i] *= sv[i/(c.h*c.w)]
				}
			}
			absent := absentInputs(in)
			// HardSwish of the definition, channels-last when the node is.
			ref := refConvolve(xref, []int{1, c.c, c.h, c.w}, w.Data.([]float32), ws, bias.Data.([]float32), c.group,
				[]int{c.stride, c.stride}, []int{1, 1}, []int{int(p), int(p), int(p), int(p)}, false)
			if c.nhwcIn {
				ref = refConvolve(nchw(x.Data.([]float32), c.h*c.w, c.c), []int{1, c.c, c.h, c.w}, w.Data.([]float32), ws, bias.Data.([]float32), c.group,
					[]int{c.stride, c.stride}, []int{1, 1}, []int{int(p), int(p), int(p), int(p)}, false)
			}
			size := ops.ProdInts(ref.shape[2:])
			for i, v := range ref.y {
				ref.y[i] = refActivation("HardSwish", nil, v)
			}
			if c.nhwcOut {
				ref.y, ref.mag, ref.shape = nhwc64(ref.y, c.m, size), nhwc64(ref.mag, c.m, size), []int{1, ref.shape[2], ref.shape[3], c.m}
			}
			for _, quantize := range []bool{false, true} {
				var want []float32
				for _, threads := range []int{1, 2} {
					e := gemm.New(dispatch.Default(), threads)
					var probe gemm.Probe
					op := mustCompile(t, spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, inputs: FusedInputs,
						consts: []*tensor.Tensor{FusedW: w, FusedB: bias}, absent: absent, engine: e.Probed(&probe), quantize: quantize, attrs: attrs})
					for run := 0; run < 2; run++ { // the second on the kept geometry
						y, err := op.run1(in...)
						if err != nil {
							t.Fatal(err)
						}
						if split := probe.Take(); split != c.split {
							t.Errorf("int8 %v, %d thread(s): split %v, want %v", quantize, threads, split, c.split)
						}
						if !quantize {
							ref.check(t, y, false)
						}
						got := y.Data.([]float32)
						if want == nil {
							want = slices.Clone(got)
						} else if !slices.Equal(got, want) {
							t.Errorf("int8 %v, %d thread(s), run %d: not the bits of one thread's first run", quantize, threads, run)
						}
					}
					e.Close()
				}
			}
		})
	}
}

// nchw returns x (size×channels) channels-first.
func nchw(x []float32, size, channels int) []float32 {
	out := make([]float32, len(x))
	for i := 0; i < size; i++ {
		for ch := 0; ch < channels; ch++ {
			out[ch*size+i] = x[i*channels+ch]
		}
	}
	return out
}

// nhwc64 returns y (channels×size) channels-last.
func nhwc64(y []float64, channels, size int) []float64 {
	out := make([]float64, len(y))
	for ch := 0; ch < channels; ch++ {
		for i := 0; i < size; i++ {
			out[i*channels+ch] = y[ch*size+i]
		}
	}
	return out
}
