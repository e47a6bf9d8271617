package ml

import (
	"fmt"
	"math"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: domain, Type: "SVMClassifier", Since: 1, Fold: true}, buildSVMClassifier)
}

// SVMClassifierAttrs are SVMClassifier's attributes.
type SVMClassifierAttrs struct {
	ClasslabelsInts    []int64   `onnx:"classlabels_ints"`
	ClasslabelsStrings []string  `onnx:"classlabels_strings"`
	Coefficients       []float32 `onnx:"coefficients"`
	KernelParams       []float32 `onnx:"kernel_params"`
	KernelType         string    `onnx:"kernel_type" default:"LINEAR"`
	PostTransform      string    `onnx:"post_transform" default:"NONE"`
	ProbA              []float32 `onnx:"prob_a"`
	ProbB              []float32 `onnx:"prob_b"`
	Rho                []float32 `onnx:"rho"`
	SupportVectors     []float32 `onnx:"support_vectors"`
	VectorsPerClass    []int64   `onnx:"vectors_per_class"`
}

// svmClassifier is a compiled SVMClassifier: libsvm's one-against-one
// classification over support vectors, or liblinear's one score per class.
type svmClassifier struct {
	coef, sv, rho []float32
	probA, probB  []float32
	perClass      []int64 // vectors_per_class
	k             svmKernel
	post          postTransform
	labels        classLabels
	nc            int   // classes
	start         []int // first support vector of each class
	nv, feat      int   // support vectors, features
	proba         bool
	allPos        bool // every coefficient >= 0
}

func buildSVMClassifier(n *ops.Node, a *SVMClassifierAttrs) (ops.Operator, error) {
	if err := arity(n, 1, 1, 1, 2); err != nil {
		return nil, err
	}
	c := &svmClassifier{coef: a.Coefficients, sv: a.SupportVectors, rho: a.Rho, probA: a.ProbA, probB: a.ProbB, perClass: a.VectorsPerClass}
	var err error
	if c.post, err = parsePost(a.PostTransform); err != nil {
		return nil, err
	}
	if c.k, err = newSVMKernel(a.KernelType, a.KernelParams); err != nil {
		return nil, err
	}
	if c.labels, err = newClassLabels(a.ClasslabelsInts, a.ClasslabelsStrings); err != nil {
		return nil, err
	}
	c.nc = c.labels.n()
	if len(a.Coefficients) == 0 || len(a.Rho) == 0 {
		return nil, fmt.Errorf("has no coefficients or no rho")
	}
	if len(a.ProbA) != len(a.ProbB) {
		return nil, fmt.Errorf("has %d prob_a and %d prob_b", len(a.ProbA), len(a.ProbB))
	}
	for _, v := range a.VectorsPerClass {
		if v < 0 || v > int64(len(a.SupportVectors)) {
			return nil, fmt.Errorf("vectors_per_class %v is out of range", a.VectorsPerClass)
		}
		c.start = append(c.start, c.nv)
		c.nv += int(v)
	}
	pairs := c.nc * (c.nc - 1) / 2
	if c.nv > 0 {
		if len(a.VectorsPerClass) != c.nc {
			return nil, fmt.Errorf("has vectors_per_class for %d classes, and %d classes", len(a.VectorsPerClass), c.nc)
		}
		if len(a.SupportVectors)%c.nv != 0 || len(a.Coefficients) != (c.nc-1)*c.nv || len(a.Rho) < pairs {
			return nil, fmt.Errorf("has %d support vector values, %d coefficients and %d rho for %d support vectors of %d classes", len(a.SupportVectors), len(a.Coefficients), len(a.Rho), c.nv, c.nc)
		}
		c.feat = len(a.SupportVectors) / c.nv
		c.proba = len(a.ProbA) > 0
		if c.proba && len(a.ProbA) < pairs {
			return nil, fmt.Errorf("has %d prob_a for %d class pairs", len(a.ProbA), pairs)
		}
	} else {
		if len(a.Coefficients)%c.nc != 0 {
			return nil, fmt.Errorf("has %d coefficients for %d classes", len(a.Coefficients), c.nc)
		}
		c.feat = len(a.Coefficients) / c.nc
		c.k = svmKernel{kind: "LINEAR"}
	}
	if len(a.Rho) == 1 && c.nc != 2 && c.labels.strings != nil {
		return nil, ops.Unsupportedf("an SVMClassifier with one rho and %d string labels", c.nc)
	}
	c.allPos = !slices.ContainsFunc(a.Coefficients, func(v float32) bool { return v < 0 })
	return c, nil
}

