package ops

import "testing"

// TestScratchSizes: a buffer has the length asked for and its class's
// capacity; above the largest class it is exactly as long.
func TestScratchSizes(t *testing.T) {
	var c *Context
	for _, tc := range []struct{ n, cap int }{
		{0, 64}, {1, 64}, {64, 64}, {65, 128}, {1000, 1024}, {1 << 20, 1 << 20}, {1<<20 + 1, 1 << 21},
		{1 << maxScratchClass, 1 << maxScratchClass}, {1<<maxScratchClass + 1, 1<<maxScratchClass + 1},
	} {
		b := c.Scratch(tc.n)
		if len(b) != tc.n || cap(b) != tc.cap {
			t.Errorf("Scratch(%d): len %d cap %d, want len %d cap %d", tc.n, len(b), cap(b), tc.n, tc.cap)
		}
		c.Free(b)
	}
}

// TestScratchForeignBuffer: Free drops a buffer whose capacity is no
// class's, so Scratch never hands out a buffer shorter than its class.
func TestScratchForeignBuffer(t *testing.T) {
	var c *Context
	for range 100 {
		c.Free(make([]float32, 100)) // between the 64 and 128 classes
	}
	for range 100 {
		if b := c.Scratch(128); cap(b) != 128 {
			t.Fatalf("Scratch(128) gave a buffer of capacity %d", cap(b))
		}
	}
}

// TestScratchReuse: a buffer given back is reused, so a steady run of
// Scratch and Free allocates (almost) nothing.
func TestScratchReuse(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers at random")
	}
	c := NewContext(t.Context(), nil, false)
	allocs := testing.AllocsPerRun(1000, func() {
		b := c.Scratch(4096)
		b[0] = 1
		c.Free(b)
	})
	if allocs > 0.1 {
		t.Errorf("%.2f allocations per Scratch/Free pair, want about 0", allocs)
	}
}
