# syntax=docker.io/docker/dockerfile:1

# Every image is named with its registry host, so builders with short-name
# resolution off (podman, buildah) find it (tools/dockerlint checks this).

# Build a static binary and the models folder with build/build.sh, the same
# script CI runs (on the build platform, cross-compiling for the target).
FROM --platform=$BUILDPLATFORM docker.io/library/golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev TARGETOS TARGETARCH
RUN VERSION=${VERSION} GOOS=${TARGETOS} GOARCH=${TARGETARCH} sh build/build.sh /out

# Run it on a distroless base as a non-root user (numeric, so Kubernetes'
# runAsNonRoot can verify it: 65532 is distroless's nonroot).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/serve /serve
COPY --from=build /out/models /models
ENV QUANTSERVE_ADDR=:8000 \
    QUANTSERVE_MODEL_REPOSITORY=/models
EXPOSE 8000 8001
USER 65532:65532
ENTRYPOINT ["/serve"]
