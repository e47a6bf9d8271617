package ml

import (
	"errors"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
)

// ZipMap's sequence of maps cannot be served, nor DictVectorizer's map:
// the node is refused at load, saying why.
func TestZipMapRefused(t *testing.T) {
	err := compileErr(node("ZipMap", 1, 1, opstest.AttrInts("classlabels_int64s", 0, 1)), 1)
	if !errors.Is(err, ops.ErrUnsupported) || !strings.Contains(err.Error(), "sequence of maps") {
		t.Errorf("ZipMap: %v", err)
	}
	err = compileErr(node("DictVectorizer", 1, 1, opstest.AttrStrings("string_vocabulary", "a", "b")), 1)
	if !errors.Is(err, ops.ErrUnsupported) || !strings.Contains(err.Error(), "reads a map") {
		t.Errorf("DictVectorizer: %v", err)
	}
	for _, op := range []string{"ZipMap", "DictVectorizer", "CastMap"} {
		if d, err := ops.Lookup(domain, op, 1); err != nil || !d.Refused {
			t.Errorf("%s: %v, %v; want a refused descriptor", op, d, err)
		}
	}
}
