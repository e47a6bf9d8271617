package tensor

import (
	"bytes"
	"testing"
)

func TestLittleEndianRoundTrip(t *testing.T) {
	for dt := Bool; dt <= Float64; dt++ {
		raw := make([]byte, 3*dt.Size())
		for i := range raw {
			raw[i] = byte(i*37 + 1)
		}
		if dt == Bool {
			raw = []byte{1, 0, 1}
		}
		x := &Tensor{DType: dt, Shape: []int{3}, Data: FromLittleEndian(dt, raw, 3)}
		if x.Len() != 3 {
			t.Fatalf("%v: %d elements", dt, x.Len())
		}
		if got := AppendLittleEndian(nil, x); !bytes.Equal(got, raw) {
			t.Errorf("%v: % x round-trips to % x", dt, raw, got)
		}
	}
	if got := AppendLittleEndian(nil, From([]int{2}, []float32{1, -2})); !bytes.Equal(got, []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0}) {
		t.Errorf("float32 layout % x", got)
	}
}

// TestLittleEndianCopyMatchesPerElement: on this (little-endian) machine
// the numbers' memory is copied whole; it must give the bytes the
// portable per-element path gives, both ways, for every fixed-size type.
func TestLittleEndianCopyMatchesPerElement(t *testing.T) {
	if !nativeLE {
		t.Skip("big-endian machine: only the per-element path runs")
	}
	defer func() { nativeLE = true }()
	for _, dt := range []DataType{Uint8, Int8, Uint16, Int16, Uint32, Int32, Uint64, Int64, Float16, BFloat16, Float32, Float64} {
		raw := make([]byte, 5*dt.Size())
		for i := range raw {
			raw[i] = byte(i*53 + 7)
		}
		nativeLE = false
		slow := FromLittleEndian(dt, raw, 5)
		slowBytes := AppendLittleEndian([]byte{9}, &Tensor{DType: dt, Shape: []int{5}, Data: slow})
		nativeLE = true
		fast := FromLittleEndian(dt, raw, 5)
		fastBytes := AppendLittleEndian([]byte{9}, &Tensor{DType: dt, Shape: []int{5}, Data: fast})
		if !bytes.Equal(AppendLittleEndian(nil, &Tensor{DType: dt, Shape: []int{5}, Data: slow}), raw) {
			t.Errorf("%v: the per-element path does not round-trip", dt)
		}
		if !bytes.Equal(slowBytes, fastBytes) || !bytes.Equal(fastBytes[1:], raw) {
			t.Errorf("%v: copied % x, per element % x, from % x", dt, fastBytes, slowBytes, raw)
		}
		if m := memoryOf(slow); m == nil || !bytes.Equal(m, memoryOf(fast)) {
			t.Errorf("%v: decoded values differ between the paths", dt)
		}
	}
	if m := memoryOf([]float32{}); m == nil || len(m) != 0 {
		t.Errorf("empty slice: %v", m)
	}
}
