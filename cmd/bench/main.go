// Command bench measures quantserve's matrix kernels against the machine's
// own limits, measured in the same run:
//
//	peak-int8       register-only vpmaddubsw+vpmaddwd+vpaddd chains
//	peak-f32        register-only FMA chains
//	read-bandwidth  streaming read of a buffer twice the size of the L3
//
// and reports each product as GOP/s (2·M·N·K / seconds) and as a percentage
// of the limit that binds it: peak-int8 or peak-f32 for batched products,
// read-bandwidth for batch 1, whose weights (cycled through copies larger
// than the L3) stream from DRAM.
//
//	go run ./cmd/bench [-shapes 1x4096x4096,...] [-threads 1,2] [-json]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/cpuid/v2"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/quant"
)

type row struct {
	Op      string  `json:"op"`
	Impl    string  `json:"impl"`
	M       int     `json:"m,omitempty"`
	K       int     `json:"k,omitempty"`
	N       int     `json:"n,omitempty"`
	Threads int     `json:"threads"`
	GOPS    float64 `json:"gops,omitempty"`
	GBPS    float64 `json:"gbps,omitempty"`
	Pct     float64 `json:"pct_of_limit,omitempty"`
	Limit   string  `json:"limit,omitempty"`
}

var defaultShapes = "1x4096x4096,8x4096x4096,64x1024x1024,256x1024x1024,1024x1024x1024"

func main() {
	shapesFlag := flag.String("shapes", defaultShapes, "comma-separated MxKxN shapes")
	threadsFlag := flag.String("threads", "1,2", "comma-separated thread counts")
	asJSON := flag.Bool("json", false, "print one JSON object per row")
	minTime := flag.Duration("time", 300*time.Millisecond, "minimum measuring time per row")
	skipRef := flag.Bool("skip-reference", false, "skip the pure-Go reference rows (slow on large shapes)")
	flag.Parse()

	shapes, err := parseShapes(*shapesFlag)
	if err != nil {
		log.Fatal(err)
	}
	var threads []int
	for _, s := range strings.Split(*threadsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			log.Fatalf("bad -threads %q", s)
		}
		threads = append(threads, n)
	}
	b := &bench{minTime: *minTime, json: *asJSON}
	if !*asJSON {
		fmt.Printf("# %s; kernels %v; GOMAXPROCS %d\n", dispatch.CPU(), dispatch.Default(), runtime.GOMAXPROCS(0))
		fmt.Printf("%-15s %-10s %5s %5s %5s %7s %10s %7s  %s\n", "op", "impl", "m", "k", "n", "threads", "GOP/s", "%limit", "limit")
	}
	b.limits()
	for _, sh := range shapes {
		b.products(sh[0], sh[1], sh[2], threads, *skipRef)
	}
	b.limits() // again: a noisy neighbour during the first pass lowers no ratio
	for _, p := range b.pending {
		b.rows = append(b.rows, withLimit(p))
	}
	for _, r := range b.rows {
		b.print(r)
	}
}

func parseShapes(s string) ([][3]int, error) {
	var out [][3]int
	for _, part := range strings.Split(s, ",") {
		dims := strings.Split(strings.TrimSpace(part), "x")
		if len(dims) != 3 {
			return nil, fmt.Errorf("shape %q is not MxKxN", part)
		}
		var sh [3]int
		for i, d := range dims {
			v, err := strconv.Atoi(d)
			if err != nil || v < 1 {
				return nil, fmt.Errorf("shape %q: bad dimension %q", part, d)
			}
			sh[i] = v
		}
		out = append(out, sh)
	}
	return out, nil
}

type bench struct {
	minTime                  time.Duration
	json                     bool
	peakInt8, peakF32, bwGBs float64
	rows                     []row
	pending                  []pendingRow
}

// pendingRow is a product row whose percentage waits for the limits,
// which are measured again after the products (the best of both counts).
type pendingRow struct {
	r              row
	batch1         bool
	bytesPerWeight int
	limit          float64 // the binding limit, measured interleaved with r (per core)
}

// measure returns the best rate of five windows of at least minTime/5,
// each running f (which does `work` units) as often as it takes.
func (b *bench) measure(work float64, f func()) float64 { return b.measureAll(work, []func(){f})[0] }

// measureAll measures several functions in interleaved windows (f0, f1,
// ..., f0, f1, ...) and returns each one's best rate.
func (b *bench) measureAll(work float64, fs []func()) []float64 {
	best := make([]float64, len(fs))
	for _, f := range fs {
		f() // warm up
	}
	for w := 0; w < 5; w++ {
		for i, f := range fs {
			start := time.Now()
			reps := 0
			for time.Since(start) < b.minTime/5 || reps == 0 {
				f()
				reps++
			}
			best[i] = max(best[i], work*float64(reps)/time.Since(start).Seconds())
		}
	}
	return best
}

