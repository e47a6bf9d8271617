package repository

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
)

// Config is a model's optional config.yaml. Unknown keys are an error, so a
// misspelt key never silently does nothing.
//
//	platform: onnx_onnxv1     # if given, must be onnx_onnxv1
//	default_version: 2        # version served when a request names none
//	                          # (default: the highest loaded version)
//	parameters:               # string key/values shown in the model's
//	  owner: vision-team      # metadata under "parameters"
type Config struct {
	Platform       string            `yaml:"platform"`
	DefaultVersion int64             `yaml:"default_version"`
	Parameters     map[string]string `yaml:"parameters"`
}

// Platform is the Open Inference Protocol platform name of every model
// quantserve serves.
const Platform = "onnx_onnxv1"

// ParseConfig decodes and checks a config.yaml.
func ParseConfig(data []byte) (*Config, error) {
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("config.yaml: %w", err)
	}
	if c.Platform != "" && c.Platform != Platform {
		return nil, fmt.Errorf("config.yaml: platform %q: quantserve serves %q", c.Platform, Platform)
	}
	if c.DefaultVersion < 0 {
		return nil, fmt.Errorf("config.yaml: default_version %d must be positive", c.DefaultVersion)
	}
	return &c, nil
}
