package dispatch

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/klauspost/cpuid/v2"

	"github.com/quantserve/quantserve/kernels"
)

// Table is one set of kernels. Every kernel keeps the contract of its
// reference in package kernels, except that the quantized block kernel
// sees activations offset by QOffset: it sums (u - QOffset)·b, and the
// epilogue's per-row offsets (QOffset - zero point) add QOffset·colsum back.
// int32 sums are exact and the epilogue's float32 operations run in the
// reference's order, so every table gives the same bits (but ConvTaps:
// see it).
type Table struct {
	Name    string // one of Names()
	Needs   string // the CPU features the table uses, for logs and errors
	QOffset int32
	MR, NP  int // register tile of QBlock: up to MR rows × NP panels of 16 columns
	// MRStep, when not 0, is the rows a product's row chunks are
	// multiples of, MR a multiple of it: a QBlock that passes over K once
	// for each MRStep rows and takes up to MR of them a call, paying its
	// set-up once a call.
	MRStep int
	QBlock func(*kernels.QBlock)
	// FullRange: QBlock's int32 sums are exact (modulo 2^32) for any
	// bytes u and any int8 b. Without it (vpmaddubsw saturates its int16
	// pair sums) they are exact for u ≤ 128 and |b| ≤ 127, the range the
	// driver's own quantization produces; the driver splits other inputs.
	FullRange bool
	// QFinish: QBlock takes kernels.QFinish, finishing its per-channel
	// outputs as they are written (the driver's callers finish them in a
	// pass of their own on other tables).
	QFinish  bool
	FMR, FNP int // register tile of FBlock
	FBlock   func(*kernels.FBlock)
	// FFinish: FBlock finishes its sums in its registers with
	// kernels.FFinish (every table's FBlock takes the flag; the others
	// finish after writing, as the driver's callers do as well).
	FFinish bool
	// FDraws: FBlock draws kernels.FBlock.Ahead toward its core's cache
	// as it runs (the driver then gives its tiles memory a later tile
	// reads or writes: the next block's weights, a convolution's next
	// tile of output). Tables without it ignore Ahead, and the driver's
	// callers touch a cold output before writing it instead.
	FDraws bool
	// FRow is FBlock for a block of one row and any number of panels
	// (kernels.FRowCheck), with its bits, which the driver runs products
	// of one row on (a recurrent step at batch 1, a squeeze-and-excitation
	// product, a classifier head): FBlock's tile keeps only a few chains
	// of dependent multiply-adds busy on one row, the x86 row kernels one
	// for each of several panels. Tables without a row kernel of their own
	// run FBlock's one-row tile panel by panel. It takes kernels.FFinish.
	FRow func(*kernels.FBlock)

	MinMax func(x []float32) (lo, hi float32, finite bool)
	// MinMaxRows takes a block of rows' ranges: kernels.MinMaxRows's
	// values (a zero's sign may differ), MinMax a row (minMaxRowsWith, on
	// tables without a kernel for it).
	MinMaxRows func(a []float32, lda, m, k int, lo, hi []float32) int
	QuantizeU8 func(x []float32, inv float32, zp int32, u []uint8)
	// QuantizeDivU8 is DynamicQuantizeLinear's bytes (a division, the
	// full byte range): kernels.QuantizeDivU8's bits.
	QuantizeDivU8 func(x []float32, scale float32, zp int32, u []uint8)
	// QuantizeRowsU8 quantizes a block of rows each on its own range:
	// kernels.QuantizeRowsU8's bits, MinMax, quant.RowParams and
	// QuantizeU8 a row (rowsWith, on tables without a kernel for it).
	QuantizeRowsU8 func(a []float32, lda, m, k int, u []uint8, ldu int, zp []int32, scale []float32) int
	// QuantizeRunsU8 quantizes a block of im2col rows gathered from an
	// image's runs, each with its own parameters: kernels.QuantizeRunsU8's
	// bits, QuantizeU8 a run (runsWith, on tables without a kernel).
	QuantizeRunsU8 func(x []float32, bases, offs []int, w int, inv []float32, zp []int32, u []uint8, ldu int)
	// GatherRunsU8 copies a block of im2col rows gathered from the runs
	// of an image quantized once: kernels.GatherRunsU8's bytes.
	GatherRunsU8 func(x []uint8, bases, offs []int, w int, u []uint8, ldu int)

	// The transformer paths' vector math, each giving its reference's
	// bits (kernels.SoftmaxRow, kernels.Gelu, kernels.AddBias).
	SoftmaxRow func(x []float32, scale float32)
	Gelu       func(dst, src, bias []float32)
	AddBias    func(y, bias, res []float32)

	// The logistic sigmoid and tanh of the Sigmoid and Tanh operators and
	// of recurrent cells' gates, giving their references' bits
	// (kernels.Sigmoid, kernels.Tanh); dst may be src.
	Sigmoid func(dst, src []float32)
	Tanh    func(dst, src []float32)
	// GELU's tanh approximation (Gelu approximate="tanh", FastGelu):
	// kernels.GeluTanh; and the same kernel on other constants,
	// x·sigmoid(K·(x + A·x³)) (QuickGelu, Swish: kernels.XSigmoid with
	// kernels.XSigmoidConsts(0, alpha)); dst may be src.
	GeluTanh func(dst, src []float32)
	XSigmoid func(dst, src []float32, c *[kernels.ActRows][8]float32)

	// The convolution and pooling paths' kernels, each giving its
	// reference's bits (kernels.TransposeCols, kernels.Transpose8,
	// kernels.ConvFinish, kernels.ConvHard, kernels.ScaleRows,
	// kernels.PoolSum, kernels.ColumnPoolSums) but ConvTaps and
	// DepthwiseRows, whose fused multiply-adds keep kernels.ConvTaps's and
	// kernels.DepthwiseRows's sums within the rounding each states.
	ConvTaps       func(dst, src, w []float32, step int)
	TransposeCols  func(dst, src []float32, rows, cols, r0, c0, c1 int)
	Transpose8     func(dst, src []float32, ldd, lds, n int)
	ConvFinish     func(dst, bias, res []float32, lo, hi float32)
	ConvHard       func(dst []float32, a, b, lo, hi, d float32, mode int)
	ScaleRows      func(dst, s []float32)
	PoolSum        func(x []float32) float64
	ColumnPoolSums func(dst []float64, x []float32, rows, ld int)
	DepthwiseRows  func(dst, src, w []float32, offs []int, step, channels int)
	// DepthwiseAlign, when above 1, is the channel multiple on which
	// DepthwiseRows runs its widest vectors: rows whose channels, step
	// and offsets are multiples of it (8 on every amd64 vector table,
	// the AVX-512 kernels ending an odd multiple of 8 on a half vector,
	// so that they all round the same channels up and add every channel's
	// taps fused: the same bits; the others take any).
	DepthwiseAlign int
	// PadChannels widens a channels-last image to a stride of more
	// channels, the added ones zero (kernels.PadChannels's values): a
	// depthwise convolution's copy of its image on DepthwiseAlign.
	PadChannels func(dst, src []float32, n, ch, cs int)
	// CopyBlock copies a block of rows between row strides
	// (kernels.CopyBlock's values): the depthwise rows' sums back to
	// their channels, a product's padded last panel out of its scratch.
	CopyBlock func(dst []float32, ldd int, src []float32, lds int, rows, cols int)
	// EveryOther takes every other value of a row (kernels.EveryOther's
	// values): a stride-2 convolution's column phases.
	EveryOther func(dst, src []float32)
	// The fused activations' epilogues and the float32 operators they
	// replace, each giving its reference's bits: kernels.LeakyRelu (the
	// LeakyRelu operator's loop) and kernels.MaxMinConst (a Max or Min
	// with a constant, as Go's max and min compute it).
	LeakyRelu   func(dst, src []float32, alpha float32)
	MaxMinConst func(dst []float32, c float32, isMin bool)
	// The pooling paths' maximum of two rows, with Go's max's bits
	// (kernels.MaxPair).
	MaxPair func(dst, a, b []float32)
	// A max pool's windows along a channels-last row, with MaxPair's bits
	// tap after tap (kernels.MaxCols).
	MaxCols func(dst, src []float32, n, ch, step, taps, tapStep int)
	// A layer normalization's row statistics and normalization, each
	// with its reference's bits (kernels.LayerNormSums,
	// kernels.LayerNormApply).
	LayerNormSums  func(x []float32, shift float32) (s1, s2 float64)
	LayerNormApply func(y, x, scale, bias []float32, mean, inv float32)
	// A QuantizeLinear -> DequantizeLinear pair in one pass, and a
	// function of its output tabulated, each giving its reference's bits
	// and count (kernels.FakeQuant, kernels.FakeQuantTable).
	FakeQuant      func(dst, src []float32, qs, shift, lo, hi, ds float32) int
	FakeQuantTable func(dst, src []float32, qs, shift float32, lut *[256]float32) int
	// A load from each cache line of a block of a product's output rows
	// before its kernels write them (kernels.TouchRows: no value changes;
	// the reference does nothing).
	TouchRows func(c []float32, ld, rows, cols int)

	supported func() bool
}

