package ops

import (
	"errors"
	"fmt"

	"github.com/quantserve/quantserve/onnx"
)

// ErrInput marks errors caused by the inputs of a run (wrong types or
// shapes, or shapes the graph cannot take). Callers map it to a client
// error.
var ErrInput = errors.New("model: bad input")

// ErrUnsupported marks a load error for an operator, attribute or data type
// quantserve does not implement.
var ErrUnsupported = onnx.ErrUnsupported

// Unsupportedf returns an error wrapping ErrUnsupported.
func Unsupportedf(format string, args ...any) error { return onnx.Unsupportedf(format, args...) }

// InputErrorf returns an error wrapping ErrInput: the inputs of a run
// cannot flow through an operator.
func InputErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInput, fmt.Sprintf(format, args...))
}
