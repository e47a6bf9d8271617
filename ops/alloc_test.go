package ops

import (
	"context"
	"errors"
	"testing"
	"unsafe"

	"github.com/quantserve/quantserve/tensor"
)

func TestArenaClasses(t *testing.T) {
	for n := minArenaLen; n <= 1<<20; n += n/7 + 1 {
		class, size := arenaClass(n)
		if size < n || float64(size) > 1.125*float64(n)+1 {
			t.Fatalf("n=%d: class size %d", n, size)
		}
		if c2, s2 := arenaClass(size); c2 != class || s2 != size {
			t.Fatalf("n=%d: a buffer of %d is in class %d, its size in %d", n, size, class, c2)
		}
	}
}

func first(t *tensor.Tensor) *float32 { return unsafe.SliceData(t.Data.([]float32)) }

// TestArenaReuse: a dead value's buffer serves the next output of its
// class; a live view keeps it; Reset forgets what is still held.
func TestArenaReuse(t *testing.T) {
	a := NewArena()
	c := NewContext(context.Background(), nil, false).WithArena(a)
	x, err := c.NewFloat32([]int{4, 100})
	if err != nil {
		t.Fatal(err)
	}
	if cap(x.Data.([]float32)) != 400 {
		t.Fatalf("capacity %d, want the length 400", cap(x.Data.([]float32)))
	}
	view, _ := x.Reshaped([]int{400})
	a.Hold(x)
	a.Hold(view)
	a.Drop(x)
	y, _ := c.NewFloat32([]int{400})
	if first(y) == first(x) {
		t.Fatal("an output took the memory of a live view")
	}
	a.Hold(y)
	a.Drop(view)
	z, _ := c.NewFloat32([]int{2, 195}) // 390: the class of 400 (385..416)
	if first(z) != first(x) {
		t.Fatal("a dead value's buffer was not reused")
	}
	if got := a.FreeBytes(); got != 0 {
		t.Fatalf("free bytes %d, want 0", got)
	}
	a.Hold(z)
	a.Drop(z)
	a.Reset() // y is still held: forgotten; z's buffer free: kept
	w, _ := c.NewFloat32([]int{400})
	if first(w) != first(x) {
		t.Fatal("a free buffer was not kept across Reset")
	}
	v, _ := c.NewFloat32([]int{400})
	if first(v) == first(y) || first(v) == first(w) {
		t.Fatal("a buffer held at Reset was handed out again")
	}
	small := Output[float32](c, minArenaLen-1)
	ints := Output[int64](c, 1000)
	if len(small) != minArenaLen-1 || len(ints) != 1000 || ints[999] != 0 {
		t.Fatal("Output returned the wrong memory")
	}
	if _, err := c.NewFloat32([]int{1 << 20, 1 << 20}); !errors.Is(err, ErrInput) {
		t.Fatalf("an oversized shape: %v, want an input error", err)
	}
}

// TestNoArena: without an Arena (a nil Context, a fold) outputs are
// fresh zeroed memory.
func TestNoArena(t *testing.T) {
	var c *Context
	if b := c.Float32Output(1000); len(b) != 1000 || b[0] != 0 {
		t.Fatal("a nil Context's output")
	}
	d := NewContext(context.Background(), nil, false).WithArena(nil)
	if b := d.Float32Output(1000); len(b) != 1000 || b[999] != 0 {
		t.Fatal("an output without an Arena")
	}
}
