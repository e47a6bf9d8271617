package spatial

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// naiveGather is gather written directly: each output element on its own.
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
	c := opstest.Background()
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
		k, _ := tensor.NumElements(out)
		got, err := gatherAxes(c, xs, in, out, k, src, 7)
		if err != nil {
			t.Fatal(err)
		}
		if want := naiveGather(xs, in, out, src, 7); !slices.Equal(got, want) {
			t.Fatalf("in %v out %v src %v:\n got %v\nwant %v", in, out, src, got, want)
		}
		gs, err := gatherAxes(c, ss, in, out, k, src, "f")
		if err != nil {
			t.Fatal(err)
		}
		if want := naiveGather(ss, in, out, src, "f"); !slices.Equal(gs, want) {
			t.Fatalf("strings: in %v out %v src %v:\n got %v\nwant %v", in, out, src, gs, want)
		}
	}
}

// A cancelled request stops the operators that loop over large tensors.
func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := ops.NewContext(ctx, nil, false)
	img := seq(1, 4, 256, 256)
	block := []*onnxpb.Attribute{opstest.AttrInt("blocksize", 2)}
	scales := opstest.F32s([]int{4}, 1, 1, 2, 2)
	cases := []struct {
		op    string
		opset int64
		in    []*tensor.Tensor
		attrs []*onnxpb.Attribute
	}{
		{"Pad", 13, ins(img, opstest.I64s(0, 0, 1, 1, 0, 0, 1, 1)), nil},
		{"CenterCropPad", 18, ins(img, opstest.I64s(1, 4, 300, 300)), nil},
		{"DepthToSpace", 13, ins(img), block},
		{"SpaceToDepth", 13, ins(img), block},
		{"Resize", 19, ins(img, nil, scales), nil},
		{"Resize", 19, ins(img, nil, scales), []*onnxpb.Attribute{opstest.AttrString("mode", "linear")}},
		{"Resize", 19, ins(img, nil, scales), []*onnxpb.Attribute{opstest.AttrString("mode", "cubic")}},
		{"Resize", 19, ins(img, opstest.F32s([]int{8}, 0, 0, 0, 0, 1, 1, 1.5, 1.5), scales), []*onnxpb.Attribute{opstest.AttrString("mode", "linear"), opstest.AttrString("coordinate_transformation_mode", "tf_crop_and_resize")}},
		{"GridSample", 20, ins(img, tensor.From([]int{1, 256, 256, 2}, make([]float32, 2*256*256))), nil},
		{"AffineGrid", 20, ins(tensor.From([]int{1, 2, 3}, []float32{1, 0, 0, 0, 1, 0}), opstest.I64s(1, 1, 512, 512)), nil},
		{"Col2Im", 18, ins(seq(1, 4, 256*256), opstest.I64s(256, 256), opstest.I64s(1, 1)), nil},
	}
	for _, k := range cases {
		op, _, err := opstest.Compile(opstest.Node{Op: k.op, Opset: k.opset, Attrs: k.attrs}, len(k.in))
		if err != nil {
			t.Fatalf("%s: %v", k.op, err)
		}
		if _, err := op.Run(c, k.in); !errors.Is(err, context.Canceled) {
			t.Errorf("%s %v: got %v, want context.Canceled", k.op, k.attrs, err)
		}
	}
}
