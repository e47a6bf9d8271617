package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/internal/shareddata"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// ONNX's backend test runner compares with these tolerances.
const (
	onnxRTol = 1e-3
	onnxATol = 1e-7
)

// refusedList is the explicit list of node tests quantserve refuses at
// load, each with the reason: a test missing from it must pass, and a test
// on it must be refused with that reason. A few entries whose reason
// starts with differs are run, and their outputs differ from the
// reference's beyond ONNX's tolerance for the reason the entry gives.
// Its header holds the number of tests that pass, which only goes up.
const refusedList = "testdata/onnx-node-refused.tsv"

const differs = "differs: "

// passedHeader starts the list's line holding the number that pass.
const passedHeader = "# passed: "

// TestONNXNodeConformance runs every official ONNX node test case in
// ../shared/onnx-node through Load and Run. A case passes (outputs match in
// dtype, shape and value within ONNX's tolerance) or is refused at load
// (or at run, for types only the inputs reveal) with an ErrUnsupported
// error, and then it must be on refusedList with that reason; anything
// else fails. With -update (see readme_test.go) the run rewrites the list
// and the number that pass, refusing to lower it.
func TestONNXNodeConformance(t *testing.T) {
	root := shareddata.Dir(t, "onnx-node")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	listed, minPassed := readRefused(t)
	refused := map[string]string{}
	var passed, failed int
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "test_") {
			continue
		}
		name := e.Name()
		dir := filepath.Join(root, name)
		var reason string
		// A test listed as "differs: ..." runs but its reference output
		// is known to differ beyond tolerance, for the reason given.
		expectDiff := strings.HasPrefix(listed[name], differs)
		ok := t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			m, err := Load(data)
			if err != nil {
				if errors.Is(err, ErrUnsupported) {
					reason = err.Error()
					return
				}
				t.Fatalf("load: %v", err)
			}
			inputs, wants := readTestSet(t, filepath.Join(dir, "test_data_set_0"), m)
			got, err := m.Run(context.Background(), inputs, nil)
			if errors.Is(err, ErrUnsupported) {
				reason = err.Error() // refused when the inputs' types are seen
				return
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			var diffs []string
			for i, spec := range m.Outputs {
				diffs = append(diffs, diffONNX(spec.Name, got[spec.Name], wants[i])...)
			}
			switch {
			case expectDiff && len(diffs) > 0:
				reason = listed[name]
			case expectDiff:
				t.Errorf("listed as %q but now matches: take it off %s", listed[name], refusedList)
			default:
				for _, d := range diffs {
					t.Error(d)
				}
			}
		})
		switch {
		case !ok:
			failed++
		case reason != "":
			refused[name] = reason
		default:
			passed++
		}
	}
	if *update && !t.Failed() && passed >= minPassed {
		writeRefused(t, refused, passed)
	} else if !*update {
		for name, reason := range refused {
			if want, ok := listed[name]; !ok {
				t.Errorf("%s is refused but not on %s: %s", name, refusedList, reason)
			} else if want != reason {
				t.Errorf("%s is refused for a new reason:\n\t%s\nthe list says:\n\t%s", name, reason, want)
			}
		}
		for name := range listed {
			if _, ok := refused[name]; !ok {
				t.Errorf("%s is on %s but no longer refused: rerun with -update", name, refusedList)
			}
		}
	}
	differing := 0
	for _, reason := range refused {
		if strings.HasPrefix(reason, differs) {
			differing++
		}
	}
	if !t.Failed() {
		readmeBlock(t, "conformance", fmt.Sprintf("**%d of the %d official node tests pass, 0 fail; %d are refused and %d differ from the reference**, each with its reason in [`model/testdata/onnx-node-refused.tsv`](model/testdata/onnx-node-refused.tsv).\n",
			passed, passed+failed+len(refused), len(refused)-differing, differing))
	}
	if passed < minPassed {
		t.Errorf("%d node tests passed, fewer than the %d that passed before", passed, minPassed)
	} else if passed > minPassed && !*update {
		t.Errorf("%d node tests passed, more than the %d on %s: rerun with -update to hold the gain", passed, minPassed, refusedList)
	}
	t.Logf("ONNX node conformance: %d passed, %d failed, %d refused, %d differ from the reference", passed, failed, len(refused)-differing, differing)
	fmt.Printf("onnx-node: %d passed, %d failed, %d refused, %d differ from the reference (each listed with its reason in model/%s)\n", passed, failed, len(refused)-differing, differing, refusedList)
}

