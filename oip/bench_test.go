package oip

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// mnistBody is an infer body as tools/loadgen's mnist scenario sends it:
// 784 FP32 pixels in [0, 1) with 7 significant digits.
// With nested, the data are 28 rows of 28 (shape [1,28,28]).
func mnistBody(nested bool) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	b := []byte(`{"inputs":[{"name":"input","shape":[1,784],"datatype":"FP32","data":[`)
	if nested {
		b = []byte(`{"inputs":[{"name":"input","shape":[1,28,28],"datatype":"FP32","data":[[[`)
	}
	for i := range 784 {
		switch {
		case nested && i > 0 && i%28 == 0:
			b = append(b, "],["...)
		case i > 0:
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(float32(rng.Float64())), 'g', 7, 32)
	}
	if nested {
		b = append(b, "]]"...)
	}
	return append(b, "]}]}"...)
}

// BenchmarkDecodeMNIST decodes the body of one MNIST infer request.
func BenchmarkDecodeMNIST(b *testing.B) {
	b.Run("flat", func(b *testing.B) { benchDecode(b, mnistBody(false)) })
	b.Run("nested", func(b *testing.B) { benchDecode(b, mnistBody(true)) })
}

func benchDecode(b *testing.B, body []byte) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeInferRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeWide decodes a body as tools/loadgen's wide scenario
// sends it: 4,096 FP32 values of a standard normal with 7 significant
// digits, half of them negative.
func BenchmarkDecodeWide(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	body := []byte(`{"inputs":[{"name":"x","shape":[1,4096],"datatype":"FP32","data":[`)
	for i := range 4096 {
		if i > 0 {
			body = append(body, ',')
		}
		body = strconv.AppendFloat(body, float64(float32(rng.NormFloat64())), 'g', 7, 32)
	}
	benchDecode(b, append(body, "]}]}"...))
}
