// Package quantserve holds the description of quantserve's HTTP API,
// openapi.yaml, so the server can serve the document it was built with
// (GET /openapi.yaml, and the reference page at /docs).
package quantserve

import _ "embed"

// OpenAPI is openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
