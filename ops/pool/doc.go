// Package pool holds the pooling operators: MaxPool, AveragePool and
// LpPool over windows of any rank, their global forms, MaxUnpool, and the
// region pools MaxRoiPool and RoiAlign.
//
// The windowed pools share one geometry ([Geometry]: the windows of a
// node's attributes laid over an input shape), which autodiff's gradients
// read through [MaxPoolAttrs.Geometry] and [AveragePoolAttrs.Geometry].
package pool
