package main

import (
	"os"
	"slices"
	"testing"
)

// TestQualifiedImageNames: every image the project's Dockerfile names
// carries its registry host, so podman and buildah build it with short-name
// resolution off.
func TestQualifiedImageNames(t *testing.T) {
	dt, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	found, err := unqualifiedImages(dt)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("Dockerfile:%d: %s", f.line, f.detail)
	}
}

func TestUnqualifiedImages(t *testing.T) {
	dt := []byte(`# syntax=docker/dockerfile:1
FROM golang:1.26 AS build
FROM --platform=$BUILDPLATFORM docker.io/library/golang:1.26 AS tools
FROM localhost/base AS local
FROM registry.example:5000/team/base
FROM ubuntu/squid
FROM build
FROM scratch
FROM $BASE
`)
	found, err := unqualifiedImages(dt)
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, f := range found {
		lines = append(lines, f.line)
	}
	if want := []int{1, 2, 6, 9}; !slices.Equal(lines, want) {
		t.Errorf("findings %+v at lines %v, want %v", found, lines, want)
	}
	if found[1].detail != `FROM golang:1.26 names no registry host (docker.io/library/golang:1.26)` ||
		found[2].detail != `FROM ubuntu/squid names no registry host (docker.io/ubuntu/squid)` {
		t.Errorf("details: %q, %q", found[1].detail, found[2].detail)
	}
	for ref, want := range map[string]bool{"gcr.io/distroless/static": true, "localhost/x": true, "host:5000/x": true,
		"golang": false, "library/golang": false, "golang:1.26": false} {
		if hasRegistryHost(ref) != want {
			t.Errorf("hasRegistryHost(%q) = %v", ref, !want)
		}
	}
}
