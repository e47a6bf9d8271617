//go:build arm64

package dispatch

func isaTables() []*Table { return nil }
