package model

import (
	"testing"
	"time"
)

// TestRowTunerChooses drives a tuner with runs whose times depend on the
// way only: the first run of a size is the check, then the ways
// alternate two runs at a time, the first of each two untimed; with both
// windows full the faster way is chosen and kept, but for a probe of the
// other way every rowProbe-th run (two runs, and two back, the second of
// each timed).
func TestRowTunerChooses(t *testing.T) {
	tu := newRowTuner()
	cost := [2]time.Duration{wayBatch: 10 * time.Millisecond, wayRows: 7 * time.Millisecond}
	if _, _, check := tu.next(100); !check {
		t.Fatal("the first run of a size is not the check")
	}
	if _, _, check := tu.next(100); !check {
		t.Fatal("a size not yet checked skips the check")
	}
	tu.checked(100)
	var ways []int
	var timedWays []bool
	for range 2 * 2 * splitWindow {
		w, timed, check := tu.next(100)
		if check {
			t.Fatal("a checked size checks again")
		}
		ways, timedWays = append(ways, w), append(timedWays, timed)
		if timed {
			tu.record(100, w, cost[w])
		}
	}
	for i := 0; i < len(ways); i += 2 {
		if ways[i] != ways[i+1] || timedWays[i] || !timedWays[i+1] {
			t.Fatalf("runs %d-%d: ways %v timed %v: want two of a way, the second timed", i, i+1, ways, timedWays)
		}
		if want := wayBatch + i/2%2; ways[i] != want {
			t.Fatalf("run %d takes way %d, want %d (ways %v)", i, ways[i], want, ways)
		}
	}
	c := choiceOf(t, tu, 100)
	if !c.Decided || !c.Rows || c.ByRows != cost[wayRows] || c.Batch != cost[wayBatch] {
		t.Fatalf("choice %+v", c)
	}
	probes, back := 0, 0
	for range 2 * rowProbe {
		w, timed, _ := tu.next(100)
		if w != wayRows {
			probes++
		} else if timed {
			back++ // the second run back on the chosen way after a probe
		}
		if timed {
			tu.record(100, w, cost[w])
		}
	}
	if probes != 4 || back != 2 { // two probes, each two runs, each followed by two runs back
		t.Fatalf("%d runs of the other way and %d timed of the chosen in %d, want 4 and 2", probes, back, 2*rowProbe)
	}
	if c := choiceOf(t, tu, 100); !c.Rows {
		t.Fatalf("slower probes changed the choice: %+v", c)
	}
}

// TestRowTunerConfirmsFasterProbe: when the way not chosen has become the
// faster (its first times were slow), its next probe is run again until
// its window holds times of now, and the choice follows.
func TestRowTunerConfirmsFasterProbe(t *testing.T) {
	tu := newRowTuner()
	tu.next(7)
	tu.checked(7)
	cost := [2]time.Duration{wayBatch: 12 * time.Millisecond, wayRows: 8 * time.Millisecond}
	for range 2 * 2 * splitWindow {
		if w, timed, _ := tu.next(7); timed {
			tu.record(7, w, cost[w])
		}
	}
	if c := choiceOf(t, tu, 7); !c.Rows {
		t.Fatalf("choice %+v, want rows", c)
	}
	cost[wayBatch] = 5 * time.Millisecond // whole batches are faster now
	for range rowProbe + 2*splitWindow {
		if w, timed, _ := tu.next(7); timed {
			tu.record(7, w, cost[w])
		}
	}
	if c := choiceOf(t, tu, 7); c.Rows || c.Batch != cost[wayBatch] {
		t.Fatalf("after a faster probe the choice is %+v, want whole batches", c)
	}
}

func choiceOf(t *testing.T, tu *rowTuner, size int) RowChoice {
	t.Helper()
	m := &Model{rows: tu}
	for _, c := range m.RowChoices() {
		if c.Elements == size {
			return c
		}
	}
	t.Fatalf("no choice for size %d", size)
	return RowChoice{}
}
