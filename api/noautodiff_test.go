//go:build !autodiff

package api

import (
	"slices"
	"testing"

	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/repository"
)

// TestGradientsAnswer501WithoutTheTag: a build without the autodiff tag
// answers the gradient routes with 501 naming the tag, and keeps serving.
func TestGradientsAnswer501WithoutTheTag(t *testing.T) {
	url := newTestHTTPServer(t, Options{Repository: repository.New(serverOptions(), repository.Source{Name: "mnist", Version: 1, ONNX: defaultmodel.ONNX}), AdminToken: adminToken, Logger: quietLog()})
	body := inferBody("input", "FP32", []int{1, 784}, make([]float32, 784))
	for _, path := range []string{"/v2/models/mnist/grad", "/v2/models/mnist/versions/1/grad", "/v2/models/mnist/train"} {
		wantError(t, do(t, "POST", url+path, body), 501, "go build -tags autodiff")
	}
	if r := do(t, "POST", url+"/v2/models/mnist/infer", body); r.status != 200 {
		t.Fatalf("infer after 501s: %d %s", r.status, r.body)
	}
	var ext []string
	for _, e := range do(t, "GET", url+"/v2", "").json(t)["extensions"].([]any) {
		ext = append(ext, e.(string))
	}
	if slices.Contains(ext, "autodiff") {
		t.Errorf("extensions %v list autodiff in a build without it", ext)
	}
}
