package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

var (
	nodes      = flag.Int("nodes", 0, "with -profile, also list this many of the slowest nodes of each run")
	cpuProfile = flag.String("cpuprofile", "", "with -profile, write a Go CPU profile of each profiled run to this prefix followed by model_weights_batch.pprof (samples labelled node and op: go tool pprof -tagfocus node=^NAME$)")
	exported   = flag.Bool("exported", false, "with -profile, also profile the file ONNX Runtime's quantization writes (quantize_static QDQ for the CNNs, quantize_dynamic for the encoder), as the column qs exp i8 runs it")
)

// profileAll profiles every model, int8 and float32, at every batch size.
func profileAll(benches []bench) {
	exec := gemm.New(table(), *threads)
	defer exec.Close()
	fmt.Printf("# quantserve profile (%s, %d thread(s)), %v per run\n", exec.Table().Name, *threads, *minTime)
	var summary []string
	tmp, err := os.MkdirTemp("", "modelbench-profile")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for _, b := range benches {
		type kind struct {
			name string
			data []byte
			opts model.Options
		}
		kinds := []kind{
			{"int8", b.data, model.Options{Exec: exec, Quantize: true, Scheme: quant.PerChannel}},
			{"float32", b.data, model.Options{Exec: exec}},
		}
		if *exported {
			if err := exportInt8(&b, tmp); err != nil {
				log.Fatal(err)
			}
			opts := model.Options{Exec: exec}
			if b.static {
				opts.Quantize, opts.Scheme = true, quant.PerChannel
			}
			kinds = append(kinds, kind{"exp i8", b.exported, opts})
		}
		for _, kind := range kinds {
			m, err := model.LoadWith(kind.data, kind.opts)
			if err != nil {
				log.Fatal(err)
			}
			for _, bs := range strings.Split(*batches, ",") {
				var n int
				fmt.Sscan(bs, &n)
				in := makeInput(b, append([]int{n}, b.item...))
				prefix := ""
				if *cpuProfile != "" {
					prefix = fmt.Sprintf("%s%s_%s_%d.pprof", *cpuProfile, b.name, strings.ReplaceAll(kind.name, " ", ""), n)
				}
				p, runs := profileRuns(m, b.input, in, prefix)
				t := total(p)
				fmt.Printf("\n## %s %s batch %d: %d runs, %.2f ms a run, serial fraction %.1f%%\n", b.name, kind.name, n, runs, ms(t)/float64(runs), 100*p.SerialFraction())
				fmt.Printf("%-24s %6s %10s %7s %9s\n", "operator", "nodes", "ms/run", "share", "parallel")
				for i, o := range p.ByOp() {
					if i == *top {
						break
					}
					fmt.Printf("%-24s %6d %10.3f %6.1f%% %8.1f%%\n", o.Op, o.Runs/runs, ms(o.Time)/float64(runs), 100*float64(o.Time)/float64(t), 100*float64(o.Parallel)/float64(max(o.Time, 1)))
				}
				if *nodes > 0 {
					slowest := p.Nodes()
					slices.SortStableFunc(slowest, func(a, b model.NodeTime) int { return cmp.Compare(b.Time, a.Time) })
					fmt.Printf("\n%-32s %-20s %10s %9s %10s\n", "slowest nodes", "operator", "us/run", "parallel", "serial us")
					for _, nd := range slowest[:min(*nodes, len(slowest))] {
						fmt.Printf("%-32s %-20s %10.1f %8.1f%% %10.2f\n", nd.Node, nd.Op, 1000*ms(nd.Time)/float64(runs), 100*float64(nd.Parallel)/float64(max(nd.Time, 1)), 1000*ms(nd.Time-nd.Parallel)/float64(runs))
					}
				}
				summary = append(summary, fmt.Sprintf("%-10s %-8s %5d %10.2f %9.1f%%", b.name, kind.name, n, ms(t)/float64(runs), 100*p.SerialFraction()))
			}
		}
	}
	fmt.Printf("\n## summary\n%-10s %-8s %5s %10s %10s\n", "model", "weights", "batch", "ms/run", "serial")
	for _, s := range summary {
		fmt.Println(s)
	}
}

// profileRuns runs m on in for -mintime after one warm-up, all runs in
// one profile, and returns it with the number of runs. With a cpuProfile
// path, the timed runs are also sampled into a Go CPU profile there.
func profileRuns(m *model.Model, name string, in *tensor.Tensor, cpuProfile string) (*model.Profile, int) {
	inputs := map[string]*tensor.Tensor{name: in}
	if _, err := m.Run(context.Background(), inputs, nil); err != nil {
		log.Fatal(err)
	}
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	p := &model.Profile{Labels: cpuProfile != ""}
	ctx := model.WithProfile(context.Background(), p)
	n, t0 := 0, time.Now()
	for n == 0 || time.Since(t0) < *minTime {
		if _, err := m.Run(ctx, inputs, nil); err != nil {
			log.Fatal(err)
		}
		n++
	}
	return p, n
}

func total(p *model.Profile) time.Duration {
	var t time.Duration
	for _, n := range p.Nodes() {
		t += n.Time
	}
	return t
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
