//go:build unix

package conv

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time the process has used (user and
// system), which a benchmark on a shared machine divides work by.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
