package model

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// geomArg is one input of a test node: a graph input (value given at run
// time) or, with init set, an initializer.
type geomArg struct {
	name string
	t    *tensor.Tensor
	init bool
}

func geomIn(name string, t *tensor.Tensor) geomArg    { return geomArg{name: name, t: t} }
func geomConst(name string, t *tensor.Tensor) geomArg { return geomArg{name: name, t: t, init: true} }

// geomLoad builds a one-node model of op over args ("" names an absent
// optional input) and loads it.
func geomLoad(opset int64, op string, args []geomArg, attrs ...*onnxpb.Attribute) (*Model, error) {
	g := &onnxpb.Graph{}
	var names []string
	for _, a := range args {
		names = append(names, a.name)
		switch {
		case a.name == "":
		case a.init:
			g.Initializers = append(g.Initializers, TensorToONNX(a.name, a.t))
		default:
			g.Inputs = append(g.Inputs, &onnxpb.ValueInfo{Name: a.name, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: DataTypeToONNX(a.t.DType)}})
		}
	}
	g.Nodes = []*onnxpb.Node{{OpType: op, Name: "n", Inputs: names, Outputs: []string{"y"}, Attributes: attrs}}
	g.Outputs = []*onnxpb.ValueInfo{{Name: "y", Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: DataTypeToONNX(args[0].t.DType)}}}
	return Load(onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: opset}}, Graph: g}))
}

// geomRun loads and runs the node on its graph inputs.
func geomRun(opset int64, op string, args []geomArg, attrs ...*onnxpb.Attribute) (*tensor.Tensor, error) {
	m, err := geomLoad(opset, op, args, attrs...)
	if err != nil {
		return nil, err
	}
	in := map[string]*tensor.Tensor{}
	for _, a := range args {
		if a.name != "" && !a.init {
			in[a.name] = a.t
		}
	}
	out, err := m.Run(context.Background(), in, nil)
	if err != nil {
		return nil, err
	}
	return out["y"], nil
}

func geomStr(name, s string) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrString, S: []byte(s)}
}

func geomInts(name string, v ...int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInts, Ints: v}
}

func geomInt(name string, v int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInt, I: v}
}

func geomFloat(name string, v float32) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrFloat, F: v}
}

func geomFloats(name string, v ...float32) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrFloats, Floats: v}
}

func geomI64(v ...int64) *tensor.Tensor { return tensor.From([]int{len(v)}, v) }

func geomSeq(shape ...int) *tensor.Tensor {
	n, _ := tensor.NumElements(shape)
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(i + 1)
	}
	return tensor.From(shape, d)
}

func geomWant(t *testing.T, got *tensor.Tensor, err error, shape []int, want any) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Shape, shape) {
		t.Fatalf("shape %v, want %v", got.Shape, shape)
	}
	if fmt.Sprint(got.Data) != fmt.Sprint(want) {
		t.Fatalf("got %v\nwant %v", got.Data, want)
	}
}

func TestPadModes(t *testing.T) {
	x := geomSeq(1, 4) // 1 2 3 4
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
			got, err := geomRun(19, "Pad", []geomArg{geomIn("x", x), geomConst("pads", geomI64(c.pads...)), geomConst("v", tensor.Scalar(float32(9)))}, geomStr("mode", c.mode))
			geomWant(t, got, err, c.shape, c.want)
			// the opset-2 form takes the same pads as attributes
			if c.mode != "wrap" {
				got, err = geomRun(7, "Pad", []geomArg{geomIn("x", x)}, geomStr("mode", c.mode), geomInts("pads", c.pads...), geomFloat("value", 9))
				geomWant(t, got, err, c.shape, c.want)
			}
		})
	}
}

func TestPadAxesAndTypes(t *testing.T) {
	x := tensor.From([]int{2, 2}, []string{"a", "b", "c", "d"})
	got, err := geomRun(18, "Pad", []geomArg{geomIn("x", x), geomConst("pads", geomI64(1, 0)), geomConst("v", tensor.Scalar("z")), geomConst("axes", tensor.From([]int{1}, []int32{-1}))})
	geomWant(t, got, err, []int{2, 3}, []string{"z", "a", "b", "z", "c", "d"})
	h := tensor.From([]int{3}, tensor.Float32ToHalf[tensor.BF16]([]float32{1, 2, 3}))
	got, err = geomRun(13, "Pad", []geomArg{geomIn("x", h), geomConst("pads", geomI64(1, 1))}, geomStr("mode", "reflect"))
	geomWant(t, got, err, []int{5}, tensor.Float32ToHalf[tensor.BF16]([]float32{2, 1, 2, 3, 2}))
	// a zero-size axis pads with the constant only
	got, err = geomRun(13, "Pad", []geomArg{geomIn("x", tensor.From([]int{0, 2}, []float32{})), geomConst("pads", geomI64(1, 0, 1, 0))})
	geomWant(t, got, err, []int{2, 2}, []float32{0, 0, 0, 0})
	// a scalar pads nothing
	got, err = geomRun(13, "Pad", []geomArg{geomIn("x", tensor.Scalar(float32(5))), geomConst("pads", geomI64())})
	geomWant(t, got, err, nil, []float32{5})
}

