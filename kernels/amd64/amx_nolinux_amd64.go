//go:build gc && !purego && !linux

package amd64

// RequestAMX reports false: only Linux is asked for the AMX tile state.
func RequestAMX() bool { return false }
