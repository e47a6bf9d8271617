//go:build gc && !purego

package amd64

import (
	"sync"
	"syscall"
	"unsafe"
)

// Linux grants a process the AMX tile data state only on request: without
// it the first tile instruction faults.
const (
	archGetXCompPerm  = 0x1022
	archReqXCompPerm  = 0x1023
	xfeatureXTileData = 18
)

var amxGranted = sync.OnceValue(func() bool {
	if _, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXCompPerm, xfeatureXTileData, 0); e != 0 {
		return false
	}
	var perm uint64
	if _, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archGetXCompPerm, uintptr(unsafe.Pointer(&perm)), 0); e != 0 {
		return false
	}
	return perm&(1<<xfeatureXTileData) != 0
})

// RequestAMX asks Linux for the AMX tile state (arch_prctl
// ARCH_REQ_XCOMP_PERM) and reports whether the process has it. The
// caller checks the CPU's features first; the request is made once.
func RequestAMX() bool { return amxGranted() }
