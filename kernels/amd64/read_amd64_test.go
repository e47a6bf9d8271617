//go:build amd64 && gc && !purego

package amd64

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// readFold is the pure-Go twin of the read loops' result: the XOR of the
// low 8 bytes of every 16 bytes read.
func readFold(buf []byte) uint64 {
	var x uint64
	for i := 0; i+16 <= len(buf); i += 16 {
		x ^= binary.LittleEndian.Uint64(buf[i:])
	}
	return x
}

// TestReadSum: the bandwidth loops read every byte they say they read,
// and none past it (one stream: whole 128-byte blocks; four streams: the
// quarters, each whole 128-byte blocks).
func TestReadSum(t *testing.T) {
	if !Available {
		t.Skip("no AVX2 here")
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 127, 128, 129, 511, 512, 513, 4096, 100_000} {
		buf := make([]byte, n)
		for i := range buf {
			buf[i] = byte(r.Uint32())
		}
		if got, want := ReadSum(buf), readFold(buf[:n&^127]); got != want {
			t.Errorf("ReadSum(%d bytes) = %#x, want %#x", n, got, want)
		}
		q := n / 4 &^ 127
		if got, want := ReadSum4(buf), readFold(buf[:4*q]); got != want {
			t.Errorf("ReadSum4(%d bytes) = %#x, want %#x", n, got, want)
		}
	}
}
