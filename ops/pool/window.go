package pool

// Window is the attributes that lay a windowed pool's windows over its
// input, the same for MaxPool, AveragePool and LpPool, whose attribute
// structs embed it.
type Window struct {
	AutoPad     string  `onnx:"auto_pad" default:"NOTSET"`
	KernelShape []int64 `onnx:"kernel_shape"`
	Pads        []int64 `onnx:"pads"`
	Strides     []int64 `onnx:"strides"`
	Dilations   []int64 `onnx:"dilations"`
	CeilMode    bool    `onnx:"ceil_mode"`
}

// spec validates the window attributes of the pooling node op; its
// builder refuses the node when they are malformed.
func (w *Window) spec(op string) (*spec, error) {
	return newSpec(op, w.AutoPad, w.KernelShape, w.Pads, w.Strides, w.Dilations, w.CeilMode)
}

// Geometry returns how the windows lie over an input of the given shape.
func (w *Window) Geometry(shape []int) (*Geometry, error) {
	s, err := w.spec("pooling")
	if err != nil {
		return nil, err
	}
	return s.geometry(shape)
}