// rowsWith returns a table's QuantizeRowsU8 made of its MinMax and
// QuantizeU8, called row by row.
func rowsWith(minMax func([]float32) (float32, float32, bool), quantize func([]float32, float32, int32, []uint8)) func([]float32, int, int, int, []uint8, int, []int32, []float32) int {
	return func(a []float32, lda, m, k int, u []uint8, ldu int, zp []int32, scale []float32) int {
		return kernels.QuantizeRowsWith(minMax, quantize, a, lda, m, k, u, ldu, zp, scale)
	}
}

// minMaxRowsWith returns a table's MinMaxRows made of its MinMax, called
// row by row.
func minMaxRowsWith(minMax func([]float32) (float32, float32, bool)) func([]float32, int, int, int, []float32, []float32) int {
	return func(a []float32, lda, m, k int, lo, hi []float32) int {
		return kernels.MinMaxRowsWith(minMax, a, lda, m, k, lo, hi)
	}
}

// runsWith returns a table's QuantizeRunsU8 made of its QuantizeU8,
// called run by run.
func runsWith(quantize func([]float32, float32, int32, []uint8)) func([]float32, []int, []int, int, []float32, []int32, []uint8, int) {
	return func(x []float32, bases, offs []int, w int, inv []float32, zp []int32, u []uint8, ldu int) {
		kernels.QuantizeRunsWith(quantize, x, bases, offs, w, inv, zp, u, ldu)
	}
}

