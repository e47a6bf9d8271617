package main

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// finding is one problem of a Dockerfile, at a line (1-based; 0 when the
// whole file).
type finding struct {
	line   int
	detail string
}

// unqualifiedImages lists the images a Dockerfile names without a registry
// host: the base of each FROM that is neither an earlier stage nor scratch,
// and the frontend of a "# syntax=" directive. Builders with short-name
// resolution off (podman and buildah with short-name-mode "enforcing" and
// no terminal, or no unqualified-search-registries) refuse such names.
func unqualifiedImages(dt []byte) ([]finding, error) {
	var found []finding
	if syntax, _, loc, ok := parser.DetectSyntax(dt); ok && !hasRegistryHost(syntax) {
		line := 0
		if len(loc) > 0 {
			line = loc[0].Start.Line
		}
		found = append(found, finding{line, fmt.Sprintf("syntax frontend %q names no registry host (docker.io/%s)", syntax, dockerHubName(syntax))})
	}
	ast, err := parser.Parse(bytes.NewReader(dt))
	if err != nil {
		return nil, err
	}
	stages, _, err := instructions.Parse(ast.AST, nil)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, st := range stages {
		base := st.BaseName
		line := 0
		if len(st.Location) > 0 {
			line = st.Location[0].Start.Line
		}
		switch {
		case seen[strings.ToLower(base)], base == "scratch":
		case strings.Contains(base, "$"):
			found = append(found, finding{line, fmt.Sprintf("FROM %s: a base set by a build argument cannot be checked for a registry host", base)})
		case !hasRegistryHost(base):
			found = append(found, finding{line, fmt.Sprintf("FROM %s names no registry host (docker.io/%s)", base, dockerHubName(base))})
		}
		if st.Name != "" {
			seen[strings.ToLower(st.Name)] = true
		}
	}
	return found, nil
}

// hasRegistryHost reports whether an image reference starts with a registry
// host, by the rule of the distribution reference grammar: a first path
// component holding a '.' or a ':' (a port), or localhost.
func hasRegistryHost(ref string) bool {
	host, _, ok := strings.Cut(ref, "/")
	return ok && (strings.ContainsAny(host, ".:") || host == "localhost")
}

// dockerHubName is ref's path on Docker Hub: official images live under
// library/.
func dockerHubName(ref string) string {
	if !strings.Contains(ref, "/") {
		return "library/" + ref
	}
	return ref
}
