package kernels

import (
	"math/rand/v2"
	"testing"
)

func TestQDot(t *testing.T) {
	x := []int8{127, -127, 0, 5}
	y := []int8{-127, -127, 9, 2, 99} // longer y is allowed
	if got := QDot(x, y); got != 127*-127+127*127+0+10 {
		t.Errorf("QDot = %d", got)
	}
	// full range: 2^17 products of ±127·±127 do not overflow int32
	r := rand.New(rand.NewPCG(1, 1))
	a := make([]int8, 1<<17)
	b := make([]int8, 1<<17)
	var want int64
	for i := range a {
		a[i], b[i] = int8(r.IntN(255)-127), int8(r.IntN(255)-127)
		want += int64(a[i]) * int64(b[i])
	}
	if got := QDot(a, b); int64(got) != want {
		t.Errorf("QDot of 2^17 = %d, want %d", got, want)
	}
}

// TestPackQBLayout checks PackQB against its documented index formula and
// QTile against QGemmRef's integer sums on the packed panel.
func TestPackQBLayout(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	k, n := 9, 21
	b := make([]int8, k*n)
	for i := range b {
		b[i] = int8(r.IntN(255) - 127)
	}
	dst := make([]int8, PackedQBLen(k, n))
	PackQB(k, n, b, dst)
	kp := PackedKLen(k)
	for p := 0; p*PanelN < n; p++ {
		for kk := 0; kk < kp; kk++ {
			for col := 0; col < PanelN; col++ {
				got := dst[p*kp*PanelN+kk/4*64+col*4+kk%4]
				var want int8
				if kk < k && p*PanelN+col < n {
					want = b[kk*n+p*PanelN+col]
				}
				if got != want {
					t.Fatalf("panel %d k %d col %d: %d, want %d", p, kk, col, got, want)
				}
			}
		}
	}
	u := make([]uint8, kp)
	for i := 0; i < k; i++ {
		u[i] = uint8(r.IntN(129))
	}
	acc := make([]int32, PanelN)
	QTile(1, u, kp, dst, kp/4, acc)
	for col := 0; col < PanelN; col++ {
		var want int32
		for kk := 0; kk < k; kk++ {
			want += int32(u[kk]) * int32(b[kk*n+col])
		}
		if acc[col] != want {
			t.Errorf("QTile col %d = %d, want %d", col, acc[col], want)
		}
	}
}
