# syntax=docker/dockerfile:1

# Build a static binary.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/serve ./cmd/serve \
 && mkdir -p /out/models/mnist/1 \
 && cp defaultmodel/mnist.onnx /out/models/mnist/1/model.onnx

# Run it on a distroless base as a non-root user.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/serve /serve
COPY --from=build --chown=nonroot:nonroot /out/models /models
ENV QUANTSERVE_ADDR=:8000 \
    QUANTSERVE_MODEL_REPOSITORY=/models
EXPOSE 8000
USER nonroot:nonroot
ENTRYPOINT ["/serve"]
