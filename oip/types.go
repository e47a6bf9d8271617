package oip

import (
	"encoding/json"

	"github.com/quantserve/quantserve/tensor"
)

// InferRequest is an inference request body.
type InferRequest struct {
	ID         string
	Parameters json.RawMessage // the raw "parameters" object, nil if absent
	Inputs     []InputTensor
	Outputs    []RequestedOutput
}

// InputTensor is one entry of "inputs", its data decoded into Tensor.
type InputTensor struct {
	Name       string
	Parameters json.RawMessage
	Tensor     *tensor.Tensor
}

// RequestedOutput is one entry of "outputs".
type RequestedOutput struct {
	Name       string
	Parameters json.RawMessage
}

// InferResponse is an inference response body.
type InferResponse struct {
	ModelName    string
	ModelVersion string
	ID           string
	Outputs      []OutputTensor
}

// OutputTensor is one entry of a response's "outputs".
type OutputTensor struct {
	Name   string
	Tensor *tensor.Tensor
	Binary bool // data goes after the JSON (binary tensor data extension)
}

// TensorMetadata describes a model input or output.
type TensorMetadata struct {
	Name     string `json:"name"`
	Datatype string `json:"datatype"`
	Shape    []int  `json:"shape"`
}

// ModelMetadata is the body of GET /v2/models/{name}[/versions/{version}].
type ModelMetadata struct {
	Name       string           `json:"name"`
	Versions   []string         `json:"versions"`
	Platform   string           `json:"platform"`
	Inputs     []TensorMetadata `json:"inputs"`
	Outputs    []TensorMetadata `json:"outputs"`
	Parameters map[string]any   `json:"parameters,omitempty"`
}

// ServerMetadata is the body of GET /v2.
type ServerMetadata struct {
	Name       string   `json:"name"`
	Version    string   `json:"version"`
	Extensions []string `json:"extensions"`
	Kernels    string   `json:"kernels,omitempty"` // quantserve: the kernel table in use
}
