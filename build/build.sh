#!/bin/sh
# The one build of what the container image ships, run by the Dockerfile and
# by CI (build/container-check.sh):
#
#	VERSION=v1.2.3 sh build/build.sh OUT
#
# writes
#
#	OUT/serve                      a static binary: CGO_ENABLED=0, -trimpath,
#	                               main.version set to $VERSION (default dev)
#	OUT/models/mnist/1/model.onnx  the embedded model, laid out as a model
#	                               repository (serve --model-repository OUT/models)
#
# GOOS and GOARCH from the environment cross-compile (the Dockerfile passes
# BuildKit's TARGETOS and TARGETARCH).
set -eu
out=${1:?usage: build/build.sh OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."

CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION:-dev}" -o "$out/serve" ./cmd/serve
mkdir -p "$out/models/mnist/1"
cp defaultmodel/mnist.onnx "$out/models/mnist/1/model.onnx"
