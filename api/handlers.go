package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/oip"
	"github.com/quantserve/quantserve/repository"
	"github.com/quantserve/quantserve/tensor"
)

func (s *server) metrics(w http.ResponseWriter, r *http.Request) error {
	if s.tel == nil {
		return errorf(CodeUnavailable, "metrics are unavailable: see the server log")
	}
	s.tel.Handler.ServeHTTP(w, r)
	return nil
}

func (s *server) live(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]bool{"live": true})
	return nil
}

// readyAnswer is the body of GET /v2/health/ready.
type readyAnswer struct {
	Ready  bool   `json:"ready"`
	Reason string `json:"reason,omitempty"` // why not
}

func (s *server) ready(w http.ResponseWriter, r *http.Request) error {
	ans := readyAnswer{Ready: true}
	if s.draining() {
		ans = readyAnswer{Reason: "draining: the server is shutting down"}
	} else if why := s.repo.NotReady(); why != "" {
		ans = readyAnswer{Reason: why}
	}
	status := http.StatusOK
	if !ans.Ready {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, ans)
	return nil
}

// extensions are the protocol extensions GET /v2 lists.
var extensions = []string{"model_repository", "binary_tensor_data", "statistics", "model_configuration"}

func (s *server) serverMetadata(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, oip.ServerMetadata{Name: ServerName, Version: s.version, Extensions: s.extensions(), Kernels: s.kernels})
	return nil
}

// lookup resolves the {model} and optional {version} path parameters. The
// caller must call release when done with the version.
func (s *server) lookup(r *http.Request) (e *repository.Entry, v *repository.Version, release func(), err error) {
	return s.repo.Get(chi.URLParam(r, "model"), chi.URLParam(r, "version"))
}

func (s *server) modelMetadata(w http.ResponseWriter, r *http.Request) error {
	e, v, release, err := s.lookup(r)
	if err != nil {
		return err
	}
	defer release()
	writeJSON(w, http.StatusOK, modelMetadataOf(e, v))
	return nil
}

// modelMetadataOf is a model version's metadata, for HTTP and gRPC alike.
func modelMetadataOf(e *repository.Entry, v *repository.Version) oip.ModelMetadata {
	md := oip.ModelMetadata{Name: e.Name, Platform: repository.Platform, Versions: []string{}}
	for _, ver := range e.Versions {
		md.Versions = append(md.Versions, strconv.FormatInt(ver.Number, 10))
	}
	md.Inputs = tensorMetadata(v.Model.Inputs)
	md.Outputs = tensorMetadata(v.Model.Outputs)
	// OIP allows string, number and boolean parameters only: the per-layer
	// detail is in the model's configuration (GET .../config).
	md.Parameters = map[string]any{"kernels": v.Model.Kernels, "layers": len(v.Model.Layers), "int8_layers": int8Layers(v.Model.Layers)}
	if e.Config != nil {
		for k, val := range e.Config.Parameters {
			md.Parameters[k] = val
		}
	}
	return md
}

func tensorMetadata(specs []model.IOSpec) []oip.TensorMetadata {
	out := make([]oip.TensorMetadata, 0, len(specs))
	for _, sp := range specs {
		shape := sp.Shape
		if shape == nil {
			shape = []int{}
		}
		out = append(out, oip.TensorMetadata{Name: sp.Name, Datatype: sp.DType.String(), Shape: shape})
	}
	return out
}

