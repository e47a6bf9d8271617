// Command bench measures quantserve's products on every kernel table this
// CPU runs, each against the ceiling of the table being measured, measured
// in the same run with the same number of threads as the row:
//
//	int8 ceiling   the table's register-only int8 loop: tdpbusd on AMX tiles
//	               (amx), vpdpbusd zmm (avx512vnni), vpdpbusd ymm (avxvnni),
//	               vpmaddubsw+vpmaddwd+vpaddd ymm (avx2, avx512)
//	f32 ceiling    register-only FMA chains, zmm (amx, avx512vnni, avx512) or ymm
//	DRAM read      streaming read of a buffer twice the size of the L3
//	L3 read        streaming read of a buffer a quarter of the L3
//
// Batched products are set against the compute ceiling; batch 1 against
// read bandwidth, twice: "dram" rows cycle through weight copies larger
// than the L3, "l3" rows reuse one copy that fits in it. A row above 100%
// of its ceiling is a measurement error (a noisy neighbour during the
// ceiling's windows) and is printed as one, not as a result.
//
//	go run ./cmd/bench [-shapes 1x4096x4096,...] [-threads 1,2] [-tables avx512vnni,...] [-json]
//
// tools/ortbench runs this command and ONNX Runtime on the same shapes,
// interleaved, and prints the ratios.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/cpuid/v2"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/quant"
)

type row struct {
	Op      string  `json:"op"` // qgemm, sgemm or ceiling
	Impl    string  `json:"impl"`
	Where   string  `json:"where,omitempty"` // batch 1: dram or l3
	M       int     `json:"m,omitempty"`
	K       int     `json:"k,omitempty"`
	N       int     `json:"n,omitempty"`
	Threads int     `json:"threads"`
	GOPS    float64 `json:"gops,omitempty"`
	GBPS    float64 `json:"gbps,omitempty"`
	Pct     float64 `json:"pct_of_limit,omitempty"`
	Limit   string  `json:"limit,omitempty"`
	Error   string  `json:"error,omitempty"`
}

// loop is a register-only ceiling: run(iters) does ops·iters operations.
type loop struct {
	name string
	ops  int
	run  func(iters int)
}

var defaultShapes = "1x4096x4096,1x2048x2048,8x4096x4096,64x1024x1024,256x1024x1024,1024x1024x1024"

