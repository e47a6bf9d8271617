// Package pool holds the pooling operators: MaxPool, AveragePool and
// LpPool over windows of any rank, their global forms, MaxUnpool, and the
// region pools MaxRoiPool and RoiAlign.
//
// The windowed pools share their window attributes ([Window], which
// MaxPoolAttrs, AveragePoolAttrs and LpPoolAttrs embed) and one geometry
// ([Geometry]: those windows laid over an input shape), which autodiff's
// gradients read through [Window.Geometry].
//
// GlobalAveragePool, GlobalMaxPool and 2-D MaxPool have channels-last
// forms in ops.RewriteDomain ([GlobalAveragePoolNHWC],
// [GlobalMaxPoolNHWC], [MaxPoolNHWC]), which the graph compiler's layout
// rule gives a fused convolution's channels-last output.
package pool
