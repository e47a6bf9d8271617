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
