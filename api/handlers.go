package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/oip"
	"github.com/quantserve/quantserve/ops"
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
	md.Parameters = map[string]any{"kernels": v.Model.Kernels, "layers": len(v.Model.Layers), "int8_layers": model.Int8Layers(v.Model.Layers)}
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

// infer is POST .../infer: the HTTP front end of inferCore. The body
// (JSON, or JSON followed by binary tensor data) is decoded on the infer
// path, the answer encoded into a pooled buffer and written once the path
// is done with the model.
func (s *server) infer(w http.ResponseWriter, r *http.Request, in *workInput) error {
	// The model is looked up once the body is in (the work middleware
	// received it), so a slow client never holds a model an unload waits for.
	c := &httpInfer{r: r, in: in}
	defer c.free()
	if err := s.inferCore(r.Context(), chi.URLParam(r, "model"), chi.URLParam(r, "version"), in.received, c); err != nil {
		return err
	}
	c.write(w)
	return nil
}

// httpInfer is the HTTP codec of an inference (inferCodec).
type httpInfer struct {
	r         *http.Request
	in        *workInput
	binaryAll bool    // the request's binary_data_output
	answer    *[]byte // the encoded answer, from answers
	jsonLen   int     // the length of its JSON part
	binary    bool    // binary tensor data follow the JSON
}

func (c *httpInfer) decode() (*oip.InferRequest, error) {
	req, binaryAll, err := decodeInfer(c.r, c.in.body)
	c.binaryAll = binaryAll
	return req, err
}

// hold settles the body: from here on the decoded tensors hold its share
// of the budget.
func (c *httpInfer) hold(decoded []*tensor.Tensor) error { return c.in.settle(decoded...) }

func (c *httpInfer) account() *account { return c.in.acct }

// encode appends the answer to a buffer, pooled unless the answer is
// large: JSON, with the outputs the request asked in binary after it. The
// answer's bound is charged to the request before the buffer is made.
func (c *httpInfer) encode(req *oip.InferRequest, resp *oip.InferResponse) error {
	for i := range resp.Outputs {
		o := &resp.Outputs[i]
		o.Binary = c.binaryAll
		for _, ro := range req.Outputs {
			if ro.Name == o.Name {
				if set, err := wantsBinaryOverride(ro.Parameters); err != nil {
					return err
				} else if set != nil {
					o.Binary = *set
				}
			}
		}
		c.binary = c.binary || o.Binary
	}
	bound := oip.InferResponseBound(resp)
	if err := c.in.acct.grow(bound); err != nil {
		return fmt.Errorf("encoding the answer needs up to %s: %w", ops.FormatBytes(bound), err)
	}
	if bound > maxPooledAnswer {
		buf := make([]byte, 0, bound)
		c.answer = &buf
	} else {
		c.answer = getAnswer()
	}
	b := oip.AppendInferResponse((*c.answer)[:0], resp)
	c.jsonLen = len(b)
	if c.binary {
		for _, o := range resp.Outputs {
			if o.Binary {
				b = oip.AppendBinaryTensor(b, o.Tensor)
			}
		}
	} else {
		b = append(b, '\n')
	}
	*c.answer = b
	if held := int64(cap(b)); held < bound {
		c.in.acct.shrink(bound - held)
	}
	return nil
}

// write sends the encoded answer.
func (c *httpInfer) write(w http.ResponseWriter) {
	b := *c.answer
	h := w.Header()
	if c.binary {
		h.Set(binaryHeader, strconv.Itoa(c.jsonLen))
		h["Content-Type"] = octetStreamType
	} else {
		h["Content-Type"] = jsonType
	}
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// The Content-Type values of infer answers, shared by every answer's
// header (net/http only reads them; Header.Add would copy on append).
var (
	jsonType        = []string{"application/json"}
	octetStreamType = []string{"application/octet-stream"}
)

// free gives the answer's buffer back.
func (c *httpInfer) free() {
	if c.answer != nil {
		putAnswer(c.answer)
		c.answer = nil
	}
}

// Answers are encoded into pooled buffers whose capacity the next answer
// reuses, so a server answering similar requests stops allocating for
// them. A buffer that grew past maxPooledAnswer is left to the collector:
// one large answer does not pin its memory.
const maxPooledAnswer = 1 << 20

var answers = sync.Pool{New: func() any { return new([]byte) }}

// getAnswer returns an empty buffer, with the capacity of an earlier
// answer when the pool has one.
func getAnswer() *[]byte {
	p := answers.Get().(*[]byte)
	*p = (*p)[:0]
	return p
}

// putAnswer gives a buffer from getAnswer back. The caller must not use it
// afterwards.
func putAnswer(p *[]byte) {
	if cap(*p) > maxPooledAnswer {
		return
	}
	*p = (*p)[:0]
	answers.Put(p)
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