// readRefused returns the refused tests on refusedList with their reasons,
// and the number of tests that pass.
func readRefused(t *testing.T) (map[string]string, int) {
	t.Helper()
	b, err := os.ReadFile(refusedList)
	if err != nil {
		t.Fatal(err)
	}
	out, passed := map[string]string{}, -1
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if n, ok := strings.CutPrefix(line, passedHeader); ok {
			if passed, err = strconv.Atoi(n); err != nil {
				t.Fatalf("%s: malformed line %q", refusedList, line)
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("%s: malformed line %q", refusedList, line)
		}
		out[name] = reason
	}
	if passed < 0 {
		t.Fatalf("%s has no %q line", refusedList, passedHeader)
	}
	return out, passed
}

func writeRefused(t *testing.T, refused map[string]string, passed int) {
	t.Helper()
	names := make([]string, 0, len(refused))
	for n := range refused {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("# ONNX node tests quantserve refuses at load, and why (TestONNXNodeConformance keeps this exact).\n")
	fmt.Fprintf(&b, "%s%d\n", passedHeader, passed)
	for _, n := range names {
		fmt.Fprintf(&b, "%s\t%s\n", n, refused[n])
	}
	if err := os.WriteFile(refusedList, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readTestSet(t *testing.T, dir string, m *Model) (map[string]*tensor.Tensor, []*tensor.Tensor) {
	t.Helper()
	inputs := map[string]*tensor.Tensor{}
	for i, spec := range m.Inputs {
		inputs[spec.Name] = readTensorPB(t, filepath.Join(dir, fmt.Sprintf("input_%d.pb", i)))
	}
	var wants []*tensor.Tensor
	for i := range m.Outputs {
		wants = append(wants, readTensorPB(t, filepath.Join(dir, fmt.Sprintf("output_%d.pb", i))))
	}
	return inputs, wants
}

func readTensorPB(t *testing.T, path string) *tensor.Tensor {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := onnxpb.UnmarshalTensor(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	x, err := TensorFromONNX(p)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return x
}

// compareONNX checks got against want as ONNX's runner does.
func compareONNX(t *testing.T, name string, got, want *tensor.Tensor) {
	t.Helper()
	for _, d := range diffONNX(name, got, want) {
		t.Error(d)
	}
}

// diffONNX compares got with want as ONNX's runner does: same dtype and
// shape, |got-want| <= atol + rtol*|want| elementwise, NaN matching NaN,
// strings equal. It describes the differences, nil when there are none.
func diffONNX(name string, got, want *tensor.Tensor) []string {
	switch {
	case got == nil:
		return []string{fmt.Sprintf("output %q missing", name)}
	case got.DType != want.DType:
		return []string{fmt.Sprintf("output %q: dtype %v, want %v", name, got.DType, want.DType)}
	case !equalShape(got.Shape, want.Shape):
		return []string{fmt.Sprintf("output %q: shape %v, want %v", name, got.Shape, want.Shape)}
	}
	var diffs []string
	if ws, ok := want.Data.([]string); ok {
		gs := got.Data.([]string)
		for i := range ws {
			if gs[i] != ws[i] {
				diffs = append(diffs, fmt.Sprintf("output %q[%d] = %q, want %q", name, i, gs[i], ws[i]))
			}
		}
		return diffs
	}
	g, w := got.Float64s(), want.Float64s()
	bad := 0
	for i := range w {
		if math.IsNaN(w[i]) && math.IsNaN(g[i]) || g[i] == w[i] {
			continue
		}
		if !(math.Abs(g[i]-w[i]) <= onnxATol+onnxRTol*math.Abs(w[i])) {
			if bad < 5 {
				diffs = append(diffs, fmt.Sprintf("output %q[%d] = %v, want %v", name, i, g[i], w[i]))
			}
			bad++
		}
	}
	if bad > 0 {
		diffs = append(diffs, fmt.Sprintf("output %q: %d of %d elements differ", name, bad, len(w)))
	}
	return diffs
}
