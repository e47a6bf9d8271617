package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"regexp"
	"testing"
)

// TestREADMEQuickstart: the answer README's quickstart prints is, byte
// for byte, what the server started as README says (no flags) gives for
// the example request, on whichever kernel table this CPU runs (every
// table gives the same bits).
func TestREADMEQuickstart(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	// The curl line, then the JSON block that follows it.
	m := regexp.MustCompile("(?s)curl -s localhost:8000/v2/models/mnist/infer -H 'Content-Type: application/json' -d @(examples/[a-z0-9.-]+)\n```\n\n```json\n(.*?)\n```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no quickstart curl line followed by its JSON answer")
	}
	body, err := os.ReadFile("../../" + string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	c := startChild(t)
	resp, err := http.Post(c.url+"/v2/models/mnist/infer", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, got)
	}
	if want := m[2]; !bytes.Equal(bytes.TrimSuffix(got, []byte("\n")), want) {
		t.Errorf("the server answers\n%s\nREADME.md shows\n%s", got, want)
	}
}