// colsWith returns a table's MaxCols made of its MaxPair, called a pixel
// and tap at a time.
func colsWith(maxPair func(dst, a, b []float32)) func([]float32, []float32, int, int, int, int, int) {
	return func(dst, src []float32, n, ch, step, taps, tapStep int) {
		kernels.MaxColsWith(maxPair, dst, src, n, ch, step, taps, tapStep)
	}
}

// String returns the table's name.
func (t *Table) String() string { return t.Name }

var generic = &Table{
	Name:           "generic",
	Needs:          "nothing: pure Go",
	MR:             4,
	NP:             1,
	QBlock:         kernels.QBlockRef,
	FullRange:      true,
	FMR:            4,
	FNP:            1,
	FBlock:         kernels.FBlockRef,
	FRow:           kernels.FRowRef,
	MinMax:         kernels.MinMax,
	MinMaxRows:     kernels.MinMaxRows,
	QuantizeU8:     kernels.QuantizeU8,
	QuantizeRowsU8: kernels.QuantizeRowsU8,
	QuantizeRunsU8: kernels.QuantizeRunsU8,
	GatherRunsU8:   kernels.GatherRunsU8,
	QuantizeDivU8:  kernels.QuantizeDivU8,
	SoftmaxRow:     kernels.SoftmaxRow,
	Gelu:           kernels.Gelu,
	AddBias:        kernels.AddBias,
	Sigmoid:        kernels.Sigmoid,
	Tanh:           kernels.Tanh,
	GeluTanh:       kernels.GeluTanh,
	XSigmoid:       kernels.XSigmoid,

	ConvTaps:       kernels.ConvTaps,
	TransposeCols:  kernels.TransposeCols[float32],
	Transpose8:     kernels.Transpose8,
	ConvFinish:     kernels.ConvFinish,
	ConvHard:       kernels.ConvHard,
	ScaleRows:      kernels.ScaleRows,
	PoolSum:        kernels.PoolSum,
	ColumnPoolSums: kernels.ColumnPoolSums,
	LeakyRelu:      kernels.LeakyRelu,
	MaxMinConst:    kernels.MaxMinConst,
	MaxPair:        kernels.MaxPair,
	MaxCols:        kernels.MaxCols,
	LayerNormSums:  kernels.LayerNormSums,
	LayerNormApply: kernels.LayerNormApply,
	TouchRows:      kernels.TouchRows,
	DepthwiseRows:  kernels.DepthwiseRows,
	PadChannels:    kernels.PadChannels,
	CopyBlock:      kernels.CopyBlock,
	EveryOther:     kernels.EveryOther,
	FakeQuant:      kernels.FakeQuant,
	FakeQuantTable: kernels.FakeQuantTable,

	supported: func() bool { return true },
}

