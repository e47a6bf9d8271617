package reference_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/quantserve/quantserve/api"
	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/repository"
)

// chromium finds Debian's chromium (apt-get install --no-install-recommends
// chromium). Outside CI the test skips without it; under CI=true it fails.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed: CI needs it to render /docs (apt-get install --no-install-recommends chromium)")
	}
	t.Skip("chromium is not installed (apt-get install --no-install-recommends chromium): skipping the /docs rendering test")
	return ""
}

// TestDocsPageRendersInChromium loads /docs from a real server in headless
// Chromium and finds the infer operation on the page Redoc rendered from
// /openapi.yaml, with nothing loaded from outside the server.
func TestDocsPageRendersInChromium(t *testing.T) {
	bin := chromium(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	repo := repository.New(repository.Options{Log: log}, repository.Source{Name: defaultmodel.Name, Version: 1, ONNX: defaultmodel.ONNX})
	srv := httptest.NewServer(api.NewRouter(api.Options{Repository: repo, Version: "test", Logger: log}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir="+t.TempDir(),
		// let the page fetch the description and render it (virtual time:
		// it advances as fast as the page goes idle)
		"--virtual-time-budget=30000", "--dump-dom", srv.URL+"/docs")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	dom := string(out)
	// Redoc renders each operation with its summary and an anchor named
	// after its operationId.
	for _, want := range []string{"operation/modelInfer", "Run inference on a model&#39;s default version", "/v2/models/{model}/infer"} {
		if !strings.Contains(dom, want) && !strings.Contains(dom, strings.ReplaceAll(want, "&#39;", "'")) {
			t.Errorf("the rendered page has no %q (%d bytes of DOM)", want, len(dom))
		}
	}
	if strings.Contains(dom, "Something went wrong") {
		t.Errorf("Redoc reported an error rendering the description")
	}
}
