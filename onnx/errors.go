package onnx

import (
	"errors"
	"fmt"
)

// ErrUnsupported marks a load error for an operator, attribute or data type
// quantserve does not implement.
var ErrUnsupported = errors.New("model: unsupported")

// Unsupportedf returns an error wrapping ErrUnsupported.
func Unsupportedf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsupported, fmt.Sprintf(format, args...))
}