// tables lists every table of this build, best first, generic last.
var tables = append(isaTables(), generic)

var (
	available = runnable(tables)
	selected  = available[0]
)

// runnable returns the tables of ts this CPU supports.
func runnable(ts []*Table) []*Table {
	var out []*Table
	for _, t := range ts {
		if t.supported() {
			out = append(out, t)
		}
	}
	return out
}

// RowStep is the rows a product's row chunks are multiples of: MRStep,
// or MR when that is 0.
func (t *Table) RowStep() int {
	if t.MRStep != 0 {
		return t.MRStep
	}
	return t.MR
}

// Default returns the table chosen at init: the best this CPU runs.
func Default() *Table { return selected }

// Selected is Default: the table the server runs unless told otherwise.
func Selected() *Table { return selected }

// Available returns every table this CPU can run, best first, the
// reference last.
func Available() []*Table { return append([]*Table(nil), available...) }

// Reference returns the table of the pure-Go reference kernels, which runs
// on every CPU: what a caller that compares kernels, or wants the
// reference's speed, runs on.
func Reference() *Table { return generic }

// allTables names every table of every architecture, best first within
// each, and the GOARCH it runs on ("" for the reference, which runs
// anywhere). Each build's tables are a subset (TestNames holds them to it).
var allTables = []struct{ name, arch string }{
	{"amx", "amd64"}, {"avx512vnni", "amd64"}, {"avx512", "amd64"}, {"avxvnni", "amd64"}, {"avx2", "amd64"},
	{"i8mm", "arm64"}, {"sdot", "arm64"}, {"neon", "arm64"},
	{"generic", ""},
}

// Names returns the name of every table of every architecture, the values
// Select accepts besides "auto".
func Names() []string {
	names := make([]string, len(allTables))
	for i, t := range allTables {
		names[i] = t.name
	}
	return names
}

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
		names = append(names, t.Name)
	}
	avail := strings.Join(names, ", ")
	for _, t := range tables {
		if t.Name == name {
			return nil, fmt.Errorf("dispatch: kernels %q cannot run here: they need %s, and this CPU (%s) or its OS does not provide them (available: %s)", name, t.Needs, cpuid.CPU.BrandName, avail)
		}
	}
	for _, t := range allTables {
		if t.name == name && t.arch != runtime.GOARCH {
			return nil, fmt.Errorf("dispatch: kernels %q cannot run here: they are for %s CPUs, this is %s (available: %s)", name, t.arch, runtime.GOARCH, avail)
		}
	}
	return nil, fmt.Errorf("dispatch: unknown kernels %q (one of auto, %s; available here: %s)", name, strings.Join(Names(), ", "), avail)
}

// RequireFromEnv fails when QUANTSERVE_REQUIRE_KERNELS names a table other
// than the default, so CI notices a silent fallback to a slower table.
func RequireFromEnv() error {
	want := os.Getenv("QUANTSERVE_REQUIRE_KERNELS")
	if want == "" || want == selected.Name {
		return nil
	}
	return fmt.Errorf("dispatch: QUANTSERVE_REQUIRE_KERNELS=%s but the CPU selected %s (%s)", want, selected, CPU())
}