func TestPadRefusesBadInput(t *testing.T) {
	x := geomSeq(2, 3)
	bad := []struct {
		name  string
		opset int64
		args  []geomArg
		mode  string
	}{
		{"pads too short", 13, []geomArg{geomIn("x", x), geomIn("pads", geomI64(1, 1))}, "constant"},
		{"crop past the axis", 13, []geomArg{geomIn("x", x), geomIn("pads", geomI64(0, -2, 0, -2))}, "constant"},
		{"reflect an emptied axis", 13, []geomArg{geomIn("x", x), geomIn("pads", geomI64(0, -3, 0, 1))}, "reflect"},
		{"huge pad", 13, []geomArg{geomIn("x", x), geomIn("pads", geomI64(1<<40, 0, 0, 0))}, "constant"},
		{"output too large", 13, []geomArg{geomIn("x", x), geomIn("pads", geomI64(1<<30, 1<<30, 0, 0))}, "constant"},
		{"float pads", 13, []geomArg{geomIn("x", x), geomIn("pads", tensor.From([]int{4}, []float32{0, 0, 0, 0}))}, "constant"},
		{"value of another type", 13, []geomArg{geomIn("x", x), geomConst("pads", geomI64(0, 0, 0, 0)), geomIn("v", tensor.Scalar(int64(1)))}, "constant"},
		{"repeated axes", 18, []geomArg{geomIn("x", x), geomConst("pads", geomI64(0, 0, 0, 0)), geomConst("v", tensor.Scalar(float32(0))), geomIn("axes", geomI64(1, -1))}, "constant"},
		{"axis out of range", 18, []geomArg{geomIn("x", x), geomConst("pads", geomI64(0, 0)), geomConst("v", tensor.Scalar(float32(0))), geomIn("axes", geomI64(2))}, "constant"},
	}
	for _, c := range bad {
		_, err := geomRun(c.opset, "Pad", c.args, geomStr("mode", c.mode))
		if !errors.Is(err, ErrInput) {
			t.Errorf("%s: got %v, want an input error", c.name, err)
		}
	}
	// wrap arrived in opset 19, axes in 18
	if _, err := geomLoad(18, "Pad", []geomArg{geomIn("x", x), geomIn("pads", geomI64(0, 0, 0, 0))}, geomStr("mode", "wrap")); !errors.Is(err, ErrUnsupported) {
		t.Errorf("wrap at opset 18: %v", err)
	}
	if _, err := geomLoad(13, "Pad", []geomArg{geomIn("x", x), geomIn("pads", geomI64(0, 0)), geomIn("v", tensor.Scalar(float32(0))), geomIn("axes", geomI64(1))}); err == nil {
		t.Error("Pad with an axes input loads at opset 13")
	}
}

// naiveGather is geomGather written directly: each output element on its
// own.
func naiveGather[T any](xs []T, in, out []int, src [][]int, fill T) []T {
	n, _ := tensor.NumElements(out)
	res := make([]T, n)
	st := tensor.Strides(in)
	it := tensor.NewIter(out)
	for i := 0; it.Next(); i++ {
		off := 0
		res[i] = fill
		ok := true
		for d, o := range it.Index() {
			if src[d][o] < 0 {
				ok = false
				break
			}
			off += src[d][o] * st[d]
		}
		if ok {
			res[i] = xs[off]
		}
	}
	return res
}

// TestGatherPathsMatch runs the row gather's paths (copied runs, per
// element, with fill, repeated rows) against the element-wise gather.
func TestGatherPathsMatch(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		rank := 1 + r.IntN(4)
		in, out := make([]int, rank), make([]int, rank)
		src := make([][]int, rank)
		for d := range in {
			in[d], out[d] = 1+r.IntN(5), r.IntN(9)
			src[d] = make([]int, out[d])
			kind := r.IntN(4)
			for o := range src[d] {
				switch kind {
				case 0: // runs: a pad
					src[d][o] = o - 2
					if src[d][o] >= in[d] {
						src[d][o] = -1
					}
				case 1: // repeats: nearest upsampling
					src[d][o] = min(o/2, in[d]-1)
				default:
					src[d][o] = r.IntN(in[d]+1) - 1
				}
			}
		}
		n, _ := tensor.NumElements(in)
		xs := make([]float32, n)
		ss := make([]string, n)
		for i := range xs {
			xs[i] = float32(r.NormFloat64())
			ss[i] = fmt.Sprint(i)
		}
		m, _ := tensor.NumElements(out)
		got := gatherAxes(xs, in, out, m, src, 7)
		if want := naiveGather(xs, in, out, src, 7); !slices.Equal(got, want) {
			t.Fatalf("in %v out %v src %v:\n got %v\nwant %v", in, out, src, got, want)
		}
		if got, want := gatherAxes(ss, in, out, m, src, "f"), naiveGather(ss, in, out, src, "f"); !slices.Equal(got, want) {
			t.Fatalf("strings: in %v out %v src %v:\n got %v\nwant %v", in, out, src, got, want)
		}
	}
}