func (c *svmClassifier) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	vs, rows, f, err := readRows("SVMClassifier", in[0], numeric...)
	if err != nil {
		return nil, err
	}
	if f != c.feat {
		return nil, ops.InputErrorf("SVMClassifier takes %d features, got %d", c.feat, f)
	}
	var z []float32
	width := -1
	idx := make([]int, rows)
	ints := make([]int64, rows) // labels that are no class's (one rho, not two classes)
	rawLabel := false
	kern := make([]float64, c.nv)
	for r := range rows {
		x := vs[r*f : (r+1)*f]
		var scores, votes []float64
		if c.nv == 0 {
			scores = make([]float64, c.nc)
			for j := range scores {
				scores[j] = float64(c.rho[0]) + c.k.dot(x, c.coef[j*f:(j+1)*f])
			}
		} else {
			for j := range c.nv {
				kern[j] = c.k.dot(x, c.sv[j*f:(j+1)*f])
			}
			votes = make([]float64, c.nc)
			for i := range c.nc {
				for j := i + 1; j < c.nc; j++ {
					s := float64(c.rho[len(scores)])
					si, sj := c.start[i], c.start[j]
					for v := range int(c.perClass[i]) {
						s += float64(c.coef[(j-1)*c.nv+si+v]) * kern[si+v]
					}
					for v := range int(c.perClass[j]) {
						s += float64(c.coef[i*c.nv+sj+v]) * kern[sj+v]
					}
					scores = append(scores, s)
					if s > 0 {
						votes[i]++
					} else {
						votes[j]++
					}
				}
			}
			if c.proba {
				scores = svmProbabilities(scores, c.probA, c.probB, c.nc)
			}
		}
		var best int
		var bestW float64
		if votes != nil {
			best = argmax(votes)
			bestW = votes[best]
		} else {
			best = argmax(scores)
			bestW = scores[best]
		}
		extra := -1
		switch {
		case len(c.rho) == 1 && c.nc == 2:
			extra = 2
			if !c.proba && c.allPos && bestW >= 0.5 {
				best = 1
			}
			idx[r] = best
		case len(c.rho) == 1:
			rawLabel = true
			if bestW > 0 {
				ints[r] = 1
			}
		default:
			idx[r] = best
		}
		scores = svmFinalScores(scores, c.post, extra)
		if width < 0 {
			width = len(scores)
			z = make([]float32, 0, rows*width)
		}
		z = append(z, float32s(scores)...)
	}
	if width < 0 {
		width = c.nc
		if c.nv > 0 && !c.proba {
			width = c.nc * (c.nc - 1) / 2
		}
		if width == 1 && len(c.rho) == 1 && c.nc == 2 && c.post != postProbit {
			width = 2
		}
	}
	y := c.labels.tensor(idx)
	if rawLabel {
		y = tensor.From([]int{rows}, ints)
	}
	return []*tensor.Tensor{y, tensor.From([]int{rows, width}, z)}, nil
}

// svmFinalScores applies the post transform; a single score becomes a
// pair as libsvm's binary classifiers report it.
func svmFinalScores(s []float64, post postTransform, extra int) []float64 {
	if len(s) != 1 {
		post.apply(s)
		return s
	}
	v := s[0]
	switch {
	case post == postProbit:
		return []float64{probit(v)}
	case extra == 0 || extra == 1:
		return []float64{1 - v, v}
	case extra == 2 || extra == 3:
		if post == postLogistic {
			return []float64{logistic(-v), logistic(v)}
		}
		p := []float64{-v, v}
		if post == postSoftmax || post == postSoftmaxZero {
			post.apply(p)
		}
		return p
	}
	return s
}

// svmProbabilities turns one-against-one decision values into class
// probabilities: Platt's sigmoid per pair, then the pairwise coupling of
// Wu, Lin and Weng (libsvm's multiclass_probability).
func svmProbabilities(scores []float64, pa, pb []float32, k int) []float64 {
	r := make([]float64, k*k)
	idx := 0
	for i := range k {
		for j := i + 1; j < k; j++ {
			v := 1 - logistic(scores[idx]*float64(pa[idx])+float64(pb[idx]))
			v = min(max(v, 1e-7), 1-1e-7)
			r[i*k+j], r[j*k+i] = v, 1-v
			idx++
		}
	}
	q := make([]float64, k*k)
	p := make([]float64, k)
	qp := make([]float64, k)
	for t := range k {
		p[t] = 1 / float64(k)
		for j := range t {
			q[t*k+t] += r[j*k+t] * r[j*k+t]
			q[t*k+j] = q[j*k+t]
		}
		for j := t + 1; j < k; j++ {
			q[t*k+t] += r[j*k+t] * r[j*k+t]
			q[t*k+j] = -r[j*k+t] * r[t*k+j]
		}
	}
	eps := 0.005 / float64(k)
	for range max(100, k) {
		pqp := 0.0
		for t := range k {
			qp[t] = 0
			for j := range k {
				qp[t] += q[t*k+j] * p[j]
			}
			pqp += p[t] * qp[t]
		}
		maxErr := 0.0
		for t := range k {
			maxErr = max(maxErr, math.Abs(qp[t]-pqp))
		}
		if maxErr < eps {
			break
		}
		for t := range k {
			if q[t*k+t] == 0 {
				continue
			}
			diff := (-qp[t] + pqp) / q[t*k+t]
			p[t] += diff
			pqp = (pqp + diff*(diff*q[t*k+t]+2*qp[t])) / (1 + diff) / (1 + diff)
			for j := range k {
				qp[j] = (qp[j] + diff*q[t*k+j]) / (1 + diff)
				p[j] /= 1 + diff
			}
		}
	}
	return p
}