func (b *bench) print(r row) {
	if b.json {
		out, _ := json.Marshal(r)
		fmt.Println(string(out))
		return
	}
	rate := r.GOPS
	if r.Op == "read-bandwidth" {
		rate = r.GBPS
	}
	pct := ""
	if r.Pct > 0 {
		pct = fmt.Sprintf("%6.1f%%", r.Pct)
	}
	fmt.Printf("%-15s %-10s %5s %5s %5s %7d %10.1f %7s  %s\n", r.Op, r.Impl, dim(r.M), dim(r.K), dim(r.N), r.Threads, rate, pct, r.Limit)
}

func dim(v int) string {
	if v == 0 {
		return "-"
	}
	return strconv.Itoa(v)
}

// limits measures the machine's limits, keeping the best seen so far.
func (b *bench) limits() {
	impl, ok := peakLoops()
	if !ok {
		if b.peakInt8 == 0 && len(b.rows) == 0 {
			fmt.Fprintln(os.Stderr, "bench: no peak loops for this CPU; percentages are omitted")
		}
		return
	}
	first := b.peakInt8 == 0
	b.peakInt8 = max(b.peakInt8, b.measure(float64(impl.int8Ops*impl.iters), func() { impl.int8(impl.iters) })/1e9)
	b.peakF32 = max(b.peakF32, b.measure(float64(impl.f32Ops*impl.iters), func() { impl.f32(impl.iters) })/1e9)
	buf := b.bandwidthBuffer()
	b.bwGBs = max(b.bwGBs, b.measure(float64(len(buf)), func() { impl.read(buf) })/1e9)
	if first {
		return
	}
	b.rows = append(b.rows,
		row{Op: "peak-int8", Impl: impl.name, Threads: 1, GOPS: b.peakInt8},
		row{Op: "peak-f32", Impl: impl.name, Threads: 1, GOPS: b.peakF32},
		row{Op: "read-bandwidth", Impl: impl.name, Threads: 1, GBPS: b.bwGBs})
}

// cacheFootprint returns twice the last-level cache, at least 256 MiB:
// enough memory that cycling through it always comes from DRAM.
func cacheFootprint() int {
	llc := cpuid.CPU.Cache.L3
	if llc <= 0 {
		llc = cpuid.CPU.Cache.L2
	}
	return max(2*llc, 256<<20)
}

func randFloats(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

func (b *bench) products(m, k, n int, threads []int, skipRef bool) {
	r := rand.New(rand.NewPCG(uint64(m), uint64(k*n)))
	a := randFloats(r, m*k)
	for i := range a { // post-ReLU-like activations
		a[i] = max(a[i], 0)
	}
	wf := randFloats(r, k*n)
	c := make([]float32, m*n)
	ops := 2 * float64(m) * float64(n) * float64(k)
	batch1 := m == 1

	w, err := quant.QuantizeWeights(wf, k, n, quant.PerChannel)
	if err != nil {
		log.Fatal(err)
	}
	qw, err := gemm.PackQ(w)
	if err != nil {
		log.Fatal(err)
	}
	fw := gemm.PackF(k, n, wf, n)
	// Batch 1 cycles through copies larger than the cache.
	qws, fws := []*gemm.QWeights{qw}, []*gemm.FWeights{fw}
	gonumB := []blas32.General{{Rows: k, Cols: n, Stride: n, Data: wf}}
	if batch1 {
		for len(qws)*qw.Bytes() < cacheFootprint() {
			qws = append(qws, qw.Clone())
		}
		for len(fws)*4*k*n < cacheFootprint() {
			fws = append(fws, fw.Clone())
			gonumB = append(gonumB, blas32.General{Rows: k, Cols: n, Stride: n, Data: append([]float32(nil), wf...)})
		}
	}
	// Thread counts are measured in interleaved windows, so a noisy
	// neighbour slows them alike and their ratio holds.
	for _, t := range dispatch.Available() {
		if t.Name == "generic" && skipRef {
			continue
		}
		var qf, ff []func()
		for _, th := range threads {
			e := gemm.New(t, th)
			qi, fi := 0, 0
			qf = append(qf, func() {
				e.QMatMul(a, m, qws[qi%len(qws)], c)
				qi++
			})
			ff = append(ff, func() {
				e.MatMul(a, m, fws[fi%len(fws)], c)
				fi++
			})
		}
		qlimit, qrates := b.withLimitLoop(ops, qf, batch1, "peak-int8")
		for i, rate := range qrates {
			b.add(row{Op: "qgemm", Impl: t.Name, M: m, K: k, N: n, Threads: threads[i], GOPS: rate / 1e9}, batch1, 1, qlimit)
		}
		flimit, frates := b.withLimitLoop(ops, ff, batch1, "peak-f32")
		for i, rate := range frates {
			b.add(row{Op: "sgemm", Impl: t.Name, M: m, K: k, N: n, Threads: threads[i], GOPS: rate / 1e9}, batch1, 4, flimit)
		}
	}
	// gonum's blas32 runs on one core.
	A := blas32.General{Rows: m, Cols: k, Stride: k, Data: a}
	C := blas32.General{Rows: m, Cols: n, Stride: n, Data: c}
	i := 0
	glimit, grates := b.withLimitLoop(ops, []func(){func() {
		B := gonumB[i%len(gonumB)]
		if batch1 {
			// y = Bᵀ·x, the batch-1 product as Sgemv
			blas32.Gemv(blas.Trans, 1, B, blas32.Vector{N: k, Inc: 1, Data: a}, 0, blas32.Vector{N: n, Inc: 1, Data: c})
		} else {
			blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, A, B, 0, C)
		}
		i++
	}}, batch1, "peak-f32")
	b.add(row{Op: "sgemm", Impl: "gonum", M: m, K: k, N: n, Threads: 1, GOPS: grates[0] / 1e9}, batch1, 4, glimit)
}

