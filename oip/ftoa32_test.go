package oip

import (
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// checkFloat32 compares appendFloat32 with strconv on the float32 of bits u.
func checkFloat32(t testing.TB, u uint32) bool {
	f := math.Float32frombits(u)
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return true
	}
	var a, b [32]byte
	got := appendFloat32(a[:0], f)
	want := strconv.AppendFloat(b[:0], float64(f), 'g', -1, 32)
	if string(got) != string(want) {
		t.Helper() // here only: it costs more than the comparison
		t.Errorf("appendFloat32(%#08x) = %s, strconv writes %s", u, string(got), string(want))
		return false
	}
	return true
}

func TestAppendFloat32(t *testing.T) {
	var cases []uint32
	// Every binade's first, second and last values, and the subnormals
	// of few bits, where the interval is asymmetric or narrow.
	for e := uint32(0); e < 255; e++ {
		for _, m := range []uint32{0, 1, 2, 3, 1<<23 - 1, 1 << 22} {
			cases = append(cases, e<<23|m)
		}
	}
	for m := uint32(1); m < 1024; m++ {
		cases = append(cases, m)
	}
	// Integers around 2^24 and powers of ten, with their neighbours.
	for _, v := range []float64{1 << 23, 1 << 24, 16777215, 1e-45, 1e-38, 1e-5, 1e-4, 1e-3, 0.1, 1, 10, 1e5, 1e6, 1e7, 1e10, 1e20, 1e38, 3.4028235e38, 0.3, 2.5, 123456, 999999, 1234567} {
		u := math.Float32bits(float32(v))
		for d := uint32(0); d < 5; d++ {
			cases = append(cases, u+d, u-d)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 1 << 20 {
		cases = append(cases, r.Uint32())
	}
	for range 1 << 16 {
		cases = append(cases, math.Float32bits(float32(r.NormFloat64())))
	}
	failures := 0
	for _, u := range cases {
		for _, s := range []uint32{0, 1 << 31} {
			if !checkFloat32(t, u|s) {
				if failures++; failures > 20 {
					t.Fatal("too many failures")
				}
			}
		}
	}
}

// TestAppendFloat32Binades checks every value of the subnormals and of
// the first normal binade (every seventh with -short), where the
// rounding interval is narrowest against the decimal digits and the
// short subnormals (1e-45) live.
func TestAppendFloat32Binades(t *testing.T) {
	step := uint32(1)
	if testing.Short() {
		step = 7
	}
	bad := 0
	for u := uint32(1); u < 2<<23; u += step {
		if !checkFloat32(t, u) {
			if bad++; bad > 20 {
				t.FailNow()
			}
		}
	}
}

// TestAppendFloat32Exhaustive checks every float32 (about a minute a
// core); QUANTSERVE_EXHAUSTIVE=1 runs it.
func TestAppendFloat32Exhaustive(t *testing.T) {
	if os.Getenv("QUANTSERVE_EXHAUSTIVE") == "" {
		t.Skip("set QUANTSERVE_EXHAUSTIVE=1 to check all 2^31 positive float32 values")
	}
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	var bad atomic.Int64
	for w := range workers {
		wg.Go(func() {
			for u := uint64(w); u < 0x7F800000 && bad.Load() < 20; u += uint64(workers) {
				if !checkFloat32(t, uint32(u)) {
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
}

func FuzzAppendFloat32(f *testing.F) {
	for _, u := range []uint32{0, 1, 7, 8, 0x00800000, 0x3F800000, 0x4B7FFFFF, 0x7F7FFFFF, 0x80000001, 0x3DCCCCCD} {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, u uint32) { checkFloat32(t, u) })
}

// TestFloorLogs checks the fixed-point logarithms against exact
// arithmetic over the exponents appendFloat32 gives them.
func TestFloorLogs(t *testing.T) {
	pow := func(base, e int64) *big.Rat {
		p := new(big.Int).Exp(big.NewInt(base), big.NewInt(max(e, -e)), nil)
		if e < 0 {
			return new(big.Rat).SetFrac(big.NewInt(1), p)
		}
		return new(big.Rat).SetInt(p)
	}
	// floorLog reports the k with base^k <= x < base^(k+1).
	floorLog := func(x *big.Rat, base int64) int {
		k := 0
		for pow(base, int64(k)).Cmp(x) > 0 {
			k--
		}
		for pow(base, int64(k+1)).Cmp(x) <= 0 {
			k++
		}
		return k
	}
	for q := -149; q <= 104; q++ {
		if got, want := floorLog10Pow2(q), floorLog(pow(2, int64(q)), 10); got != want {
			t.Errorf("floorLog10Pow2(%d) = %d, want %d", q, got, want)
		}
		x := new(big.Rat).Mul(big.NewRat(3, 4), pow(2, int64(q)))
		if got, want := floorLog10ThreeQuartersPow2(q), floorLog(x, 10); got != want {
			t.Errorf("floorLog10ThreeQuartersPow2(%d) = %d, want %d", q, got, want)
		}
	}
	for e := pow10FixedMin; e <= pow10FixedMax; e++ {
		if got, want := floorLog2Pow10(e), floorLog(pow(10, int64(e)), 2); got != want {
			t.Errorf("floorLog2Pow10(%d) = %d, want %d", e, got, want)
		}
		if g := pow10Fixed[e-pow10FixedMin]; g <= 1<<62 || g > 1<<63 {
			t.Errorf("pow10Fixed for 10^%d = %#x, want in (2^62, 2^63]", e, g)
		}
	}
}

func BenchmarkAppendFloat32(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	xs := make([]float32, 4096)
	for i := range xs {
		xs[i] = float32(r.NormFloat64() * 3)
	}
	buf := make([]byte, 0, 64)
	b.Run("schubfach", func(b *testing.B) {
		for i := range b.N {
			buf = appendFloat32(buf[:0], xs[i&4095])
		}
	})
	b.Run("strconv", func(b *testing.B) {
		for i := range b.N {
			buf = strconv.AppendFloat(buf[:0], float64(xs[i&4095]), 'g', -1, 32)
		}
	})
}

func BenchmarkAppendDataFloat32(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	xs := make([]float32, 4096)
	for i := range xs {
		xs[i] = float32(r.NormFloat64())
	}
	b.SetBytes(int64(4 * len(xs)))
	var buf []byte
	for b.Loop() {
		buf = appendData(buf[:0], xs)
	}
}
