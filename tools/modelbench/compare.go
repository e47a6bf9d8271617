package main

import (
	"fmt"
	"log"
	"strconv"
	"strings"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/quant"
)

// threadCounts parses -threads.
func threadCounts() []int { return parseCounts("threads", *threads) }

// parseCounts parses flag name's value, a comma-separated list of counts of at
// least 1.
func parseCounts(name, value string) []int {
	var out []int
	for _, f := range strings.Split(value, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			log.Fatalf("modelbench: -%s %q: want a list of counts of at least 1", name, value)
		}
		out = append(out, n)
	}
	return out
}

// The columns of a comparison: items per second of each side.
const (
	colI8       = iota // quantserve's int8 of the float model
	colF32             // quantserve's float32
	colORTF32          // ONNX Runtime's float32
	colExported        // quantserve on the file ONNX Runtime's quantization writes
	colORTI8           // ONNX Runtime on that file
	columns
)

// sides are one model loaded at one thread count in both runtimes.
type sides struct {
	threads              int
	i8, f32, exported    *model.Model
	ortName, ortExported string // ONNX Runtime's sessions
}

// compareAll times every bench in both runtimes at every thread count of
// -threads, interleaved: each round runs every column at every count
// before the next round, so that a machine whose speed drifts over
// minutes (a virtual machine's neighbours) moves every count alike, and
// the ratios between counts compare runs made side by side.
func compareAll(benches []bench) {
	counts := threadCounts()
	o, stop := startORT()
	defer stop()
	execs := make([]*gemm.Engine, len(counts))
	for i, t := range counts {
		execs[i] = gemm.New(table(), t)
		defer execs[i].Close()
	}
	fmt.Printf("# quantserve (%s) vs ONNX Runtime, each on %s thread(s), best of %d interleaved rounds of %v, items/s\n",
		execs[0].Table().Name, *threads, *rounds, *minTime)
	fmt.Printf("# qs i8: quantserve's int8 of the float model; qs exp i8: quantserve on the file ONNX Runtime's quantization writes\n")
	fmt.Printf("# (tools/ortquant: quantize_dynamic for the encoder, quantize_static QDQ per channel for the CNNs), which ort i8 runs;\n")
	fmt.Printf("# i8/ort8 and exp/ort8 compare with ort i8, the rest with ort f32\n")
	fmt.Printf("%-10s %5s %4s %10s %10s %10s %10s %10s %8s %8s %8s %8s\n", "model", "batch", "thr",
		"qs i8", "qs f32", "ort f32", "qs exp i8", "ort i8", "i8/ort", "f32/ort", "i8/ort8", "exp/ort8")
	type scaling struct {
		model       string
		batch       int
		first, last [columns]float64
	}
	var scaled []scaling
	for _, b := range benches {
		ss := make([]sides, len(counts))
		for i, t := range counts {
			ss[i] = loadSides(o, b, execs[i], t, i == 0)
		}
		for _, n := range batchSizes() {
			shape := append([]int{n}, b.item...)
			in := makeInput(b, shape)
			ortRun := func(name string) float64 {
				res := o.call(map[string]any{"cmd": "run", "name": name, "input": b.input, "type": b.dtype, "shape": shape, "range": b.idRange, "mintime": minTime.Seconds()})
				return float64(n) * res["iters"].(float64) / res["seconds"].(float64)
			}
			best := make([][columns]float64, len(counts))
			for r := 0; r < *rounds; r++ {
				for i, s := range ss {
					bi := &best[i]
					bi[colI8] = max(bi[colI8], float64(n)*run(s.i8, b.input, in))
					bi[colF32] = max(bi[colF32], float64(n)*run(s.f32, b.input, in))
					bi[colORTF32] = max(bi[colORTF32], ortRun(s.ortName))
					if s.exported != nil {
						bi[colExported] = max(bi[colExported], float64(n)*run(s.exported, b.input, in))
						bi[colORTI8] = max(bi[colORTI8], ortRun(s.ortExported))
					}
				}
			}
			for i, s := range ss {
				v := best[i]
				fmt.Printf("%-10s %5d %4d %10s %10s %10s %10s %10s %8s %8s %8s %8s\n", b.name, n, s.threads,
					rate(v[colI8]), rate(v[colF32]), rate(v[colORTF32]), rate(v[colExported]), rate(v[colORTI8]),
					ratio(v[colI8], v[colORTF32]), ratio(v[colF32], v[colORTF32]), ratio(v[colI8], v[colORTI8]), ratio(v[colExported], v[colORTI8]))
				if n > 1 { // row by row on one thread, by parts on several (model.RowChoices)
					fmt.Printf("# %s batch %d batches run: qs i8 %s, qs f32 %s, qs exp i8 %s\n", b.name, n,
						rowWay(s.i8, in), rowWay(s.f32, in), rowWay(s.exported, in))
				}
				if s.threads > 1 {
					fmt.Printf("# %s batch %d runs on %d threads: qs i8 %s, qs f32 %s, qs exp i8 %s\n", b.name, n, s.threads,
						coresWay(s.i8, in), coresWay(s.f32, in), coresWay(s.exported, in))
				}
			}
			scaled = append(scaled, scaling{b.name, n, best[0], best[len(best)-1]})
		}
	}
	if len(counts) < 2 {
		return
	}
	first, last := counts[0], counts[len(counts)-1]
	fmt.Printf("\n# items/s on %d threads over items/s on %d, from the same rounds\n", last, first)
	fmt.Printf("%-10s %5s %10s %10s %10s %10s %10s\n", "model", "batch", "qs i8", "qs f32", "ort f32", "qs exp i8", "ort i8")
	for _, s := range scaled {
		fmt.Printf("%-10s %5d", s.model, s.batch)
		for c := range columns {
			fmt.Printf(" %10s", ratio(s.last[c], s.first[c]))
		}
		fmt.Println()
	}
}

// loadSides loads b in ONNX Runtime (its float model and, when b has
// one, its exported int8 file) on threads threads and in quantserve on
// exec, and with check compares the exported file's answers in both.
func loadSides(o *ortProc, b bench, exec *gemm.Engine, threads int, check bool) sides {
	s := sides{threads: threads, ortName: fmt.Sprintf("%s@%d", b.name, threads), ortExported: fmt.Sprintf("%s-i8@%d", b.name, threads)}
	o.call(map[string]any{"cmd": "load", "name": s.ortName, "path": b.path, "threads": threads})
	var err error
	if b.exported != nil {
		o.call(map[string]any{"cmd": "load", "name": s.ortExported, "path": b.exportedPath, "threads": threads})
		opts := model.Options{Exec: exec, WholeBatches: *whole}
		if b.static {
			opts.Quantize, opts.Scheme = true, quant.PerChannel
		}
		if s.exported, err = model.LoadWith(b.exported, opts); err != nil {
			log.Fatal(err)
		}
		if check && b.ref != nil {
			checkAgainstORT(o, b, s.ortExported, s.exported)
		}
	}
	if s.i8, err = model.LoadWith(b.data, model.Options{Exec: exec, Quantize: true, Scheme: quant.PerChannel, WholeBatches: *whole}); err != nil {
		log.Fatal(err)
	}
	if s.f32, err = model.LoadWith(b.data, model.Options{Exec: exec, WholeBatches: *whole}); err != nil {
		log.Fatal(err)
	}
	return s
}

// rate formats items per second, "-" for none.
func rate(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

// ratio formats a/b, "-" when either is missing.
func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}
