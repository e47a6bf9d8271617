package api

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/go-chi/chi/v5"

	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/repository"
	"github.com/quantserve/quantserve/tensor"
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
		{"GET", "/v2/", ""},
		{"HEAD", "/v2/health/live", ""},
		{"HEAD", "/v2/health/ready", ""},
		{"GET", "/v2/models/stats", ""},
		{"GET", "/v2/models/mnist/stats", ""},
		{"GET", "/v2/models/mnist/versions/1/stats", ""},
		{"GET", "/v2/models/nope/stats", ""},
		{"GET", "/v2/models/mnist/config", ""},
		{"GET", "/v2/models/mnist/versions/1/config", ""},
		{"GET", "/v2/models/mnist/versions/9/config", ""},
		{"POST", "/v2/repository/index", ""},
		{"GET", "/openapi.yaml", ""},
		{"GET", "/docs", ""},
		{"GET", "/docs/redoc.standalone.js", ""},
		{"DELETE", "/v2/health/live", ""},
	}
	validate := func(url, method, path, body string) response {
		t.Helper()
		return validateExchange(t, router, url, method, path, body)
	}
	for _, c := range cases {
		validate(url, c.method, c.path, c.body)
	}

	// A server with nothing to serve: not ready (with a reason), an empty index.
	empty := testServer(t, openRepo(t, t.TempDir()), 0)
	if r := validate(empty, "GET", "/v2/health/ready", ""); r.status != 503 || !strings.Contains(string(r.body), "no model to serve") {
		t.Errorf("empty repository: ready %d %s", r.status, r.body)
	}
	if r := validate(empty, "POST", "/v2/repository/index", ""); strings.TrimSpace(string(r.body)) != "[]" {
		t.Errorf("empty repository: index %s, want []", r.body)
	}
	validate(empty, "HEAD", "/v2/health/ready", "")

	// A Triton config.pbtxt with a batch dimension, an INT64 and an FP64 model.
	dir := writeRepo(t, map[string]map[int][]byte{
		"ids": {1: onnxbuild.Identity(tensor.Int64, []int{-1, 2})},
		"f64": {3: onnxbuild.Identity(tensor.Float64, []int{-1})},
	}, nil)
	if err := os.WriteFile(filepath.Join(dir, "ids", "config.pbtxt"), []byte(`max_batch_size: 2 input [{name: "x" data_type: TYPE_INT64 dims: [2]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	triton := testServer(t, openRepo(t, dir), 0)
	for _, c := range []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"POST", "/v2/models/ids/infer", `{"inputs":[{"name":"x","shape":[2,2],"datatype":"INT64","data":[16777217,-9007199254740993,0,1]}]}`, 200, `"data":[16777217,-9007199254740993,0,1]`},
		{"POST", "/v2/models/ids/infer", `{"inputs":[{"name":"x","shape":[3,2],"datatype":"INT64","data":[1,2,3,4,5,6]}]}`, 400, "max_batch_size of 2"},
		{"POST", "/v2/models/f64/infer", `{"inputs":[{"name":"x","shape":[2],"datatype":"FP64","data":[0.1,1e300]}]}`, 200, `"data":[0.1,1e+300]`},
		{"GET", "/v2/models/ids/config", "", 200, `"max_batch_size":2,"version_policy":{"all":{}},"input":[{"name":"x","data_type":"TYPE_INT64","dims":[2]}]`},
		{"GET", "/v2/models/ids", "", 200, `"shape":[-1,2]`},
		{"GET", "/v2/models/ids/stats", "", 200, `"inference_count":2,"execution_count":1`},
		{"GET", "/v2/", "", 200, `"statistics","model_configuration"`},
	} {
		if r := validate(triton, c.method, c.path, c.body); r.status != c.status || !strings.Contains(string(r.body), c.want) {
			t.Errorf("%s %s: %d %s, want %d with %s", c.method, c.path, r.status, r.body, c.status, c.want)
		}
	}
}

// validateExchange sends a request to the server at url and validates the
// request (when it succeeded) and the response against openapi.yaml.
func validateExchange(t *testing.T, router routers.Router, url, method, path, body string) response {
	t.Helper()
	resp := do(t, method, url+path, body)
	{
		c := struct{ method, path, body string }{method, path, body}
		specPath := c.path
		if len(specPath) > 1 {
			specPath = strings.TrimSuffix(specPath, "/") // the server ignores a trailing slash
		}
		specReq, _ := http.NewRequest(c.method, specPath, strings.NewReader(c.body))
		specReq.Header.Set("Content-Type", "application/json")
		route, params, err := router.FindRoute(specReq)
		if err != nil {
			if resp.status != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: not in the spec: %v", c.method, c.path, err)
			}
			return resp
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
	return resp
}

func init() {
	// the documentation's bodies are plain text to the validator
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.FileBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/javascript", openapi3filter.FileBodyDecoder)
}

type nopCloser struct{ *strings.Reader }

func (nopCloser) Close() error { return nil }
