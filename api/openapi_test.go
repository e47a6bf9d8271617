package api

import (
	"context"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/go-chi/chi/v5"

	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/repository"
)

func loadSpec(t *testing.T) *openapi3.T {
	t.Helper()
	data, err := os.ReadFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.yaml is not valid OpenAPI: %v", err)
	}
	if doc.OpenAPI != "3.0.3" {
		t.Errorf("openapi.yaml declares %q, want 3.0.3", doc.OpenAPI)
	}
	return doc
}

// TestOpenAPIMatchesRoutes walks the chi router and fails when its routes
// and methods differ from openapi.yaml's paths.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	doc := loadSpec(t)
	var spec []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			spec = append(spec, method+" "+path)
		}
	}
	router := NewRouter(Options{Repository: repository.New(serverOptions())}).(chi.Routes)
	var routes []string
	err := chi.Walk(router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routes = append(routes, method+" "+strings.TrimSuffix(route, "/"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(spec)
	sort.Strings(routes)
	for _, r := range routes {
		if !slices.Contains(spec, r) {
			t.Errorf("route %s is not in openapi.yaml", r)
		}
	}
	for _, s := range spec {
		if !slices.Contains(routes, s) {
			t.Errorf("openapi.yaml has %s, the router does not", s)
		}
	}
}

// TestResponsesMatchOpenAPI sends real requests and validates requests and
// responses against openapi.yaml's schemas.
func TestResponsesMatchOpenAPI(t *testing.T) {
	doc := loadSpec(t)
	doc.Servers = nil // match paths without a server prefix
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	url := testServer(t, repository.New(serverOptions(), repository.Source{Name: defaultmodel.Name, Version: 1, ONNX: defaultmodel.ONNX}), 0)
	good := inferBody("input", "FP32", []int{1, 784}, make([]float32, 784))
	cases := []struct{ method, path, body string }{
		{"GET", "/v2/health/live", ""},
		{"GET", "/v2/health/ready", ""},
		{"GET", "/v2", ""},
		{"GET", "/v2/models/mnist", ""},
		{"GET", "/v2/models/mnist/versions/1", ""},
		{"GET", "/v2/models/mnist/ready", ""},
		{"GET", "/v2/models/mnist/versions/1/ready", ""},
		{"POST", "/v2/models/mnist/infer", good},
		{"POST", "/v2/models/mnist/versions/1/infer", strings.Replace(good, `{"inputs"`, `{"id":"7","outputs":[{"name":"scores"}],"inputs"`, 1)},
		{"POST", "/v2/models/mnist/infer", `{"inputs":[{"name":"input","shape":[1],"datatype":"FP32","data":[1]}]}`},
		{"POST", "/v2/models/mnist/infer", inferBody("input", "FP32", []int{0, 784}, []float32{})},
		{"GET", "/v2/models/nope", ""},
		{"POST", "/v1/ops/quantize", `{"tensor":{"shape":[2,2],"datatype":"FP32","data":[1,-0.5,0.25,2]},"scheme":"per_block"}`},
		{"POST", "/v1/ops/dequantize", `{"values":{"shape":[2],"datatype":"INT8","data":[127,-3]},"scales":{"shape":[1],"datatype":"FP32","data":[0.5]},"scheme":"per_tensor"}`},
		{"POST", "/v1/ops/matmul", `{"a":{"shape":[1,2],"datatype":"FP32","data":[1,2]},"b":{"shape":[2,1],"datatype":"FP32","data":[3,4]}}`},
		{"POST", "/v1/ops/qmatmul", `{"a":{"shape":[1,2],"datatype":"FP32","data":[1,2]},"b":{"shape":[2,1],"datatype":"FP32","data":[3,4]}}`},
		{"POST", "/v1/ops/qmatmul", `{"a":{"shape":[1,2],"datatype":"FP32","data":[1,2]}}`},
	}
	for _, c := range cases {
		resp := do(t, c.method, url+c.path, c.body)
		specReq, _ := http.NewRequest(c.method, c.path, strings.NewReader(c.body))
		specReq.Header.Set("Content-Type", "application/json")
		route, params, err := router.FindRoute(specReq)
		if err != nil {
			t.Errorf("%s %s: not in the spec: %v", c.method, c.path, err)
			continue
		}
		in := &openapi3filter.RequestValidationInput{Request: specReq, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		if c.method == "POST" && resp.status == 200 {
			if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
				t.Errorf("%s %s: request does not match the spec: %v", c.method, c.path, err)
			}
		}
		out := &openapi3filter.ResponseValidationInput{
			RequestValidationInput: in, Status: resp.status, Header: resp.header,
			Body: nopCloser{strings.NewReader(string(resp.body))},
		}
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			t.Errorf("%s %s: %d response does not match the spec: %v", c.method, c.path, resp.status, err)
		}
	}
}

type nopCloser struct{ *strings.Reader }

func (nopCloser) Close() error { return nil }
