package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The collector's goal is the live heap plus GOGC percent of it. A server
// holding a small model lives in a few MiB, so at thousands of requests a
// second it collects tens of times a second: CPU spent marking and, worse,
// latency tails. A heap floor keeps the goal at least floor bytes: after
// every collection GOGC is raised while the live heap is small, and falls
// back to its base as the heap grows past the floor. The memory limit
// (--memory-limit, the cgroup) still caps the heap: near it the runtime
// collects as often as it must.

// DefaultGCMinHeap is --gc-min-heap's default.
const DefaultGCMinHeap = 64 << 20

// runtimeHeapMinimum is the runtime's smallest heap goal at GOGC=100,
// which it scales with GOGC (runtime's defaultHeapMinimum): at GOGC=p the
// goal is never below 4 MiB × p/100, so p above floor/4 MiB × 100 would
// put the goal past the floor however small the live heap is.
const runtimeHeapMinimum = 4 << 20

// gcPercentFor returns the GOGC that puts the collector's goal at about
// floor bytes, and never below base. The goal is the live heap plus GOGC
// percent of the memory the collector scans, roots (goroutine stacks,
// globals) and live heap together, and at least runtimeHeapMinimum scaled
// by GOGC. A live heap of 0 (no collection yet) leaves base: the first
// collection comes early and tells the live heap.
func gcPercentFor(live, roots, floor uint64, base int) int {
	if floor == 0 || live == 0 || live >= floor {
		return base
	}
	p := (floor-live)*100/(live+roots) + 1
	p = min(p, floor*100/runtimeHeapMinimum)
	return max(base, int(p))
}

// gcFloor is the process's heap floor; run sets it, collections tune GOGC
// to it.
var gcFloor struct {
	mu    sync.Mutex
	floor uint64
	base  int // GOGC when the floor was first set
	armed bool
	tuned chan struct{} // tests: receives after each tuning, if set
}

var gcSamples = []metrics.Sample{
	{Name: "/gc/gogc:percent"}, {Name: "/gc/heap/live:bytes"},
	{Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"},
}

// setHeapFloor keeps the collector's goal at floor bytes or more from the
// next collection on (0 restores the base GOGC). With GOGC=off there is
// nothing to raise and it does nothing.
func setHeapFloor(floor uint64) {
	gcFloor.mu.Lock()
	defer gcFloor.mu.Unlock()
	if !gcFloor.armed {
		metrics.Read(gcSamples[:1])
		base := int(gcSamples[0].Value.Uint64())
		if base <= 0 || gcSamples[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		gcFloor.base, gcFloor.armed = base, true
		armGCHook()
	}
	gcFloor.floor = floor
	tuneGCLocked()
}

// gcSentinel is garbage made to be collected: its finalizer runs after
// each collection, tunes GOGC and makes the next one.
type gcSentinel struct{ _ *byte }

func armGCHook() {
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
		gcFloor.mu.Lock()
		tuneGCLocked()
		tuned := gcFloor.tuned
		gcFloor.mu.Unlock()
		armGCHook()
		if tuned != nil {
			select {
			case tuned <- struct{}{}:
			default:
			}
		}
	})
}

// tuneGCLocked sets GOGC for the live heap of the last collection; it
// leaves GOGC alone for changes under a tenth, which would only churn.
func tuneGCLocked() {
	metrics.Read(gcSamples)
	live, roots := gcSamples[1].Value.Uint64(), gcSamples[2].Value.Uint64()+gcSamples[3].Value.Uint64()
	p := gcPercentFor(live, roots, gcFloor.floor, gcFloor.base)
	if cur := int(gcSamples[0].Value.Uint64()); p == cur || p > cur && p < cur+cur/10 || p < cur && p > cur-cur/10 && p != gcFloor.base {
		return
	}
	debug.SetGCPercent(p)
}
