package ops

import (
	"math/bits"
	"reflect"
	"slices"
	"sync"
	"unsafe"

	"github.com/quantserve/quantserve/tensor"
)

// Outputs from recycled memory: within a run, a float32 value that no
// later node reads, that is not an output of the graph and whose memory no
// live value shares (a Reshape, Squeeze, Identity or Slice of it) gives
// its buffer back to the run's Arena, and the next operator that makes a
// float32 output of that size class (NewFloat32, Float32Output) takes it
// instead of asking the collector for fresh memory. The graph executor
// decides when a value dies (Arena.Hold, Arena.Drop); an operator only
// allocates its outputs through the Context.
//
// A recycled buffer holds whatever its last value left in it: an operator
// that allocates this way writes every element of its output (or clears
// it first). Budgets are charged as for any output: what a step makes is
// charged when it ends and given back when it dies, recycled or not.

// Arena buffers hold from minArenaLen to maxArenaLen float32 values; a
// smaller or larger output is allocated as usual and never recycled.
const (
	minArenaLen = 256
	maxArenaLen = 1 << 28
)

// arenaClass returns the size class of a buffer of n values and the
// class's size: eight steps per power of two, at most 12.5% above n.
func arenaClass(n int) (class, size int) {
	e := bits.Len(uint(n - 1)) // 2^(e-1) < n <= 2^e
	step := 1 << (e - 4)
	sub := (n + step - 1) / step // 9..16
	return e*16 + sub - 1, sub * step
}

// An Arena is the float32 output memory of one run of a graph: the
// buffers it handed out, how many live values read each, and the free
// ones, by size class. One run uses an Arena at a time (a graph keeps
// them in a pool between runs); it is safe for the goroutines of that
// run. A buffer is free only once every value the executor held in it
// has been dropped, and an Arena forgets (leaves to the collector) every
// buffer still held when the run ends: the run's outputs among them.
type Arena struct {
	mu   sync.Mutex
	bufs []*arenaBuf   // handed out or free, by address
	free [][]*arenaBuf // free buffers by class

	// The Singles of this and earlier runs (Context.NewSingle), the
	// first used of them handed out in this run. They are handed out
	// again only after Reset, in the same order, so a step whose run
	// goes the same way gets the same one (and its boxed data,
	// Single.Float32s): nothing of a run may hold a Single's tensor or
	// shape once the run has ended (the executor copies its outputs'
	// headers).
	singles []*Single
	used    int
}

// arenaBuf is one buffer of an Arena.
type arenaBuf struct {
	lo, hi uintptr   // its memory
	b      []float32 // all of it
	class  int
	refs   int  // live values held in it
	free   bool // in the free list
}

// WithArena returns a Context like c whose operators take float32
// outputs from a (none when a is nil). The graph executor sets it for
// every graph it runs, subgraphs included, each on a Context of its own.
func (c *Context) WithArena(a *Arena) *Context {
	d := *c
	d.arena = a
	return &d
}

// Float32Output returns n float32 values for an output of the operator:
// a recycled buffer of the run when one of n's size class is free, fresh
// memory otherwise. Its contents are unspecified: the operator writes
// every element (or clears it). Its capacity is n.
func (c *Context) Float32Output(n int) []float32 {
	if c != nil && c.arena != nil && n >= minArenaLen && n <= maxArenaLen {
		return c.arena.take(n)
	}
	return make([]float32, n)
}

// NewFloat32 returns a float32 tensor of the given shape for an output of
// the operator, its elements from Float32Output: unspecified, to be
// written every one. A shape beyond tensor.MaxElements is an input
// error. It charges no budget by itself: an operator whose output size
// follows from its input values reserves it first (ReserveTensor), as
// for any other output.
func (c *Context) NewFloat32(shape []int) (*tensor.Tensor, error) {
	n, err := tensor.NumElements(shape)
	if err != nil {
		return nil, InputErrorf("%v", err)
	}
	return tensor.From(slices.Clone(shape), c.Float32Output(n)), nil
}

// Output returns n values of type T for an output of the operator:
// Float32Output's for float32, zeroed fresh memory for any other type.
func Output[T any](c *Context, n int) []T {
	var z T
	if _, ok := any(z).(float32); ok {
		f := c.Float32Output(n)
		return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(f))), n)[:n:n]
	}
	return make([]T, n)
}

// NewSingle returns a Single of rank dimensions for the operator's output:
// from the run's Arena (one an earlier run of it handed out) when the run
// has one, a new one otherwise.
func (c *Context) NewSingle(rank int) *Single {
	if c == nil || c.arena == nil {
		return NewSingle(rank)
	}
	return c.arena.single(rank)
}

