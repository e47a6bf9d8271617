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
// checking it: the generated blocks of README.md and docs/, the refused
// node tests with their reasons and the number that pass. After adding an
// operator,
//
//	go test ./model -run 'TestONNXNodeConformance|TestREADME' -update
//
// brings them all up to date; git diff shows what changed.
var update = flag.Bool("update", false, "rewrite the generated blocks of README.md and docs/ and testdata/onnx-node-refused.tsv from this run")

// docFiles are the documents that may hold generated blocks.
var docFiles = []string{"../README.md", "../docs/onnx-support.md"}

// readmeBlock checks (or with -update rewrites) the part of the document
// between <!-- name:start --> and <!-- name:end --> against want, so the
// operator list (docs/onnx-support.md) and the conformance counts
// (README.md) stay what the code and the tests say. Exactly one document
// holds each block.
func readmeBlock(t *testing.T, name, want string) {
	t.Helper()
	start, end := "<!-- "+name+":start -->\n", "<!-- "+name+":end -->"
	path, s := "", ""
	for _, p := range docFiles {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), start) {
			if path != "" {
				t.Fatalf("both %s and %s hold a %q block", path, p, name)
			}
			path, s = p, string(b)
		}
	}
	i, j := strings.Index(s, start), strings.Index(s, end)
	if path == "" || j < i {
		t.Fatalf("none of %v has a %q block", docFiles, name)
	}
	got := s[i+len(start) : j]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(s[:i+len(start)]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's %s block is out of date; rerun with -update. It says:\n%s\nThe code says:\n%s", path, name, got, want)
}

// TestREADMEListsEveryOperator: docs/onnx-support.md's operator list is
// the registry's.
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
