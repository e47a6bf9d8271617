package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// TestQuantserveDockerfile checks what the project's image promises:
// multi-stage, a static CGO_ENABLED=0 build, a distroless non-root base,
// port 8000 and models at /models.
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
	var static, exposed, user, models bool
	for _, st := range stages {
		for _, cmd := range st.Commands {
			switch c := cmd.(type) {
			case *instructions.RunCommand:
				if strings.Contains(strings.Join(c.CmdLine, " "), "CGO_ENABLED=0 go build") {
					static = true
				}
			case *instructions.ExposeCommand:
				exposed = exposed || strings.Join(c.Ports, " ") == "8000"
			case *instructions.UserCommand:
				user = st.Name == final.Name && strings.HasPrefix(c.User, "nonroot")
			case *instructions.EnvCommand:
				for _, kv := range c.Env {
					models = models || kv.Key == "QUANTSERVE_MODEL_REPOSITORY" && kv.Value == "/models"
				}
			}
		}
	}
	if !static || !exposed || !user || !models {
		t.Errorf("static build %v, EXPOSE 8000 %v, non-root user %v, models at /models %v", static, exposed, user, models)
	}
}
