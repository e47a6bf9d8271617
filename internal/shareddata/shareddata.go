// Package shareddata locates the conformance data that sits beside a
// checkout in ../shared (ONNX node tests, the Open Inference Protocol spec,
// a real trained model). Tests use it; the server never does.
package shareddata

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the absolute path of ../shared/<sub> relative to the module
// root. When it is missing the test is skipped with a message, except under
// CI (CI=true), where a missing directory fails the test: CI must never skip
// these silently.
func Dir(tb testing.TB, sub string) string {
	tb.Helper()
	root, err := moduleRoot()
	if err != nil {
		tb.Fatalf("shareddata: %v", err)
	}
	dir := filepath.Join(filepath.Dir(root), "shared", sub)
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("shareddata: %s is missing: CI needs ../shared beside the checkout", dir)
		}
		tb.Skipf("shareddata: %s not found (it sits beside the project's own checkout): skipping", dir)
	}
	return dir
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
