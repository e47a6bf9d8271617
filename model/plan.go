package model

import (
	"context"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// The memory plan: a run of a graph hands the float32 buffers of the
// values that die back to its ops.Arena, from which later operators take
// their outputs (ops.Context.NewFloat32). A value is given back after its
// last reader when a step of the graph made it (never a graph input, a
// captured value of an enclosing graph, an initializer or a folded
// constant), it is not an output of the graph, and the run does not keep
// its values (a trace, or a subgraph of one); the arena frees a buffer
// only once no live value lies in it, so a Reshape, Squeeze, Flatten,
// Identity or Slice that views a dying value keeps its memory alive.
// Every graph run has an arena of its own, from a pool of its graph's:
// concurrent runs, and a subgraph's runs within its node's, never share
// one, and a buffer still held when a run ends (its outputs) is forgotten
// by the arena, never reused.

// planRecycle records, for each step, the values made by the graph's
// steps that die after it: those planRelease releases there, and the
// outputs of the step no step reads and the graph does not return.
func (g *graph) planRecycle() {
	made := make([]bool, g.slots)
	read := make([]bool, g.slots)
	for _, st := range g.steps {
		for _, s := range st.out {
			if s >= 0 {
				made[s] = true
			}
		}
		for _, s := range st.in {
			if s >= 0 {
				read[s] = true
			}
		}
	}
	for _, s := range g.outputSlot {
		read[s] = true
		made[s] = false
	}
	for _, c := range g.constants {
		made[c.slot] = false
	}
	g.recycleAfter = make([][]int, len(g.steps))
	for i, dying := range g.releaseAfter {
		for _, s := range dying {
			if made[s] {
				g.recycleAfter[i] = append(g.recycleAfter[i], s)
			}
		}
	}
	for i, st := range g.steps {
		for _, s := range st.out {
			if s >= 0 && made[s] && !read[s] {
				g.recycleAfter[i] = append(g.recycleAfter[i], s)
			}
		}
	}
}

// arena returns the arena of a run that drops values as keep says, nil
// for a run that keeps every value (and for a graph without a plan).
func (g *graph) arena(ctx context.Context, keep func(int) bool) *ops.Arena {
	if keep == nil || valuesKept(ctx) || len(g.recycleAfter) != len(g.steps) {
		return nil
	}
	if a, ok := g.arenas.Get().(*ops.Arena); ok {
		return a
	}
	return ops.NewArena()
}

// endArena ends a run's use of a: what its outputs hold is forgotten,
// the free buffers go back to the pool with it.
func (g *graph) endArena(a *ops.Arena) {
	if a != nil {
		a.Reset()
		g.arenas.Put(a)
	}
}

// recycle gives the buffers of the values that die after step i back to
// the run's arena.
func (g *graph) recycle(a *ops.Arena, i int, vals []*tensor.Tensor, keep func(int) bool) {
	for _, s := range g.recycleAfter[i] {
		if vals[s] != nil && !keep(s) {
			a.Drop(vals[s])
			vals[s] = nil
		}
	}
}

// detach gives the graph outputs a run keeps headers and shapes of their
// own: the run's Arena hands its Singles (a step's output tensor and
// shape) out again in its next run, and an operator may share its
// input's shape; what the caller holds must not change under it then.
// A run with an Arena keeps no other values; a run whose steps took no
// Single (a Loop body of Identity nodes, say) has nothing to detach.
func (g *graph) detach(vals []*tensor.Tensor, keep func(slot int) bool) {
	for _, s := range g.outputSlot {
		if v := vals[s]; v != nil && keep(s) {
			t := *v
			t.Shape = slices.Clone(v.Shape)
			vals[s] = &t
		}
	}
}