func TestCenterCropPad(t *testing.T) {
	x := geomSeq(3, 4)
	// rows 3 -> 5 (pad 1 before, 1 after), columns 4 -> 1 (crop 1 before, 2 after)
	got, err := geomRun(18, "CenterCropPad", []geomArg{geomIn("x", x), geomConst("s", geomI64(5, 1))})
	geomWant(t, got, err, []int{5, 1}, []float32{0, 2, 6, 10, 0})
	got, err = geomRun(18, "CenterCropPad", []geomArg{geomIn("x", x), geomConst("s", geomI64(2))}, geomInts("axes", -1))
	geomWant(t, got, err, []int{3, 2}, []float32{2, 3, 6, 7, 10, 11})
	for _, s := range [][]int64{{1}, {-1, 2}, {2, 2, 2}} {
		if _, err := geomRun(18, "CenterCropPad", []geomArg{geomIn("x", x), geomIn("s", geomI64(s...))}); !errors.Is(err, ErrInput) {
			t.Errorf("shape %v: %v", s, err)
		}
	}
}

func TestDepthToSpaceRoundTrip(t *testing.T) {
	x := geomSeq(2, 8, 2, 3)
	for _, mode := range []string{"DCR", "CRD"} {
		d2s, err := geomRun(13, "DepthToSpace", []geomArg{geomIn("x", x)}, geomInt("blocksize", 2), geomStr("mode", mode))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(d2s.Shape, []int{2, 2, 4, 6}) {
			t.Fatalf("%s: shape %v", mode, d2s.Shape)
		}
		if mode == "CRD" {
			continue // SpaceToDepth inverts DCR
		}
		back, err := geomRun(13, "SpaceToDepth", []geomArg{geomIn("x", d2s)}, geomInt("blocksize", 2))
		geomWant(t, back, err, x.Shape, x.Data)
	}
	// CRD: channel c·4 + i·2 + j lands at (2h+i, 2w+j) of channel c
	x = geomSeq(1, 4, 1, 1)
	got, err := geomRun(13, "DepthToSpace", []geomArg{geomIn("x", x)}, geomInt("blocksize", 2), geomStr("mode", "CRD"))
	geomWant(t, got, err, []int{1, 1, 2, 2}, []float32{1, 2, 3, 4})
	// opset 1 has no mode (DCR) and takes every type
	s := tensor.From([]int{1, 4, 1, 1}, []string{"a", "b", "c", "d"})
	got, err = geomRun(9, "DepthToSpace", []geomArg{geomIn("x", s)}, geomInt("blocksize", 2))
	geomWant(t, got, err, []int{1, 1, 2, 2}, []string{"a", "b", "c", "d"})
	got, err = geomRun(13, "DepthToSpace", []geomArg{geomIn("x", tensor.From([]int{0, 4, 1, 1}, []float32{}))}, geomInt("blocksize", 2))
	geomWant(t, got, err, []int{0, 1, 2, 2}, []float32{})
	for _, c := range []struct {
		op string
		x  *tensor.Tensor
	}{{"DepthToSpace", geomSeq(1, 3, 2, 2)}, {"DepthToSpace", geomSeq(4, 2, 2)}, {"SpaceToDepth", geomSeq(1, 1, 3, 4)}} {
		if _, err := geomRun(13, c.op, []geomArg{geomIn("x", c.x)}, geomInt("blocksize", 2)); !errors.Is(err, ErrInput) {
			t.Errorf("%s %v: %v", c.op, c.x.Shape, err)
		}
	}
	if _, err := geomLoad(13, "DepthToSpace", []geomArg{geomIn("x", x)}, geomInt("blocksize", 0)); err == nil {
		t.Error("blocksize 0 loads")
	}
	if _, err := geomLoad(9, "DepthToSpace", []geomArg{geomIn("x", x)}, geomInt("blocksize", 2), geomStr("mode", "CRD")); !errors.Is(err, ErrUnsupported) {
		t.Errorf("mode at opset 9: %v", err)
	}
}

