package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// TestQuantserveDockerfile checks what the project's image promises:
// multi-stage, the static build of build/build.sh (CGO_ENABLED=0,
// -trimpath), a distroless base, a numeric non-root user (Kubernetes'
// runAsNonRoot cannot check a name), port 8000 and models at /models.
func TestQuantserveDockerfile(t *testing.T) {
	dt, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	ast, err := parser.Parse(bytes.NewReader(dt))
	if err != nil {
		t.Fatal(err)
	}
	stages, _, err := instructions.Parse(ast.AST, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) < 2 {
		t.Fatalf("%d stages, want a multi-stage build", len(stages))
	}
	final := stages[len(stages)-1]
	if !strings.HasPrefix(final.BaseName, "gcr.io/distroless/static") || !strings.Contains(final.BaseName, "nonroot") {
		t.Errorf("final base %q is not distroless static nonroot", final.BaseName)
	}
	script, err := os.ReadFile("../../build/build.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CGO_ENABLED=0 go build -trimpath", "-X main.version=", "models/mnist/1/model.onnx"} {
		if !strings.Contains(string(script), want) {
			t.Errorf("build/build.sh lacks %q", want)
		}
	}
	var built, exposed, user, models bool
	for _, st := range stages {
		for _, cmd := range st.Commands {
			switch c := cmd.(type) {
			case *instructions.RunCommand:
				if strings.Contains(strings.Join(c.CmdLine, " "), "sh build/build.sh /out") {
					built = true
				}
			case *instructions.ExposeCommand:
				for _, p := range c.Ports {
					exposed = exposed || p == "8000"
				}
			case *instructions.UserCommand:
				uid, _, _ := strings.Cut(c.User, ":")
				n, err := strconv.Atoi(uid)
				user = st.Name == final.Name && err == nil && n > 0
			case *instructions.EnvCommand:
				for _, kv := range c.Env {
					models = models || kv.Key == "QUANTSERVE_MODEL_REPOSITORY" && kv.Value == "/models"
				}
			}
		}
	}
	if !built || !exposed || !user || !models {
		t.Errorf("build/build.sh run %v, EXPOSE 8000 %v, numeric non-root user %v, models at /models %v", built, exposed, user, models)
	}
}
