//go:build gc && !purego

package amd64

import (
	"fmt"
	"testing"
)

// TestAMXConfigSet checks the tile shapes qBlockAMX's configurations
// give a group of 17 rows, 2 panels and 21 groups of 4 k: two row tiles
// of 16 and 1 rows, a full step of 64 k, then a tail of 5 groups.
func TestAMXConfigSet(t *testing.T) {
	var cfg amxConfig
	cfg.set(17, 2, 21)
	type shape struct{ rows, colsb int }
	at := func(c, tile int) shape {
		return shape{int(cfg[c][48+tile]), int(cfg[c][16+2*tile]) | int(cfg[c][17+2*tile])<<8}
	}
	for c, steps := range []int{16, 5} {
		if cfg[c][0] != 1 {
			t.Errorf("configuration %d: palette %d, want 1", c, cfg[c][0])
		}
		want := []shape{
			{16, 64}, {16, 64}, {1, 64}, {1, 64}, // C(t, p)
			{16, 4 * steps}, {1, 4 * steps}, // A(t)
			{steps, 64}, {steps, 64}, // B(p)
		}
		for tile, w := range want {
			if got := at(c, tile); got != w {
				t.Errorf("configuration %d, tile %d: %d rows of %d bytes, want %d of %d", c, tile, got.rows, got.colsb, w.rows, w.colsb)
			}
		}
	}
	cfg.set(32, 1, 32) // no tail: the second configuration stays empty
	if cfg[1] != [64]byte{} {
		t.Errorf("a K of whole steps has a tail configuration: %v", cfg[1])
	}
	if got := cfg[0][48+5]; got != 16 {
		t.Errorf("32 rows: A(1) has %d rows, want 16", got)
	}
	if got := cfg[0][48+1]; got != 0 {
		t.Errorf("one panel: C(0, 1) has %d rows, want none", got)
	}
}

// BenchmarkPeakAMX times the tdpbusd peak loop of 1 and 10 iterations a
// call: the difference is nine iterations of four tdpbusd, the rest of
// the one-iteration call the tiles' set-up (ldtilecfg, tilezero) and
// release.
func BenchmarkPeakAMX(b *testing.B) {
	if !RequestAMX() {
		b.Skip("no AMX tiles here")
	}
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				PeakAMX(n)
			}
		})
	}
}