func TestGridSamplePaddingAndErrors(t *testing.T) {
	x := geomSeq(1, 1, 2, 2) // 1 2 / 3 4
	// the corner centres (align_corners) and a point past the right edge
	// (x = 2 in pixels, y = 0.5); border clamps it to x = 1: (2 + 4) / 2
	grid := tensor.From([]int{1, 1, 3, 2}, []float32{-1, -1, 1, 1, 3, 0})
	cases := []struct {
		padding string
		want    []float32
	}{
		{"zeros", []float32{1, 4, 0}},
		{"border", []float32{1, 4, 3}},
		{"reflection", []float32{1, 4, 2}}, // x = 2 reflects off 1 to 0, at y = 0.5: (1 + 3) / 2
	}
	for _, c := range cases {
		got, err := geomRun(16, "GridSample", []geomArg{geomIn("x", x), geomIn("g", grid)}, geomInt("align_corners", 1), geomStr("padding_mode", c.padding))
		geomWant(t, got, err, []int{1, 1, 1, 3}, c.want)
	}
	// 5-D inputs need opset 20; the names changed there
	vol := geomSeq(1, 1, 2, 2, 2)
	vgrid := tensor.From([]int{1, 1, 1, 1, 3}, []float32{-1, -1, -1})
	if _, err := geomRun(16, "GridSample", []geomArg{geomIn("x", vol), geomIn("g", vgrid)}); !errors.Is(err, ErrInput) {
		t.Errorf("5-D at opset 16: %v", err)
	}
	got, err := geomRun(20, "GridSample", []geomArg{geomIn("x", vol), geomIn("g", vgrid)}, geomInt("align_corners", 1), geomStr("mode", "cubic"))
	geomWant(t, got, err, []int{1, 1, 1, 1, 1}, []float32{1})
	if _, err := geomLoad(20, "GridSample", []geomArg{geomIn("x", x), geomIn("g", grid)}, geomStr("mode", "bilinear")); !errors.Is(err, ErrUnsupported) {
		t.Errorf("bilinear at opset 20: %v", err)
	}
	for _, g := range []*tensor.Tensor{
		tensor.From([]int{1, 1, 3, 3}, make([]float32, 9)), // 3 coordinates for 2-D
		tensor.From([]int{2, 1, 1, 2}, make([]float32, 4)), // another batch
		tensor.From([]int{1, 1, 1, 2}, []int64{0, 0}),      // integer grid
		tensor.From([]int{1, 1, 2}, make([]float32, 2)),    // rank
	} {
		if _, err := geomRun(16, "GridSample", []geomArg{geomIn("x", x), geomIn("g", g)}); !errors.Is(err, ErrInput) {
			t.Errorf("grid %v%v: %v", g.DType, g.Shape, err)
		}
	}
}

func TestAffineGridAndCol2ImErrors(t *testing.T) {
	theta := tensor.From([]int{1, 2, 3}, []float32{1, 0, 0, 0, 1, 0})
	got, err := geomRun(20, "AffineGrid", []geomArg{geomIn("t", theta), geomConst("s", geomI64(1, 1, 1, 2))}, geomInt("align_corners", 1))
	geomWant(t, got, err, []int{1, 1, 2, 2}, []float32{-1, -1, 1, -1})
	for _, s := range [][]int64{{1, 1, 2}, {2, 1, 2, 2}, {1, 1, 0, 2}, {1, 1, 2, 2, 2}, {1, 1, 1 << 40, 2}} {
		if _, err := geomRun(20, "AffineGrid", []geomArg{geomIn("t", theta), geomIn("s", geomI64(s...))}); !errors.Is(err, ErrInput) {
			t.Errorf("size %v: %v", s, err)
		}
	}
	// Col2Im of 1×1 blocks is a reshape
	x := geomSeq(1, 2, 4)
	got, err = geomRun(18, "Col2Im", []geomArg{geomIn("x", x), geomConst("i", geomI64(2, 2)), geomConst("b", geomI64(1, 1))})
	geomWant(t, got, err, []int{1, 2, 2, 2}, x.Data)
	for _, c := range [][2][]int64{{{2, 3}, {1, 1}}, {{2, 2}, {3, 1}}, {{2}, {1, 1}}, {{0, 2}, {1, 1}}, {{2, 2}, {1, -1}}} {
		if _, err := geomRun(18, "Col2Im", []geomArg{geomIn("x", x), geomIn("i", geomI64(c[0]...)), geomIn("b", geomI64(c[1]...))}); !errors.Is(err, ErrInput) {
			t.Errorf("image %v block %v: %v", c[0], c[1], err)
		}
	}
	if _, err := geomRun(18, "Col2Im", []geomArg{geomIn("x", x), geomConst("i", geomI64(2, 2)), geomConst("b", geomI64(1, 1))}, geomInts("strides", 0, 1)); err == nil || !strings.Contains(err.Error(), "strides") {
		t.Errorf("zero stride: %v", err)
	}
}
