package ml

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: domain, Type: "SVMRegressor", Since: 1, Fold: true}, buildSVMRegressor)
}

// SVMRegressorAttrs are SVMRegressor's attributes.
type SVMRegressorAttrs struct {
	Coefficients   []float32 `onnx:"coefficients"`
	KernelParams   []float32 `onnx:"kernel_params"`
	KernelType     string    `onnx:"kernel_type" default:"LINEAR"`
	NSupports      int64     `onnx:"n_supports" default:"0"`
	OneClass       int64     `onnx:"one_class" default:"0"`
	PostTransform  string    `onnx:"post_transform" default:"NONE"`
	Rho            []float32 `onnx:"rho"`
	SupportVectors []float32 `onnx:"support_vectors"`
}

// svmRegressor is a compiled SVMRegressor: libsvm's sum over ns support
// vectors, or (ns 0) liblinear's x·coefficients, plus rho.
type svmRegressor struct {
	post     postTransform
	k        svmKernel
	coef, sv []float32
	rho      float32
	oneClass bool
	ns, feat int
}

func buildSVMRegressor(n *ops.Node, a *SVMRegressorAttrs) (ops.Operator, error) {
	if err := arity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	post, err := parsePost(a.PostTransform)
	if err != nil {
		return nil, err
	}
	k, err := newSVMKernel(a.KernelType, a.KernelParams)
	if err != nil {
		return nil, err
	}
	if len(a.Rho) == 0 {
		return nil, fmt.Errorf("has no rho")
	}
	ns := int(a.NSupports)
	feat := len(a.Coefficients)
	if ns > 0 {
		if int64(ns) != a.NSupports || len(a.SupportVectors)%ns != 0 || len(a.Coefficients) < ns {
			return nil, fmt.Errorf("has %d support vector values and %d coefficients for %d support vectors", len(a.SupportVectors), len(a.Coefficients), a.NSupports)
		}
		feat = len(a.SupportVectors) / ns
	} else if a.NSupports < 0 {
		return nil, fmt.Errorf("n_supports %d is negative", a.NSupports)
	} else {
		k = svmKernel{kind: "LINEAR"}
	}
	return &svmRegressor{post: post, k: k, coef: a.Coefficients, sv: a.SupportVectors, rho: a.Rho[0],
		oneClass: a.OneClass != 0, ns: ns, feat: feat}, nil
}

func (m *svmRegressor) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	vs, rows, f, err := readRows("SVMRegressor", in[0], numeric...)
	if err != nil {
		return nil, err
	}
	if f != m.feat {
		return nil, ops.InputErrorf("SVMRegressor takes %d features, got %d", m.feat, f)
	}
	y := make([]float32, rows)
	s := make([]float64, 1)
	for r := range rows {
		x := vs[r*f : (r+1)*f]
		acc := 0.0
		if m.ns > 0 {
			for j := range m.ns {
				acc += float64(m.coef[j]) * m.k.dot(x, m.sv[j*f:(j+1)*f])
			}
		} else {
			acc = m.k.dot(x, m.coef)
		}
		acc += float64(m.rho)
		if m.oneClass {
			if acc > 0 {
				acc = 1
			} else {
				acc = -1
			}
		}
		s[0] = acc
		m.post.apply(s)
		y[r] = float32(s[0])
	}
	return []*tensor.Tensor{tensor.From([]int{rows, 1}, y)}, nil
}
