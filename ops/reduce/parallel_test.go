package reduce

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
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
				opstest.ThreadsAgree(t, what, tc.split, opstest.Func(func(c *ops.Context, _ []*tensor.Tensor) ([]*tensor.Tensor, error) {
					y, err := reduceTensor(c, "op", kind, x, tc.red, true)
					return []*tensor.Tensor{y}, err
				}))
			}
		}
	}
}
