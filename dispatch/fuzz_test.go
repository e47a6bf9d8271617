package dispatch

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/quantserve/quantserve/kernels"
)

// FuzzQTile decodes bytes into a tile problem and compares every table's
// quantized tiles with the reference.
func FuzzQTile(f *testing.F) {
	f.Add([]byte{3, 0, 128, 127, 1, 255, 129})
	f.Add(make([]byte, 300))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		kq := int(data[0]) % 40
		pad := int(data[1]) % 3
		ldu := 4*kq + 4*pad
		src := data[2:]
		at := func(i int) byte {
			if len(src) == 0 {
				return 0
			}
			return src[i%len(src)]
		}
		u := make([]uint8, 4*ldu)
		for i := range u {
			u[i] = at(i) % 129
		}
		bp := make([]int8, 64*kq)
		for i := range bp {
			v := int8(at(i + len(u)))
			if v == -128 {
				v = -127
			}
			bp[i] = v
		}
		qTileCase(t, u, ldu, bp, kq)
	})
}

// FuzzQuantizeRow decodes bytes into float32 rows (any bit pattern) and
// compares every table's MinMax and QuantizeU8 with the reference.
func FuzzQuantizeRow(f *testing.F) {
	f.Add([]byte{0, 0, 128, 63, 0, 0, 128, 191})
	f.Add([]byte{0, 0, 192, 127, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		x := make([]float32, len(data)/4)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		lo, hi, fin := refMinMax(x)
		for _, tb := range Available() {
			l2, h2, f2 := tb.MinMax(x)
			if f2 != fin || fin && (l2 != lo || h2 != hi) {
				t.Fatalf("%v MinMax(%v) = %v %v %v, want %v %v %v", tb, x, l2, h2, f2, lo, hi, fin)
			}
		}
		if !fin {
			return
		}
		for _, tb := range Available() {
			qa, err := NewExec(tb, 1).QuantizeRows(x, 1, len(x))
			if err != nil {
				t.Fatal(err)
			}
			ref, _ := NewExec(generic, 1).QuantizeRows(x, 1, len(x))
			for i := range x {
				if qa.u[i] != ref.u[i] {
					t.Fatalf("%v QuantizeRows(%v)[%d] = %d, want %d", tb, x, i, qa.u[i], ref.u[i])
				}
			}
		}
	})
}

func refMinMax(x []float32) (float32, float32, bool) { return generic.MinMax(x) }

// FuzzFTile decodes bytes into a float tile and compares every table's
// float tiles with the reference within an n-scaled tolerance.
func FuzzFTile(f *testing.F) {
	f.Add(uint8(5), []byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Fuzz(func(t *testing.T, k8 uint8, data []byte) {
		k := int(k8) % 70
		at := func(i int) float32 {
			if len(data) == 0 {
				return 1
			}
			return float32(int8(data[i%len(data)])) / 16
		}
		for _, tb := range Available() {
			rows := tb.FRows
			a := make([]float32, rows*k)
			for i := range a {
				a[i] = at(i)
			}
			bp := make([]float32, 16*k)
			for i := range bp {
				bp[i] = at(i + 7)
			}
			want := make([]float32, rows*16)
			got := make([]float32, rows*16)
			refTile(rows, a, k, bp, want)
			tb.FTileN(a, k, bp, k, got, 16)
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*float64(k+1)*8 {
					t.Fatalf("%v FTile k=%d: [%d] = %v, want %v", tb, k, i, got[i], want[i])
				}
			}
		}
	})
}

func refTile(rows int, a []float32, k int, bp, c []float32) { kernels.FTile(rows, a, k, bp, k, c, 16) }
