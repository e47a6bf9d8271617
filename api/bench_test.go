package api

import (
	"bytes"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/oip"
	"github.com/quantserve/quantserve/repository"
)

// BenchmarkInferPath measures one MNIST infer request through the whole
// router (middleware, limits, decoding, the model, encoding) without the
// network, against decoding the same body alone: the server's own cost
// per request, and its share beyond decoding.
func BenchmarkInferPath(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	body := []byte(`{"inputs":[{"name":"input","shape":[1,784],"datatype":"FP32","data":[`)
	for i := 0; i < 784; i++ {
		if i > 0 {
			body = append(body, ',')
		}
		body = strconv.AppendFloat(body, float64(float32(rng.Float64())), 'g', 7, 32)
	}
	body = append(body, "]}]}"...)
	b.Run("decode-only", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := oip.DecodeInferRequest(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	repo := repository.New(serverOptions(), repository.Source{Name: "mnist", Version: 1, ONNX: defaultmodel.ONNX})
	h := NewRouter(Options{Repository: repo, Logger: quietLog()})
	b.Run("router", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			req := httptest.NewRequest(http.MethodPost, "/v2/models/mnist/infer", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
		}
	})
}
