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

// TestLRNAndLpNormAndMVN checks the three against their formulas,
// written out directly.
func TestLRNAndLpNormAndMVN(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	N, C, S := 2, 7, 3
	x := opstest.Normal(r, N, C, S)
	xv := x.Float64s()
	for _, beta := range []float32{0.75, 0.6} {
		for _, size := range []int64{1, 4, 5} {
			got, err := run(t, 13, "LRN", 1, []*tensor.Tensor{x}, opstest.AttrInt("size", size), opstest.AttrFloat("alpha", 0.3), opstest.AttrFloat("beta", beta), opstest.AttrFloat("bias", 1.5))
			if err != nil {
				t.Fatal(err)
			}
			want := make([]float64, len(xv))
			for n := 0; n < N; n++ {
				for c := 0; c < C; c++ {
					for s := 0; s < S; s++ {
						var sq float64
						for c2 := c - int(size-1)/2; c2 <= c+int(size)-1-int(size-1)/2; c2++ {
							if c2 >= 0 && c2 < C {
								v := xv[(n*C+c2)*S+s]
								sq += v * v
							}
						}
						i := (n*C+c)*S + s
						want[i] = xv[i] / math.Pow(1.5+0.3/float64(size)*sq, float64(beta))
					}
				}
			}
			opstest.Close(t, "LRN", got[0].Float64s(), want, 1e-6)
		}
	}
	// LpNormalization along axis 1, with one all-zero vector.
	xz := x.Clone()
	for c := 0; c < C; c++ {
		xz.Data.([]float32)[c*S+1] = 0 // image 0, position 1
	}
	xzv := xz.Float64s()
	for _, p := range []int64{1, 2} {
		got, err := run(t, 22, "LpNormalization", 1, []*tensor.Tensor{xz}, opstest.AttrInt("axis", 1), opstest.AttrInt("p", p))
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float64, len(xzv))
		for n := 0; n < N; n++ {
			for s := 0; s < S; s++ {
				var norm float64
				for c := 0; c < C; c++ {
					v := xzv[(n*C+c)*S+s]
					if p == 1 {
						norm += math.Abs(v)
					} else {
						norm += v * v
					}
				}
				if p == 2 {
					norm = math.Sqrt(norm)
				}
				for c := 0; c < C; c++ {
					if norm != 0 {
						want[(n*C+c)*S+s] = xzv[(n*C+c)*S+s] / norm
					}
				}
			}
		}
		opstest.Close(t, "LpNormalization", got[0].Float64s(), want, 1e-6)
	}
	// MeanVarianceNormalization over axes {0, -1}: statistics per channel.
	got, err := run(t, 13, "MeanVarianceNormalization", 1, []*tensor.Tensor{x}, opstest.AttrInts("axes", 0, -1))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, len(xv))
	for c := 0; c < C; c++ {
		var m, v float64
		for n := 0; n < N; n++ {
			for s := 0; s < S; s++ {
				m += xv[(n*C+c)*S+s] / float64(N*S)
			}
		}
		for n := 0; n < N; n++ {
			for s := 0; s < S; s++ {
				d := xv[(n*C+c)*S+s] - m
				v += d * d / float64(N*S)
			}
		}
		for n := 0; n < N; n++ {
			for s := 0; s < S; s++ {
				want[(n*C+c)*S+s] = (xv[(n*C+c)*S+s] - m) / (math.Sqrt(v) + 1e-9)
			}
		}
	}
	opstest.Close(t, "MeanVarianceNormalization", got[0].Float64s(), want, 1e-6)

	for _, c := range []struct {
		op    string
		x     *tensor.Tensor
		attrs []*onnxpb.Attribute
	}{
		{"LRN", tensor.From([]int{3}, []float32{1, 2, 3}), []*onnxpb.Attribute{opstest.AttrInt("size", 3)}},
		{"LpNormalization", tensor.Scalar(float32(1)), nil},
		{"LpNormalization", x, []*onnxpb.Attribute{opstest.AttrInt("axis", 3)}},
		{"MeanVarianceNormalization", x, nil}, // default axes 0, 2, 3 need rank 4
	} {
		if _, err := run(t, 22, c.op, 1, []*tensor.Tensor{c.x}, c.attrs...); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s %v %v: %v, want an input error", c.op, c.x.Shape, c.attrs, err)
		}
	}
	for _, c := range []struct {
		op    string
		attrs []*onnxpb.Attribute
		want  string
	}{
		{"LRN", nil, "needs size"},
		{"LRN", []*onnxpb.Attribute{opstest.AttrInt("size", 0)}, "needs size"},
		{"LpNormalization", []*onnxpb.Attribute{opstest.AttrInt("p", 3)}, "p = 3"},
	} {
		_, err := compile(22, c.op, 1, 1, c.attrs...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v, want %q", c.op, c.attrs, err, c.want)
		}
	}
}