func main() {
	shapesFlag := flag.String("shapes", defaultShapes, "comma-separated MxKxN shapes")
	threadsFlag := flag.String("threads", "1,2", "comma-separated thread counts")
	tablesFlag := flag.String("tables", "", "comma-separated kernel tables (default: every table this CPU runs but the reference)")
	asJSON := flag.Bool("json", false, "print one JSON object per row")
	minTime := flag.Duration("time", 300*time.Millisecond, "minimum measuring time per row")
	ops := flag.String("ops", "qgemm,sgemm", "products to measure: qgemm, sgemm")
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
	var tables []*dispatch.Table
	if *tablesFlag == "" {
		for _, t := range dispatch.Available() {
			if t.Name != "generic" {
				tables = append(tables, t)
			}
		}
		if len(tables) == 0 {
			tables = dispatch.Available()
		}
	} else {
		for _, name := range strings.Split(*tablesFlag, ",") {
			t, err := dispatch.Select(strings.TrimSpace(name))
			if err != nil {
				log.Fatal(err)
			}
			tables = append(tables, t)
		}
	}
	b := &bench{minTime: *minTime, json: *asJSON, ops: strings.Split(*ops, ",")}
	if !b.json {
		fmt.Printf("# %s; GOMAXPROCS %d; tables %v\n", dispatch.CPU(), runtime.GOMAXPROCS(0), tables)
		fmt.Printf("%-8s %-11s %-5s %5s %5s %5s %7s %10s %8s  %s\n", "op", "table", "where", "m", "k", "n", "threads", "GOP/s", "%limit", "limit")
	}
	for _, t := range tables {
		for _, th := range threads {
			b.ceilings(t, th)
		}
		for _, sh := range shapes {
			b.products(t, sh[0], sh[1], sh[2], threads)
		}
		for _, th := range threads {
			b.ceilings(t, th) // again: the better of two passes is the ceiling
		}
	}
	for _, k := range b.ceilingKeys {
		b.print(b.ceilingRow(k))
	}
	for _, r := range b.rows {
		b.print(b.withLimit(r))
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

// ceilingKey names one measured ceiling: a loop on a table with a thread
// count.
type ceilingKey struct {
	table, kind string // kind: int8, f32, dram, l3
	threads     int
}

type bench struct {
	minTime     time.Duration
	json        bool
	ops         []string
	ceiling     map[ceilingKey]float64 // GOP/s or GB/s, best of the passes
	names       map[ceilingKey]string
	ceilingKeys []ceilingKey
	rows        []row
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

// parallel returns f run on n goroutines at once (each locked to its own
// OS thread), returning when all have finished.
func parallel(n int, f func(i int)) func() {
	return func() {
		var wg sync.WaitGroup
		wg.Add(n)
		for i := 0; i < n; i++ {
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				defer wg.Done()
				f(i)
			}()
		}
		wg.Wait()
	}
}

// ceilings measures table t's ceilings with th threads, keeping the best
// of every pass.
func (b *bench) ceilings(t *dispatch.Table, th int) {
	if b.ceiling == nil {
		b.ceiling, b.names = map[ceilingKey]float64{}, map[ceilingKey]string{}
	}
	set := func(kind, name string, rate float64) {
		k := ceilingKey{t.Name, kind, th}
		if _, ok := b.ceiling[k]; !ok {
			b.ceilingKeys = append(b.ceilingKeys, k)
		}
		b.ceiling[k] = max(b.ceiling[k], rate)
		b.names[k] = name
	}
	i8, f32 := ceilingsOf(t)
	const iters = 1 << 18
	for kind, l := range map[string]*loop{"int8": i8, "f32": f32} {
		if l == nil {
			continue
		}
		set(kind, l.name, b.measure(float64(l.ops*iters*th), parallel(th, func(int) { l.run(iters) }))/1e9)
	}
	// The read bandwidth is the better of one stream and four: a product
	// reads several panels at once.
	for _, read := range readLoops() {
		if !cpuid.CPU.Supports(cpuid.AVX2) {
			break
		}
		dram := dramBuffers(th)
		set("dram", "DRAM read", b.measure(float64(len(dram[0])*th), parallel(th, func(i int) { read(dram[i]) }))/1e9)
		l3 := l3Buffers(th)
		set("l3", "L3 read", b.measure(float64(len(l3[0])*th), parallel(th, func(i int) { read(l3[i]) }))/1e9)
	}
}

// l3Size returns the last-level cache size.
func l3Size() int {
	if c := cpuid.CPU.Cache.L3; c > 0 {
		return c
	}
	return max(cpuid.CPU.Cache.L2, 1<<20)
}

// dramFootprint returns twice the last-level cache, at least 256 MiB:
// enough memory that cycling through it always comes from DRAM.
func dramFootprint() int { return max(2*l3Size(), 256<<20) }

var dramBufs, l3Bufs [][]byte

// dramBuffers returns th buffers that together span the DRAM footprint.
func dramBuffers(th int) [][]byte {
	if len(dramBufs) != th {
		dramBufs = buffers(th, dramFootprint()/th)
	}
	return dramBufs
}

// l3Buffers returns th buffers that together fill a quarter of the L3.
func l3Buffers(th int) [][]byte {
	if len(l3Bufs) != th {
		l3Bufs = buffers(th, l3Size()/4/th)
	}
	return l3Bufs
}

func buffers(n, size int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = make([]byte, size&^127)
		for j := 0; j < len(out[i]); j += 4096 {
			out[i][j] = byte(j)
		}
	}
	return out
}

func randFloats(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

func (b *bench) products(t *dispatch.Table, m, k, n int, threads []int) {
	r := rand.New(rand.NewPCG(uint64(m), uint64(k*n)))
	a := randFloats(r, m*k)
	for i := range a { // post-ReLU-like activations
		a[i] = max(a[i], 0)
	}
	wf := randFloats(r, k*n)
	c := make([]float32, m*n)
	ops := 2 * float64(m) * float64(n) * float64(k)
	w, err := quant.QuantizeWeights(wf, k, n, quant.PerChannel)
	if err != nil {
		log.Fatal(err)
	}
	qw, err := gemm.PackQ(w)
	if err != nil {
		log.Fatal(err)
	}
	fw := gemm.PackF(k, n, wf, n)
	wheres := []string{""}
	if m == 1 {
		wheres = []string{"dram"}
		if qw.Bytes() <= l3Size()/2 {
			wheres = append(wheres, "l3")
		}
	}
	for _, where := range wheres {
		// dram rows cycle through copies larger than the cache
		qws, fws := []*gemm.QWeights{qw}, []*gemm.FWeights{fw}
		if where == "dram" {
			for len(qws)*qw.Bytes() < dramFootprint() {
				qws = append(qws, qw.Clone())
			}
		}
		if where == "dram" && slices.Contains(b.ops, "sgemm") {
			for len(fws)*fw.Bytes() < dramFootprint() {
				fws = append(fws, fw.Clone())
			}
		}
		// Thread counts are measured in interleaved windows, so a noisy
		// neighbour slows them alike and their ratio holds.
		for _, op := range b.ops {
			var fs []func()
			for _, th := range threads {
				e := gemm.New(t, th)
				defer e.Close() // once products returns
				i := 0
				switch op {
				case "qgemm":
					fs = append(fs, func() {
						if err := e.QMatMul(a, m, qws[i%len(qws)], c); err != nil {
							log.Fatal(err)
						}
						i++
					})
				case "sgemm":
					if where == "l3" && fw.Bytes() > l3Size()/2 {
						continue
					}
					fs = append(fs, func() {
						if err := e.MatMul(a, m, fws[i%len(fws)], c); err != nil {
							log.Fatal(err)
						}
						i++
					})
				default:
					log.Fatalf("unknown op %q", op)
				}
			}
			rates := b.measureAll(ops, fs)
			for i, rate := range rates {
				rw := row{Op: op, Impl: t.Name, Where: where, M: m, K: k, N: n, Threads: threads[i], GOPS: rate / 1e9}
				b.rows = append(b.rows, rw)
				if !b.json {
					fmt.Fprintf(os.Stderr, "measured %s %s %s %dx%dx%d threads=%d: %.1f GOP/s\n", op, t.Name, where, m, k, n, threads[i], rw.GOPS)
				}
			}
		}
	}
}

// withLimit sets the row against its table's ceiling with the row's
// thread count: read bandwidth for batch 1 (bytes of weights per op), the
// compute ceiling otherwise. Above 100% is a measurement error.
func (b *bench) withLimit(r row) row {
	bytesPerWeight := 1.0
	kind := "int8"
	if r.Op == "sgemm" {
		bytesPerWeight, kind = 4, "f32"
	}
	if r.Where != "" {
		kind = r.Where
	}
	key := ceilingKey{r.Impl, kind, r.Threads}
	limit, ok := b.ceiling[key]
	if !ok || limit == 0 {
		return r
	}
	if r.Where != "" {
		gbs := r.GOPS / 2 * bytesPerWeight
		r.Pct = 100 * gbs / limit
		r.Limit = fmt.Sprintf("%s %.1f GB/s (weights read at %.1f GB/s)", b.names[key], limit, gbs)
	} else {
		r.Pct = 100 * r.GOPS / limit
		r.Limit = fmt.Sprintf("%s %.1f GOP/s", b.names[key], limit)
	}
	if r.Pct > 100 {
		r.Error = fmt.Sprintf("measurement error: %.1f%% of the ceiling (the ceiling's windows ran slow)", r.Pct)
	}
	return r
}

func (b *bench) ceilingRow(k ceilingKey) row {
	r := row{Op: "ceiling", Impl: k.table, Threads: k.threads, Limit: b.names[k]}
	if k.kind == "dram" || k.kind == "l3" {
		r.GBPS = b.ceiling[k]
	} else {
		r.GOPS = b.ceiling[k]
	}
	return r
}

func (b *bench) print(r row) {
	if b.json {
		out, _ := json.Marshal(r)
		fmt.Println(string(out))
		return
	}
	rate, unit := r.GOPS, ""
	if r.GBPS > 0 {
		rate, unit = r.GBPS, " (GB/s)"
	}
	pct := ""
	if r.Pct > 0 {
		pct = fmt.Sprintf("%7.1f%%", r.Pct)
	}
	limit := r.Limit
	if r.Error != "" {
		pct, limit = "  error", r.Error
	}
	fmt.Printf("%-8s %-11s %-5s %5s %5s %5s %7d %10.1f %8s  %s%s\n", r.Op, r.Impl, r.Where, dim(r.M), dim(r.K), dim(r.N), r.Threads, rate, pct, limit, unit)
}

func dim(v int) string {
	if v == 0 {
		return "-"
	}
	return strconv.Itoa(v)
}
