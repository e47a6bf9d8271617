package ops

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// MaxOpset is the newest ai.onnx opset this build implements. A model
// importing a newer one runs only where every node's operator is
// implemented for it, which none is: it is refused at load.
const MaxOpset = 27

// Descriptor describes one implementation of an ONNX operator over a
// contiguous range of opset versions, as ONNX Runtime's kernel registry
// does: the compiler picks, for each node, the descriptor whose range holds
// the opset its model imports for the node's domain, and refuses the node
// when there is none.
type Descriptor struct {
	Domain string // "" for the default domain (ai.onnx)
	Type   string // the op type, e.g. "Conv"
	Since  int64  // first opset version implemented
	Until  int64  // last opset version implemented; 0 means through MaxOpset
	// Fold marks a deterministic operator: a node whose inputs are all
	// known at load (initializers, constants, folded nodes) is run once
	// then and becomes a constant.
	Fold bool
	// Refused marks an operator registered only to refuse it at load with
	// the reason (it draws random numbers, or its values cannot cross the
	// Open Inference Protocol), rather than as an unknown operator.
	Refused bool

	parse func(n *Node) (any, error)
	build func(n *Node, attrs any) (Operator, error)
}

// Parse parses n's attributes into the descriptor's attribute struct (a
// pointer), refusing attributes it does not name.
func (d *Descriptor) Parse(n *Node) (any, error) { return d.parse(n) }

// Build compiles n with its parsed attributes into an Operator.
func (d *Descriptor) Build(n *Node, attrs any) (Operator, error) { return d.build(n, attrs) }

// String names the operator and its range: "Conv (ai.onnx 11–27)".
func (d *Descriptor) String() string {
	dom := d.Domain
	if dom == "" {
		dom = "ai.onnx"
	}
	return fmt.Sprintf("%s (%s %d–%d)", d.Type, dom, d.Since, d.last())
}

func (d *Descriptor) last() int64 {
	if d.Until == 0 {
		if d.Domain == "" {
			return MaxOpset
		}
		return 1 << 30
	}
	return d.Until
}

func (d *Descriptor) covers(opset int64) bool { return opset >= d.Since && opset <= d.last() }

type opKey struct{ domain, typ string }

// registry holds every descriptor by (domain, type), sorted by Since. It is
// filled by init functions in the operator files and never changed after.
var registry = map[opKey][]*Descriptor{}

// Register adds an operator implementation whose attributes parse into A,
// a struct whose fields carry `onnx:"name"` tags (see ParseAttrs); build
// compiles a node given its parsed attributes. Overlapping ranges for one
// operator are a programming error and panic at init. It returns the
// registered descriptor: a family exports the descriptors others key on
// (autodiff binds gradients to them).
func Register[A any](d Descriptor, build func(n *Node, a *A) (Operator, error)) *Descriptor {
	if d.Since < 1 || d.Until != 0 && d.Until < d.Since {
		panic(fmt.Sprintf("ops: operator %s: bad opset range", d.Type))
	}
	CheckAttrs[A]() // validates A's tags now, at init
	d.parse = func(n *Node) (any, error) {
		a := new(A)
		if err := ParseAttrs(n.Attrs, a); err != nil {
			return nil, err
		}
		return a, nil
	}
	d.build = func(n *Node, a any) (Operator, error) { return build(n, a.(*A)) }
	k := opKey{NormDomain(d.Domain), d.Type}
	d.Domain = k.domain
	for _, o := range registry[k] {
		if d.Since <= o.last() && o.Since <= d.last() {
			panic(fmt.Sprintf("ops: operator %s registered twice for overlapping opsets: %v and %v", d.Type, o, &d))
		}
	}
	registry[k] = append(registry[k], &d)
	sort.Slice(registry[k], func(i, j int) bool { return registry[k][i].Since < registry[k][j].Since })
	return &d
}

// An Op is one operator as a family implements it: its descriptors, one
// per opset range. Families export the Ops other packages key on, as in
//
//	var MaxPool = ops.Op{
//		ops.Register(ops.Descriptor{Type: "MaxPool", Since: 1, Until: 7, Fold: true}, buildMaxPool),
//		ops.Register(ops.Descriptor{Type: "MaxPool", Since: 8, Fold: true}, buildMaxPool),
//	}
//
// and autodiff binds a gradient to pool.MaxPool, not to the string.
type Op []*Descriptor

// Has reports whether d is one of o's descriptors.
func (o Op) Has(d *Descriptor) bool { return slices.Contains(o, d) }

// RewriteDomain is the domain of the operators quantserve's graph rewrites
// produce (fused Linear, Attention, convolutions); a model file importing
// it is refused.
const RewriteDomain = "quantserve"

// NoAttrs is the attribute struct of operators that take none.
type NoAttrs struct{}

// NormDomain returns the registry's name of an operator domain: "" for
// ai.onnx, however the model spells it.
func NormDomain(d string) string {
	if d == "ai.onnx" {
		return ""
	}
	return d
}

// Lookup returns the descriptor implementing domain/typ at opset, or an
// ErrUnsupported error that says what is implemented instead.
func Lookup(domain, typ string, opset int64) (*Descriptor, error) {
	ds := registry[opKey{NormDomain(domain), typ}]
	for _, d := range ds {
		if d.covers(opset) {
			return d, nil
		}
	}
	name := typ
	if domain != "" && domain != "ai.onnx" {
		name = domain + "." + typ
	}
	if len(ds) == 0 {
		return nil, Unsupportedf("operator %s", name)
	}
	var ranges []string
	for _, d := range ds {
		ranges = append(ranges, fmt.Sprintf("%d–%d", d.Since, d.last()))
	}
	return nil, Unsupportedf("operator %s at opset %d (implemented for opsets %s)", name, opset, strings.Join(ranges, ", "))
}

// Descriptors returns every registered implementation of domain/typ
// ("" for ai.onnx), oldest opset first.
func Descriptors(domain, typ string) []*Descriptor {
	return slices.Clone(registry[opKey{NormDomain(domain), typ}])
}

// Operators returns every registered descriptor, by domain, type and opset.
func Operators() []*Descriptor {
	var out []*Descriptor
	for _, ds := range registry {
		out = append(out, ds...)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Domain != b.Domain {
			return a.Domain < b.Domain
		}
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		return a.Since < b.Since
	})
	return out
}