// single returns the next Single of the run, of rank dimensions.
func (a *Arena) single(rank int) *Single {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.used == len(a.singles) {
		a.singles = append(a.singles, new(Single))
	}
	r := a.singles[a.used]
	a.used++
	r.Reset(rank)
	return r
}

// Singles reports how many Singles the Arena has handed out since its
// last Reset: none, and no value of the run is one.
func (a *Arena) Singles() int {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.used
}

// NewArena returns an empty Arena.
func NewArena() *Arena { return &Arena{} }

// take returns n values of a free buffer of n's class, or of a new one.
func (a *Arena) take(n int) []float32 {
	class, size := arenaClass(n)
	a.mu.Lock()
	defer a.mu.Unlock()
	if class < len(a.free) {
		if l := a.free[class]; len(l) > 0 {
			b := l[len(l)-1]
			l[len(l)-1] = nil
			a.free[class] = l[:len(l)-1]
			b.free = false
			if poisonRecycled {
				poison(b.b)
			}
			return b.b[:n:n]
		}
	}
	b := &arenaBuf{b: make([]float32, size), class: class}
	b.lo = uintptr(unsafe.Pointer(unsafe.SliceData(b.b)))
	b.hi = b.lo + uintptr(size)*4
	i, _ := slices.BinarySearchFunc(a.bufs, b.lo, func(x *arenaBuf, lo uintptr) int { return cmpAddr(x.lo, lo) })
	a.bufs = slices.Insert(a.bufs, i, b)
	return b.b[:n:n]
}

func cmpAddr(x, y uintptr) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// find returns the buffer t's elements lie in, or nil.
func (a *Arena) find(t *tensor.Tensor) *arenaBuf {
	if t == nil || len(a.bufs) == 0 {
		return nil
	}
	lo := dataStart(t.Data)
	if lo == 0 {
		return nil
	}
	i, found := slices.BinarySearchFunc(a.bufs, lo, func(x *arenaBuf, lo uintptr) int { return cmpAddr(x.lo, lo) })
	if !found {
		i-- // the last buffer starting below lo
	}
	if i < 0 {
		return nil
	}
	if b := a.bufs[i]; lo < b.hi { // b.lo <= lo: a slice lies within one buffer
		return b
	}
	return nil
}

// Hold records a live value of the run: while it lives, no output takes
// the buffer its elements lie in. Every value the run holds is dropped
// once (Drop) when it dies, or never, when it outlives the run. A nil
// Arena does nothing.
func (a *Arena) Hold(t *tensor.Tensor) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if b := a.find(t); b != nil {
		if b.free { // cannot happen; if it did, the buffer is no longer free
			a.unfree(b)
		}
		b.refs++
	}
}

// unfree takes b out of the free list.
func (a *Arena) unfree(b *arenaBuf) {
	l := a.free[b.class]
	if i := slices.Index(l, b); i >= 0 {
		a.free[b.class] = slices.Delete(l, i, i+1)
	}
	b.free = false
}

// Drop records that a value Hold recorded died: its buffer is free once
// no live value lies in it.
func (a *Arena) Drop(t *tensor.Tensor) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.find(t)
	if b == nil {
		return
	}
	if b.refs <= 0 || b.free {
		return // dropped more often than held: cannot happen; keep it out of the free list
	}
	if b.refs--; b.refs == 0 {
		b.free = true
		for len(a.free) <= b.class {
			a.free = append(a.free, nil)
		}
		a.free[b.class] = append(a.free[b.class], b)
	}
}

// Reset ends a run: the buffers still held or handed out (the run's
// outputs, values of a run that failed) are forgotten, and the free ones
// kept for the next run.
func (a *Arena) Reset() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	kept := a.bufs[:0]
	for _, b := range a.bufs {
		if b.free {
			kept = append(kept, b)
		}
	}
	clear(a.bufs[len(kept):])
	a.bufs = kept
	a.used = 0
}

// FreeBytes returns the bytes of the Arena's free buffers.
func (a *Arena) FreeBytes() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	var n int64
	for _, l := range a.free {
		for _, b := range l {
			n += int64(len(b.b)) * 4
		}
	}
	return n
}

// dataStart returns the address of a tensor's first element; 0 for
// none.
func dataStart(data any) uintptr {
	if d, ok := data.([]float32); ok {
		if len(d) == 0 {
			return 0
		}
		return uintptr(unsafe.Pointer(unsafe.SliceData(d)))
	}
	v := reflect.ValueOf(data)
	if v.Kind() != reflect.Slice || v.Len() == 0 {
		return 0
	}
	return v.Pointer()
}
