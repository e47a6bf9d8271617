package servermod

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDir finds the server module above the tools module.
func TestDir(t *testing.T) {
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if first != "module "+Path {
		t.Errorf("%s/go.mod starts %q, want %q", dir, first, "module "+Path)
	}
}