// withLimitLoop measures fs in windows interleaved with the loop of the
// limit that binds them (read-bandwidth for batch 1, else the named peak),
// and returns that limit's rate from the same windows (GOP/s or GB/s)
// with fs's rates.
func (b *bench) withLimitLoop(work float64, fs []func(), batch1 bool, peak string) (float64, []float64) {
	impl, ok := peakLoops()
	if !ok {
		return 0, b.measureAll(work, fs)
	}
	var loop func()
	var loopWork float64
	switch {
	case batch1:
		buf := b.bandwidthBuffer()
		loop, loopWork = func() { impl.read(buf) }, float64(len(buf))
	case peak == "peak-int8":
		loop, loopWork = func() { impl.int8(impl.iters) }, float64(impl.int8Ops*impl.iters)
	default:
		loop, loopWork = func() { impl.f32(impl.iters) }, float64(impl.f32Ops*impl.iters)
	}
	rates := b.measureAll(1, append([]func(){loop}, fs...))
	limit := rates[0] * loopWork / 1e9
	out := make([]float64, len(fs))
	for i := range fs {
		out[i] = rates[i+1] * work
	}
	switch {
	case batch1:
		b.bwGBs = max(b.bwGBs, limit)
	case peak == "peak-int8":
		b.peakInt8 = max(b.peakInt8, limit)
	default:
		b.peakF32 = max(b.peakF32, limit)
	}
	return limit, out
}

var bwBuf []byte

// bandwidthBuffer returns the streaming buffer, allocated once.
func (b *bench) bandwidthBuffer() []byte {
	if bwBuf == nil {
		bwBuf = make([]byte, cacheFootprint())
		for i := 0; i < len(bwBuf); i += 4096 {
			bwBuf[i] = byte(i)
		}
	}
	return bwBuf
}

func (b *bench) add(r row, batch1 bool, bytesPerWeight int, limit float64) {
	b.pending = append(b.pending, pendingRow{r, batch1, bytesPerWeight, limit})
	if !b.json {
		fmt.Fprintf(os.Stderr, "measured %s %s %dx%dx%d threads=%d: %.1f GOP/s\n", r.Op, r.Impl, r.M, r.K, r.N, r.Threads, r.GOPS)
	}
}

// withLimit fills the percentage of the binding limit measured alongside
// the row, per core times the thread count: bandwidth for batch 1
// (bytesPerWeight bytes read per 2 ops), the compute peak otherwise.
func withLimit(p pendingRow) row {
	r := p.r
	switch {
	case p.limit == 0:
	case p.batch1:
		gbs := r.GOPS / 2 * float64(p.bytesPerWeight)
		r.Pct, r.Limit = 100*gbs/(p.limit*float64(r.Threads)), fmt.Sprintf("read-bandwidth %.1f (%.1f GB/s of weights)", p.limit, gbs)
	case r.Op == "qgemm":
		r.Pct, r.Limit = 100*r.GOPS/(p.limit*float64(r.Threads)), fmt.Sprintf("peak-int8 %.1f", p.limit)
	default:
		r.Pct, r.Limit = 100*r.GOPS/(p.limit*float64(r.Threads)), fmt.Sprintf("peak-f32 %.1f", p.limit)
	}
	return r
}
