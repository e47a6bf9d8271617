package gemm

import (
	"testing"

	"github.com/quantserve/quantserve/dispatch"
)

// TestBeginAlone checks Engine.Begin's report: a run is alone unless
// another run on the engine was in progress at some time during it,
// begun before it, during it, or ended within it.
func TestBeginAlone(t *testing.T) {
	e := New(dispatch.Default(), 2)
	defer e.Close()
	if !e.Begin()() {
		t.Fatal("a lone run was reported beside others")
	}
	a := e.Begin()
	b := e.Begin() // begun during a, ended within it
	if b() {
		t.Fatal("a run begun during another was reported alone")
	}
	if a() {
		t.Fatal("a run another began and ended within was reported alone")
	}
	a = e.Begin()
	b = e.Begin()
	if a() { // ended while b runs
		t.Fatal("overlapping runs: the first was reported alone")
	}
	if b() {
		t.Fatal("overlapping runs: the second was reported alone")
	}
	if !e.Begin()() {
		t.Fatal("a lone run after overlapping ones was reported beside others")
	}
	if !e.Serial().Begin()() || !e.Begin()() {
		t.Fatal("an engine's one-core view and the engine each run alone")
	}
}
