//go:build !amd64 && !arm64

package dispatch

func isaTables() []*Table { return nil }
