package reduce

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// TestSplitMatchesSerial: every reduction split across two cores gives
// the bits of one core, whether the split is over the outermost kept
// dimension (a last-axis reduction, a middle axis between kept ones) or
// over column blocks of a kept last dimension (an outer axis reduced),
// on odd sizes whose chunks end mid-block, for float32, float64 and
// int32; a walk into outputs of neither kind runs on one core and gives
// the same.
func TestSplitMatchesSerial(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 4))
	one, two := gemm.New(dispatch.Default(), 1), gemm.New(dispatch.Default(), 2)
	defer one.Close()
	defer two.Close()
	for _, tc := range []struct {
		shape []int
		red   []bool
		split bool
	}{
		{[]int{17, 31, 257}, []bool{false, false, true}, true},
		{[]int{9, 50, 301}, []bool{false, true, false}, true},
		{[]int{1, 130, 4099}, []bool{false, true, false}, true},
		{[]int{64, 7, 1000}, []bool{true, false, false}, true},
		{[]int{5, 33, 1200}, []bool{true, false, true}, false},
		{[]int{3, 200, 300}, []bool{true, true, true}, false},
	} {
		n := ops.ProdInts(tc.shape)
		f32, f64, i32 := make([]float32, n), make([]float64, n), make([]int32, n)
		for i := range f32 {
			f32[i] = float32(r.NormFloat64())
			f64[i] = r.NormFloat64()
			i32[i] = int32(r.IntN(7) - 3)
		}
		f32[n/3], f64[n/5] = float32(math.NaN()), math.NaN()
		for _, x := range []*tensor.Tensor{tensor.From(tc.shape, f32), tensor.From(tc.shape, f64), tensor.From(tc.shape, i32)} {
			for _, kind := range reduceKinds {
				what := fmt.Sprintf("%s of %v %v over %v", kindName(kind), x.DType, tc.shape, tc.red)
				want, err := reduceTensor(ops.NewContext(context.Background(), one, false), "op", kind, x, tc.red, true)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				var probe gemm.Probe
				got, err := reduceTensor(ops.NewContext(context.Background(), two.Probed(&probe), false), "op", kind, x, tc.red, true)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if split := probe.Take(); tc.split && !split {
					t.Errorf("%s: the two-thread run gave its engine no loop that splits", what)
				}
				if !reflect.DeepEqual(got.Shape, want.Shape) || !sameBits(got.Data, want.Data) {
					t.Errorf("%s: two threads differ from one", what)
				}
			}
		}
	}
}

// sameBits reports whether a and b hold the same bits (NaNs included).
func sameBits(a, b any) bool {
	switch a := a.(type) {
	case []float32:
		b := b.([]float32)
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				return false
			}
		}
		return len(a) == len(b)
	case []float64:
		b := b.([]float64)
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
				return false
			}
		}
		return len(a) == len(b)
	}
	return reflect.DeepEqual(a, b)
}