func (s *server) modelReady(w http.ResponseWriter, r *http.Request) error {
	e, _, release, err := s.lookup(r)
	if err != nil {
		return err
	}
	release()
	writeJSON(w, http.StatusOK, map[string]any{"name": e.Name, "ready": true})
	return nil
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (s *server) infer(w http.ResponseWriter, r *http.Request) (err error) {
	body := requestBody(r)
	received := bodyReceived(r)
	// The model is looked up once the body is in (the work middleware
	// received it), so a slow client never holds a model an unload waits for.
	e, v, release, err := s.lookup(r)
	if err != nil {
		return err
	}
	defer release()
	version := strconv.FormatInt(v.Number, 10)
	noteInference(r.Context(), e.Name, version)
	defer func() { s.tel.Inference(r.Context(), e.Name, version, err == nil) }()
	var timing repository.Timing
	start := time.Now()
	timing.Queue = start.Sub(received)
	defer func() { recordStats(v, received, &timing, err) }()
	buf := bufPool.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 1<<20 { // don't pin huge buffers in the pool
			buf.Reset()
			bufPool.Put(buf)
		}
	}()
	buf.Reset()
	_, span := s.step(r.Context(), "decode")
	req, binaryAll, err := decodeInfer(r, body)
	body = nil
	var inputs map[string]*tensor.Tensor
	var names []string
	if err == nil {
		inputs, names, timing.Batch, err = checkRequest(e, v, req, func(decoded []*tensor.Tensor) error { return settle(r, decoded...) })
	}
	endStep(span, err)
	if err != nil {
		return err
	}
	inferStart := time.Now()
	timing.Input = inferStart.Sub(start)
	names, outs, err := s.execute(r.Context(), v, inputs, names)
	if err != nil {
		return err
	}
	outputStart := time.Now()
	timing.Infer = outputStart.Sub(inferStart)
	_, span = s.step(r.Context(), "encode")
	defer span.End()
	resp := &oip.InferResponse{ModelName: e.Name, ModelVersion: version, ID: req.ID}
	anyBinary := false
	for _, name := range names {
		binary := binaryAll
		for _, o := range req.Outputs {
			if o.Name == name {
				if set, err := wantsBinaryOverride(o.Parameters); err != nil {
					return err
				} else if set != nil {
					binary = *set
				}
			}
		}
		anyBinary = anyBinary || binary
		resp.Outputs = append(resp.Outputs, oip.OutputTensor{Name: name, Tensor: outs[name], Binary: binary})
	}
	buf.Reset()
	b := oip.AppendInferResponse(buf.AvailableBuffer(), resp)
	if anyBinary {
		w.Header().Set(binaryHeader, strconv.Itoa(len(b)))
		for _, o := range resp.Outputs {
			if o.Binary {
				b = oip.AppendBinaryTensor(b, o.Tensor)
			}
		}
		timing.Output = time.Since(outputStart)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusOK)
		w.Write(b)
		return nil
	}
	timing.Output = time.Since(outputStart)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(http.StatusOK)
	w.Write(append(b, '\n'))
	return nil
}

// decodeInfer decodes an infer body, JSON or with binary tensor data, and
// reads its "binary_data_output" parameter.
func decodeInfer(r *http.Request, body []byte) (*oip.InferRequest, bool, error) {
	var req *oip.InferRequest
	var err error
	if h := r.Header.Get(binaryHeader); h != "" {
		n, err := strconv.Atoi(h)
		if err != nil || n < 0 || n > len(body) {
			return nil, false, errorf(CodeInvalid, fmt.Sprintf("%s: %q is not a length within the %d-byte body", binaryHeader, h, len(body)))
		}
		if req, err = oip.DecodeBinaryInferRequest(body[:n], body[n:]); err != nil {
			return nil, false, err
		}
	} else if req, err = oip.DecodeInferRequest(body); err != nil {
		return nil, false, err
	}
	binaryAll, err := wantsBinary(req.Parameters, "binary_data_output")
	return req, binaryAll, err
}

// binaryHeader is the header of Triton's binary tensor data extension: the
// length of the JSON part of a body whose tensor bytes follow it.
const binaryHeader = "Inference-Header-Content-Length"

// wantsBinary reads a boolean request parameter (false when absent).
func wantsBinary(params []byte, key string) (bool, error) {
	if len(params) == 0 {
		return false, nil
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(params, &p); err != nil {
		return false, errorf(CodeInvalid, "parameters: "+err.Error())
	}
	raw, ok := p[key]
	if !ok {
		return false, nil
	}
	var v bool
	if err := json.Unmarshal(raw, &v); err != nil {
		return false, errorf(CodeInvalid, fmt.Sprintf("parameters.%s must be true or false", key))
	}
	return v, nil
}

// wantsBinaryOverride reads an output's "binary_data" parameter, nil when
// absent.
func wantsBinaryOverride(params []byte) (*bool, error) {
	if len(params) == 0 || !bytes.Contains(params, []byte(`"binary_data"`)) {
		return nil, nil
	}
	v, err := wantsBinary(params, "binary_data")
	return &v, err
}
