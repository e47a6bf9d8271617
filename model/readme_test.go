package model

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

// update rewrites what the tests generate from the code instead of
// checking it: README.md's generated blocks, the refused node tests with
// their reasons and the number that pass. After adding an operator,
//
//	go test ./model -run 'TestONNXNodeConformance|TestREADME' -update
//
// brings them all up to date; git diff shows what changed.
var update = flag.Bool("update", false, "rewrite README.md's generated blocks and testdata/onnx-node-refused.tsv from this run")

const readmePath = "../README.md"

// readmeBlock checks (or with -update rewrites) the part of
// README.md between <!-- name:start --> and <!-- name:end --> against
// want, so the README's operator list and conformance counts stay what the
// code and the tests say.
func readmeBlock(t *testing.T, name, want string) {
	t.Helper()
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	start, end := "<!-- "+name+":start -->\n", "<!-- "+name+":end -->"
	s := string(b)
	i, j := strings.Index(s, start), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %q block", name)
	}
	got := s[i+len(start) : j]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(readmePath, []byte(s[:i+len(start)]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's %s block is out of date; rerun with -update. It says:\n%s\nThe code says:\n%s", name, got, want)
}

// TestREADMEListsEveryOperator: README's operator list is the registry's.
func TestREADMEListsEveryOperator(t *testing.T) {
	byDomain := map[string]map[string]bool{}
	var refused []string
	for _, d := range Operators() {
		if d.Domain == rewriteDomain {
			continue // quantserve's own fused operators, not ONNX's
		}
		if d.Refused {
			refused = append(refused, d.Type)
			continue
		}
		if byDomain[d.Domain] == nil {
			byDomain[d.Domain] = map[string]bool{}
		}
		byDomain[d.Domain][d.Type] = true
	}
	domains := make([]string, 0, len(byDomain))
	for d := range byDomain {
		domains = append(domains, d)
	}
	sort.Strings(domains)
	var b strings.Builder
	for _, d := range domains {
		var ops []string
		for op := range byDomain[d] {
			ops = append(ops, op)
		}
		sort.Strings(ops)
		label := d
		if d == "" {
			label = "ai.onnx (the default domain)"
		}
		noun := "operators"
		if len(ops) == 1 {
			noun = "operator"
		}
		fmt.Fprintf(&b, "- **%s**, %d %s: %s.\n", label, len(ops), noun, strings.Join(ops, ", "))
	}
	sort.Strings(refused)
	fmt.Fprintf(&b, "- Refused at load with the reason: %s.\n", strings.Join(refused, ", "))
	readmeBlock(t, "operators", b.String())
}
