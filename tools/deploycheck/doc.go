// Package deploycheck holds the test that decodes the manifests of deploy/
// strictly into the Kubernetes API's own types (k8s.io/api), so a field at
// the wrong level, or one the API does not have, fails. It lives in the
// tools module to keep k8s.io/api out of the server's dependencies; the
// deploy package's own test checks what the manifests promise about serve.
package deploycheck
