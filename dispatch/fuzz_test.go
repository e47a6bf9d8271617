package dispatch

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// FuzzQBlock decodes bytes into a block problem (shape, strides, values)
// and compares every table's block kernel with the reference under every
// flag set.
func FuzzQBlock(f *testing.F) {
	f.Add([]byte{3, 0, 7, 2, 128, 127, 1, 255, 129})
	f.Add(make([]byte, 300))
	f.Add([]byte{33, 2, 255, 255, 128, 128, 128, 128, 129, 129})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 4 {
			return
		}
		mr, mp := maxTile()
		kq := int(data[0]) % 40
		pad := int(data[1]) % 3
		rows := 1 + int(data[2])%mr
		np := 1 + int(data[3])%mp
		src := data[4:]
		at := func(i int) byte {
			if len(src) == 0 {
				return 0
			}
			return src[i%len(src)]
		}
		ldu, pstr := 4*kq+4*pad, 64*kq+pad
		u := make([]uint8, (rows-1)*ldu+4*kq)
		for i := range u {
			u[i] = at(i) % 129
		}
		b := make([]int8, (np-1)*pstr+64*kq)
		for i := range b {
			v := int8(at(i + len(u)))
			if v == -128 {
				v = -127
			}
			b[i] = v
		}
		r := rand.New(rand.NewPCG(uint64(len(data)), uint64(at(0))))
		newQCase(r, rows, np, kq, u, b, ldu, pstr).check(t)
	})
}

// FuzzFBlock decodes bytes into a float block problem and compares every
// table's float block kernel with the reference, bit for bit.
func FuzzFBlock(f *testing.F) {
	f.Add(uint8(5), uint8(1), uint8(0), int64(1))
	f.Add(uint8(131), uint8(7), uint8(2), int64(2))
	f.Fuzz(func(t *testing.T, k8, rows8, np8 uint8, seed int64) {
		var mr, mp int
		for _, tb := range Available() {
			mr, mp = max(mr, tb.FMR), max(mp, tb.FNP)
		}
		r := rand.New(rand.NewPCG(uint64(seed), 1))
		fCase(t, r, 1+int(rows8)%mr, 1+int(np8)%mp, int(k8)%140)
	})
}

// FuzzQuantizeRow decodes bytes into float32 rows (any bit pattern) and
// compares every table's MinMax, QuantizeU8 and QuantizeDivU8 with the
// reference.
func FuzzQuantizeRow(f *testing.F) {
	f.Add([]byte{0, 0, 128, 63, 0, 0, 128, 191})
	f.Add([]byte{0, 0, 192, 127, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		x := make([]float32, len(data)/4)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		lo, hi, fin := generic.MinMax(x)
		for _, tb := range Available() {
			l2, h2, f2 := tb.MinMax(x)
			if f2 != fin || fin && (l2 != lo || h2 != hi) {
				t.Fatalf("%v MinMax(%v) = %v %v %v, want %v %v %v", tb, x, l2, h2, f2, lo, hi, fin)
			}
		}
		if !fin {
			return
		}
		const inv, zp = 3.5, 64
		want := make([]uint8, len(x))
		clamped := make([]float32, len(x))
		for i, v := range x {
			clamped[i] = float32(math.Max(-1e3, math.Min(1e3, float64(v))))
		}
		generic.QuantizeU8(clamped, inv, zp, want)
		for _, tb := range Available() {
			got := make([]uint8, len(x))
			tb.QuantizeU8(clamped, inv, zp, got)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%v QuantizeU8(%v)[%d] = %d, want %d", tb, clamped[i], i, got[i], want[i])
				}
			}
		}
		const scale, dzp = 0.25, 200
		generic.QuantizeDivU8(x, scale, dzp, want)
		for _, tb := range Available() {
			got := make([]uint8, len(x))
			tb.QuantizeDivU8(x, scale, dzp, got)
			if !slices.Equal(got, want) {
				t.Fatalf("%v QuantizeDivU8(%v) = %v, want %v", tb, x, got, want)
			}
		}
	})
}
