package pool

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// channelsLast returns the NCHW image x ([N, C, spatial...]) laid out
// [N, spatial..., C].
func channelsLast(x *tensor.Tensor) *tensor.Tensor {
	n, c := x.Shape[0], x.Shape[1]
	size := ops.ProdInts(x.Shape[2:])
	src := x.Data.([]float32)
	dst := make([]float32, len(src))
	for b := 0; b < n; b++ {
		for j := 0; j < c; j++ {
			for i := 0; i < size; i++ {
				dst[(b*size+i)*c+j] = src[(b*c+j)*size+i]
			}
		}
	}
	shape := append([]int{n}, x.Shape[2:]...)
	return tensor.From(append(shape, c), dst)
}

// TestGlobalPoolNHWCMatchesReference runs quantserve's channels-last
// GlobalAveragePool and GlobalMaxPool on every kernel table over shapes
// around the vector widths and the chunks of channels (NaN and
// infinities among the max pool's values), against the pure-Go table and
// against ONNX's operators on the same image in NCHW: every table gives
// the pure-Go table's bits, and on one thread and two alike; the maximum
// is ONNX's operator's bits, the mean its value within float32 rounding
// of a block's sum.
func TestGlobalPoolNHWCMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	var tables []*ops.Context
	for _, tb := range dispatch.Available() {
		e := gemm.New(tb, 1)
		defer e.Close()
		tables = append(tables, ops.NewContext(context.Background(), e, false))
	}
	ge := gemm.New(dispatch.Reference(), 1)
	defer ge.Close()
	generic := ops.NewContext(context.Background(), ge, false)
	shapes := [][]int{
		{1, 1, 1, 1}, {1, 3, 1, 1}, {2, 5, 3, 7}, {1, 16, 9, 1}, {1, 17, 4, 5}, {3, 63, 2, 2},
		{1, 64, 7, 7}, {2, 65, 3, 3}, {1, 131, 5, 11}, {1, 200, 12, 48}, {2, 8, 6}, {1, 12, 2, 3, 4},
		{1, 256, 3, 3}, {2, 261, 4, 5}, {1, 520, 2, 9}, {1, 8, 48, 48}, {2, 40, 24, 30}, {1, 3, 7, 5}, {1, 100, 7, 33},
	}
	for iter := 0; iter < 8; iter++ {
		shapes = append(shapes, []int{1 + r.IntN(3), 1 + r.IntN(140), 1 + r.IntN(13), 1 + r.IntN(13)})
	}
	for _, op := range []string{"GlobalAveragePool", "GlobalMaxPool"} {
		nchw, err := compile(22, op, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		nhwc, _, err := opstest.Compile(opstest.Node{Domain: ops.RewriteDomain, Op: op, Opset: 1, Outputs: 1}, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, shape := range shapes {
			what := fmt.Sprintf("%s %v", op, shape)
			x := opstest.Normal(r, shape...)
			xv := x.Data.([]float32)
			for i := range xv {
				xv[i] = 3 + 2*xv[i] // a mean well away from zero
				if op == "GlobalMaxPool" {
					switch r.IntN(60) {
					case 0:
						xv[i] = float32(math.NaN())
					case 1:
						xv[i] = float32(math.Inf(-1))
					case 2:
						xv[i] = float32(math.Inf(1))
					}
				}
			}
			xl := channelsLast(x)
			orig := slices.Clone(xl.Data.([]float32))
			want, err := nchw.Run(opstest.Background(), []*tensor.Tensor{x})
			if err != nil {
				t.Fatal(err)
			}
			ref, err := nhwc.Run(generic, []*tensor.Tensor{xl})
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if !slices.Equal(ref[0].Shape, want[0].Shape) {
				t.Fatalf("%s: shape %v, ONNX's %v", what, ref[0].Shape, want[0].Shape)
			}
			rv, wv := ref[0].Data.([]float32), want[0].Data.([]float32)
			if op == "GlobalMaxPool" {
				sameBits(t, what, rv, wv)
			} else {
				size := ops.ProdInts(shape[2:])
				for i := range wv {
					// |x| < 12 or so: block sums of kernels.ColumnRows
					// rows in float32 err by under 16 ulps of 200, far
					// below 1e-5 of the mean.
					if d := math.Abs(float64(rv[i] - wv[i])); !(d <= 1e-5*(1+math.Abs(float64(wv[i])))) {
						t.Fatalf("%s (%d positions): mean %d = %v, ONNX's %v", what, size, i, rv[i], wv[i])
					}
				}
			}
			for _, oc := range tables {
				got, err := nhwc.Run(oc, []*tensor.Tensor{xl})
				if err != nil {
					t.Fatal(err)
				}
				sameBits(t, fmt.Sprintf("%s on %v", what, oc.Engine().Table()), got[0].Data.([]float32), rv)
			}
			if !sameFloats(xl.Data.([]float32), orig) {
				t.Fatalf("%s: input modified", what)
			}
		}
		// Split across two threads: the same bits as on one.
		big := channelsLast(opstest.Normal(r, 4, 300, 12, 24))
		opstest.SplitRun(t, op+" channels-last", nhwc, big)
	}
}

// TestGlobalPoolNHWCRefusals: an input that is not a float32 image of a
// non-empty spatial extent is an input error, never a panic.
func TestGlobalPoolNHWCRefusals(t *testing.T) {
	for _, op := range []string{"GlobalAveragePool", "GlobalMaxPool"} {
		n := opstest.Node{Domain: ops.RewriteDomain, Op: op, Opset: 1, Outputs: 1}
		opstest.WantInputError(t, n, "float32", tensor.From([]int{1, 2, 2, 2}, make([]float64, 8)))
		opstest.WantInputError(t, n, "rank 2", tensor.From([]int{4}, make([]float32, 4)))
		opstest.WantInputError(t, n, "empty spatial", tensor.From([]int{1, 0, 3, 2}, make([]float32, 0)))
		// No positions and no images: an empty output.
		got := opstest.Run1(t, n, tensor.From([]int{0, 3, 3, 2}, make([]float32, 0)))
		if !slices.Equal(got.Shape, []int{0, 2, 1, 1}) {
			t.Errorf("%s of [0 3 3 2]: shape %v, want [0 2 1 1]", op, got.Shape)
		}
	}
}

// BenchmarkGlobalPoolNHWC is PaddleOCR's squeeze-and-excitation pools
// (1×C×H×W for the shapes its blocks pool): ONNX's GlobalAveragePool on
// the image in NCHW against quantserve's on the image channels-last.
func BenchmarkGlobalPoolNHWC(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	nchw, err := compile(22, "GlobalAveragePool", 1, 1)
	if err != nil {
		b.Fatal(err)
	}
	nhwc, _, err := opstest.Compile(opstest.Node{Domain: ops.RewriteDomain, Op: "GlobalAveragePool", Opset: 1, Outputs: 1}, 1)
	if err != nil {
		b.Fatal(err)
	}
	for _, shape := range [][]int{{1, 8, 12, 96}, {1, 32, 3, 96}, {1, 88, 3, 96}, {1, 200, 2, 96}} {
		x := opstest.Normal(r, shape...)
		for _, tc := range []struct {
			name string
			op   ops.Operator
			x    *tensor.Tensor
		}{{"nchw", nchw, x}, {"nhwc", nhwc, channelsLast(x)}} {
			b.Run(fmt.Sprintf("%v/%s", shape, tc.name), func(b *testing.B) {
				b.SetBytes(int64(4 * x.Len()))
				b.ReportAllocs()
				in := []*tensor.Tensor{tc.x}
				for b.Loop() {
					if _, err := tc.op.Run(opstest.Background(), in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
