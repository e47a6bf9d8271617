// Command dockerlint runs BuildKit's own Dockerfile checks (the rules
// `docker build --check` applies) on a Dockerfile, without a Docker engine or
// a registry: base images are resolved by a stub that answers with an empty
// linux/amd64 image config. It also checks that every image the Dockerfile
// names (FROM bases, the syntax frontend) carries its registry host
// (QualifiedImageName). It exits non-zero on any warning or error.
//
//	go run . ../../Dockerfile
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/moby/buildkit/client/llb"
	"github.com/moby/buildkit/client/llb/sourceresolver"
	"github.com/moby/buildkit/frontend/dockerfile/dockerfile2llb"
	"github.com/moby/buildkit/frontend/dockerui"
	digest "github.com/opencontainers/go-digest"
	ocispecs "github.com/opencontainers/image-spec/specs-go/v1"
)

type stubResolver struct{}

func (stubResolver) ResolveImageConfig(ctx context.Context, ref string, opt sourceresolver.Opt) (string, digest.Digest, []byte, error) {
	cfg, err := json.Marshal(ocispecs.Image{Platform: ocispecs.Platform{OS: "linux", Architecture: "amd64"}})
	return ref, digest.FromBytes(cfg), cfg, err
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: dockerlint DOCKERFILE")
		os.Exit(2)
	}
	dt, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	platform := ocispecs.Platform{OS: "linux", Architecture: "amd64"}
	sm := llb.NewSourceMap(nil, os.Args[1], "Dockerfile", dt)
	sm.Definition = &llb.Definition{}
	res, err := dockerfile2llb.DockerfileLint(context.Background(), dt, dockerfile2llb.ConvertOpt{
		Config:         dockerui.Config{},
		MetaResolver:   stubResolver{},
		TargetPlatform: &platform,
		SourceMap:      sm,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bad := false
	for _, w := range res.Warnings {
		bad = true
		line := 0
		if w.Location != nil && len(w.Location.Ranges) > 0 {
			line = int(w.Location.Ranges[0].Start.Line)
		}
		fmt.Printf("%s:%d: %s: %s\n", os.Args[1], line, w.RuleName, w.Detail)
	}
	if res.Error != nil {
		bad = true
		fmt.Printf("%s: error: %s\n", os.Args[1], res.Error.Message)
	}
	found, err := unqualifiedImages(dt)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, f := range found {
		bad = true
		fmt.Printf("%s:%d: QualifiedImageName: %s\n", os.Args[1], f.line, f.detail)
	}
	if bad {
		os.Exit(1)
	}
	fmt.Printf("%s: no findings\n", os.Args[1])
}
