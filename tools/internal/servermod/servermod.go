// Package servermod builds the server module's commands (cmd/serve,
// cmd/bench) for the tools that run them. The tools module replaces
// github.com/quantserve/quantserve with the directory above it; the builds
// run in that directory, so a binary links the versions the server's
// go.mod selects, not the ones the tools module's requirements raise.
package servermod

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
)

// Path is the server module's path.
const Path = "github.com/quantserve/quantserve"

// Dir returns the server module's directory as the go command resolves it
// from the working directory, which must lie in the tools module.
func Dir() (string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", Path)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("servermod: go list -m %s (run from the tools module): %w\n%s", Path, err, stderr.Bytes())
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("servermod: go list -m %s printed no directory", Path)
	}
	return dir, nil
}

// Build builds the server module's package pkg, a path relative to the
// module's root such as "./cmd/serve", into the executable out (an
// absolute path). It returns the go command's combined output.
func Build(out, pkg string) ([]byte, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	b, err := cmd.CombinedOutput()
	if err != nil {
		return b, fmt.Errorf("servermod: go build %s in %s: %w", pkg, dir, err)
	}
	return b, nil
}
