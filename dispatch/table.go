package dispatch

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/klauspost/cpuid/v2"

	"github.com/quantserve/quantserve/kernels"
)

// Table is one set of kernels. Every field is a twin of a reference in
// package kernels, except that the quantized tiles see activations offset by
// QOffset: they compute Σ (u - QOffset)·b, and Exec adds QOffset·colsum
// back.
type Table struct {
	Name    string // generic, avx2 or neon
	Variant string // e.g. "sdot" or "smull" for neon; empty otherwise
	QOffset int32

	QTile4 func(u []uint8, ldu int, bp []int8, kq int, acc []int32)
	// QPanel runs 4-row tiles over one panel with the per-channel
	// epilogue (kernels.QPanel).
	QPanel func(u []uint8, ldu int, tiles int, bp []int8, kq int, off []int32, sa []float32, colsum []int32, sb []float32, c []float32, ldc int)
	QTile1 func(u []uint8, bp []int8, kq int, acc []int32)

	FRows  int // rows of FTileN
	FTileN func(a []float32, lda int, bp []float32, k int, c []float32, ldc int)
	FTile1 func(a []float32, bp []float32, k int, c []float32)

	MinMax     func(x []float32) (lo, hi float32, finite bool)
	QuantizeU8 func(x []float32, inv float32, zp int32, u []uint8)

	supported func() bool
}

// String returns the name with its variant, e.g. "neon (sdot)".
func (t *Table) String() string {
	if t.Variant == "" {
		return t.Name
	}
	return t.Name + " (" + t.Variant + ")"
}

var generic = &Table{
	Name:   "generic",
	QTile4: func(u []uint8, ldu int, bp []int8, kq int, acc []int32) { kernels.QTile(4, u, ldu, bp, kq, acc) },
	QTile1: func(u []uint8, bp []int8, kq int, acc []int32) { kernels.QTile(1, u, 0, bp, kq, acc) },
	QPanel: kernels.QPanel,
	FRows:  4,
	FTileN: func(a []float32, lda int, bp []float32, k int, c []float32, ldc int) {
		kernels.FTile(4, a, lda, bp, k, c, ldc)
	},
	FTile1:     func(a []float32, bp []float32, k int, c []float32) { kernels.FTile(1, a, 0, bp, k, c, 0) },
	MinMax:     kernels.MinMax,
	QuantizeU8: kernels.QuantizeU8,
	supported:  func() bool { return true },
}

// tables lists every table of this build, best first, generic last.
var tables = append(isaTables(), generic)

var (
	available = func() []*Table {
		var out []*Table
		for _, t := range tables {
			if t.supported() {
				out = append(out, t)
			}
		}
		return out
	}()
	selected = available[0]
)

// Default returns the table chosen at init: the best this CPU runs.
func Default() *Table { return selected }

// Available returns every table this CPU can run, the reference last.
func Available() []*Table { return append([]*Table(nil), available...) }

// Select returns the table named name ("" or "auto" for Default). Naming a
// table this CPU or build cannot run is an error that says why.
func Select(name string) (*Table, error) {
	if name == "" || name == "auto" {
		return selected, nil
	}
	for _, t := range available {
		if t.Name == name {
			return t, nil
		}
	}
	var names []string
	for _, t := range available {
		names = append(names, t.String())
	}
	for _, t := range tables {
		if t.Name == name {
			return nil, fmt.Errorf("dispatch: kernels %q cannot run here: %s (available: %s)", name, missing(t), strings.Join(names, ", "))
		}
	}
	switch name {
	case "avx2":
		return nil, fmt.Errorf("dispatch: kernels \"avx2\" cannot run here: they are for amd64 CPUs, this is %s (available: %s)", runtime.GOARCH, strings.Join(names, ", "))
	case "neon":
		return nil, fmt.Errorf("dispatch: kernels \"neon\" cannot run here: they are for arm64 CPUs, this is %s (available: %s)", runtime.GOARCH, strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("dispatch: unknown kernels %q (one of generic, avx2, neon; available here: %s)", name, strings.Join(names, ", "))
}

func missing(t *Table) string {
	switch t.Name {
	case "avx2":
		return fmt.Sprintf("they need AVX2 and FMA, and this CPU (%s) reports AVX2=%v FMA=%v", cpuid.CPU.BrandName, cpuid.CPU.Supports(cpuid.AVX2), cpuid.CPU.Supports(cpuid.FMA3))
	case "neon":
		return "they need an arm64 CPU with ASIMD"
	}
	return "this build does not include them"
}

// CPU describes the processor, for logs and /v2.
func CPU() string {
	return fmt.Sprintf("%s, %d cores, L3 %d KiB", cpuid.CPU.BrandName, cpuid.CPU.PhysicalCores, max(cpuid.CPU.Cache.L3, 0)/1024)
}

// RequireFromEnv fails when QUANTSERVE_REQUIRE_KERNELS names a table other
// than the default, so CI notices a silent fallback to the reference.
func RequireFromEnv() error {
	want := os.Getenv("QUANTSERVE_REQUIRE_KERNELS")
	if want == "" || want == selected.Name {
		return nil
	}
	return fmt.Errorf("dispatch: QUANTSERVE_REQUIRE_KERNELS=%s but the CPU selected %s (%s)", want, selected, CPU())
}
