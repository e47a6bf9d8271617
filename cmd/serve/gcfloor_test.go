package main

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		live, roots, floor uint64
		base, want         int
	}{
		{live: 8 << 20, floor: 256 << 20, base: 100, want: 3101},                 // goal 8 MiB × 32.01 ≥ 256 MiB
		{live: 6 << 20, roots: 2 << 20, floor: 256 << 20, base: 100, want: 3126}, // 6 MiB + 8 MiB × 31.26
		{live: 4 << 20, floor: 64 << 20, base: 100, want: 1501},
		{live: 2 << 20, floor: 64 << 20, base: 100, want: 1600}, // capped: the runtime's minimum goal, 4 MiB × 16, is the floor
		{live: 32 << 20, floor: 64 << 20, base: 100, want: 101},
		{live: 40 << 20, floor: 64 << 20, base: 100, want: 100}, // the base goal is past the floor already
		{live: 64 << 20, floor: 64 << 20, base: 100, want: 100},
		{live: 1 << 30, floor: 64 << 20, base: 200, want: 200},
		{live: 1 << 10, floor: 64 << 20, base: 100, want: 1600},
		{live: 0, floor: 64 << 20, base: 100, want: 100}, // no collection yet: the live heap is unknown
		{live: 4 << 20, floor: 0, base: 100, want: 100},
		{live: 4 << 20, floor: 64 << 20, base: 5000, want: 5000},
	} {
		got := gcPercentFor(c.live, c.roots, c.floor, c.base)
		if got != c.want {
			t.Errorf("gcPercentFor(%d, %d, %d, %d) = %d, want %d", c.live, c.roots, c.floor, c.base, got, c.want)
		}
		if got > c.base { // raised: the goal is the floor, or the runtime's minimum is
			goal := max(c.live+(c.live+c.roots)*uint64(got)/100, runtimeHeapMinimum*uint64(got)/100)
			if goal < c.floor || goal > c.floor+c.floor/50 {
				t.Errorf("gcPercentFor(%d, %d, %d, %d) = %d: goal %d, want the floor or just past it", c.live, c.roots, c.floor, c.base, got, goal)
			}
		}
	}
}

func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// TestHeapFloor sets a floor far above this test's live heap, and sees
// GOGC raised by the tuning that follows a collection; removing the floor
// puts the base back.
func TestHeapFloor(t *testing.T) {
	tuned := make(chan struct{}, 1)
	gcFloor.mu.Lock()
	gcFloor.tuned = tuned
	gcFloor.mu.Unlock()
	gcFloor.mu.Lock()
	was := gcFloor.floor
	gcFloor.mu.Unlock()
	defer func() {
		setHeapFloor(was)
		gcFloor.mu.Lock()
		gcFloor.tuned = nil
		gcFloor.mu.Unlock()
	}()

	runtime.GC() // the live heap is known from the first collection on
	setHeapFloor(1 << 30)
	base := gcFloor.base
	if got := gogc(); got <= base {
		t.Fatalf("GOGC %d with a 1 GiB floor over a test's heap, want above the base %d", got, base)
	}
	// After a collection the finalizer tunes again (and re-arms).
	for i := 0; i < 2; i++ {
		runtime.GC()
		select {
		case <-tuned:
		case <-time.After(10 * time.Second):
			t.Fatal("no tuning after a collection")
		}
	}
	if got := gogc(); got <= base {
		t.Fatalf("GOGC %d after collections, want above the base %d", got, base)
	}
	setHeapFloor(0)
	if got := gogc(); got != base {
		t.Fatalf("GOGC %d without a floor, want the base %d", got, base)
	}
}
