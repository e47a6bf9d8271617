package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

var (
	nodes      = flag.Int("nodes", 0, "with -profile, also list this many of the slowest nodes of each run")
	cpuProfile = flag.String("cpuprofile", "", "with -profile, write a Go CPU profile of each profiled run to this prefix followed by model_weights_batch.pprof, or model_weights_batch_Nthr.pprof with several -threads counts (the fastest round's) (samples labelled node and op: go tool pprof -tagfocus node=^NAME$)")
	exported   = flag.Bool("exported", false, "with -profile, also profile the file ONNX Runtime's quantization writes (quantize_static QDQ for the CNNs, quantize_dynamic for the encoder), as the column qs exp i8 runs it")
)

// profileAll profiles every model, int8 and float32, at every batch size
// and thread count (-threads), the counts one after another for each
// model, weights and batch, in -rounds rounds when there are several
// (each count's fastest round kept). With two counts or more it also prints how
// each run scales from the first count to the last: the run, its part in
// work that splits and its serial part, and with -nodes the nodes that
// lose the most time against a perfect scaling.
// With -ort it also profiles ONNX Runtime (its session profiling) on the
// float model and on the file its quantization writes, at the same
// batches and threads, and lists its operators and slowest nodes beside
// quantserve's time for the node of the same name (ONNX Runtime names a
// QDQ group's fused node after the node it fuses, with a suffix _token_N:
// its QLinearConv n12_token_6 is the graph's Conv n12).
func profileAll(benches []bench) {
	counts := threadCounts()
	for i, n := range counts {
		if slices.Contains(counts[:i], n) {
			log.Fatalf("modelbench: -profile -threads %s names %d twice", *threads, n)
		}
	}
	execs := make([]*gemm.Engine, len(counts))
	for i, cores := range counts {
		execs[i] = gemm.New(table(), cores)
		defer execs[i].Close()
	}
	fmt.Printf("# quantserve profile (%s, %s thread(s)), %v per run\n", execs[0].Table().Name, *threads, *minTime)
	var summary []string
	tmp, err := os.MkdirTemp("", "modelbench-profile")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	var o *ortProc
	if *ortDir != "" {
		var stop func()
		o, stop = startORT()
		defer stop()
	}
	for _, b := range benches {
		type kind struct {
			name string
			data []byte
			opts model.Options
		}
		kinds := []kind{
			{"int8", b.data, model.Options{Quantize: true, Scheme: quant.PerChannel}},
			{"float32", b.data, model.Options{}},
		}
		if *exported || o != nil {
			if err := exportInt8(&b, tmp); err != nil {
				log.Fatal(err)
			}
		}
		if *exported {
			var opts model.Options
			if b.static {
				opts.Quantize, opts.Scheme = true, quant.PerChannel
			}
			kinds = append(kinds, kind{"exp i8", b.exported, opts})
		}
		ours := map[profiled]map[string]float64{} // us/run by node
		for _, kind := range kinds {
			models := make([]*model.Model, len(counts))
			for i := range counts {
				opts := kind.opts
				opts.Exec = execs[i]
				if models[i], err = model.LoadWith(kind.data, opts); err != nil {
					log.Fatal(err)
				}
			}
			for _, n := range batchSizes() {
				in := makeInput(b, append([]int{n}, b.item...))
				// Several counts go round by round (-rounds), each count
				// keeping its fastest round: the host's placements change
				// over seconds, and a round in a slow one says nothing of
				// the code.
				laps := 1
				if len(counts) > 1 {
					laps = max(1, *rounds)
				}
				runs := make([]profiledRun, len(counts))
				for round := range laps {
					for i, cores := range counts {
						prefix := ""
						if *cpuProfile != "" {
							prefix = fmt.Sprintf("%s%s_%s_%d.pprof", *cpuProfile, b.name, strings.ReplaceAll(kind.name, " ", ""), n)
							if len(counts) > 1 {
								prefix = strings.TrimSuffix(prefix, ".pprof") + fmt.Sprintf("_%dthr.pprof", cores)
							}
						}
						path := prefix // a later round's profile waits beside the kept one
						if prefix != "" && round > 0 {
							path = prefix + ".next"
						}
						p, k := profileRuns(models[i], b.input, in, path)
						r := profiledRun{p: p, runs: k, cores: cores}
						keep := round == 0 || r.msPerRun() < runs[i].msPerRun()
						if keep {
							runs[i] = r
						}
						switch {
						case path == prefix:
						case keep:
							if err := os.Rename(path, prefix); err != nil {
								log.Fatal(err)
							}
						default:
							os.Remove(path)
						}
					}
				}
				for i, r := range runs {
					if laps > 1 {
						fmt.Printf("\n# the fastest of %d rounds on %d thread(s)", laps, counts[i])
					}
					ours[profiled{kind.name, n, r.cores}] = r.byNode()
					printProfile(b.name, kind.name, n, r)
					summary = append(summary, fmt.Sprintf("%-10s %-8s %5d %7d %10.2f %9.1f%%", b.name, kind.name, n, r.cores, r.msPerRun(), 100*r.p.SerialFraction()))
				}
				if last := runs[len(runs)-1]; len(runs) > 1 {
					printScaling(b.name, kind.name, n, runs[0], last, ours[profiled{kind.name, n, last.cores}])
				}
			}
		}
		if o == nil {
			continue
		}
		for _, n := range batchSizes() {
			for _, cores := range counts {
				for _, f := range []struct{ name, path string }{{"float32", b.path}, {"int8", b.exportedPath}} {
					if f.path == "" {
						continue
					}
					res := o.call(map[string]any{"cmd": "profile", "path": f.path, "threads": cores, "prefix": filepath.Join(tmp, "ortprof-"+b.name),
						"input": b.input, "type": b.dtype, "shape": append([]int{n}, b.item...), "range": b.idRange, "mintime": minTime.Seconds()})
					printORTProfile(b.name, f.name, n, cores, res, ours)
				}
			}
		}
	}
	fmt.Printf("\n## summary\n%-10s %-8s %5s %7s %10s %10s\n", "model", "weights", "batch", "threads", "ms/run", "serial")
	for _, s := range summary {
		fmt.Println(s)
	}
}

// profiledRun is one profile of quantserve's runs of a model on cores
// threads.
type profiledRun struct {
	p     *model.Profile
	runs  int
	cores int
}

// us returns d a run, in microseconds.
func (r profiledRun) us(d time.Duration) float64 { return 1000 * ms(d) / float64(r.runs) }

func (r profiledRun) msPerRun() float64 { return ms(total(r.p)) / float64(r.runs) }

// byNode returns each node's microseconds a run.
func (r profiledRun) byNode() map[string]float64 {
	m := map[string]float64{}
	for _, nd := range r.p.Nodes() {
		m[nd.Node] += r.us(nd.Time)
	}
	return m
}

// printProfile prints r, the profile of model name's weights at batch n: time
// by operator and, with -nodes, the slowest nodes.
func printProfile(name, weights string, n int, r profiledRun) {
	p, t := r.p, total(r.p)
	fmt.Printf("\n## %s %s batch %d, %d thread(s): %d runs, %.2f ms a run, serial fraction %.1f%%\n", name, weights, n, r.cores, r.runs, r.msPerRun(), 100*p.SerialFraction())
	fmt.Printf("%-24s %6s %10s %7s %9s\n", "operator", "nodes", "ms/run", "share", "parallel")
	for i, o := range p.ByOp() {
		if i == *top {
			break
		}
		fmt.Printf("%-24s %6d %10.3f %6.1f%% %8.1f%%\n", o.Op, o.Runs/r.runs, ms(o.Time)/float64(r.runs), 100*float64(o.Time)/float64(t), 100*float64(o.Parallel)/float64(max(o.Time, 1)))
	}
	if *nodes <= 0 {
		return
	}
	slowest := p.Nodes()
	slices.SortStableFunc(slowest, func(a, b model.NodeTime) int { return cmp.Compare(b.Time, a.Time) })
	fmt.Printf("\n%-32s %-20s %10s %9s %10s\n", "slowest nodes", "operator", "us/run", "parallel", "serial us")
	for _, nd := range slowest[:min(*nodes, len(slowest))] {
		fmt.Printf("%-32s %-20s %10.1f %8.1f%% %10.2f\n", nd.Node, nd.Op, r.us(nd.Time), 100*float64(nd.Parallel)/float64(max(nd.Time, 1)), r.us(nd.Time-nd.Parallel))
	}
}

// printScaling prints how model name's weights at batch n scale from run a
// (fewer threads) to run b, whose nodes' microseconds a run are bNodes
// (profiledRun.byNode): the run, its part in work that splits and its
// serial part, each a run, and with -nodes the nodes whose time on b's
// threads exceeds most their time on a's scaled by a.cores/b.cores (what
// a perfect scaling gives).
func printScaling(name, weights string, n int, a, b profiledRun, bNodes map[string]float64) {
	ideal := float64(a.cores) / float64(b.cores)
	ta, tb := a.us(total(a.p)), b.us(total(b.p))
	pa, pb := ta*(1-a.p.SerialFraction()), tb*(1-b.p.SerialFraction())
	fmt.Printf("\n## %s %s batch %d, %d thread(s) over %d: run %.1f -> %.1f us (%.2fx), in work that splits %.1f -> %.1f us (%.2fx), serial %.1f -> %.1f us; %.1f us a run beyond a perfect scaling\n",
		name, weights, n, b.cores, a.cores, ta, tb, ta/tb, pa, pb, pa/max(pb, 1e-9), ta-pa, tb-pb, tb-ta*ideal)
	if *nodes <= 0 {
		return
	}
	type lost struct {
		node, op string
		ua, ub   float64
	}
	var all []lost
	for _, nd := range a.p.Nodes() {
		all = append(all, lost{nd.Node, nd.Op, a.us(nd.Time), bNodes[nd.Node]})
	}
	excess := func(l lost) float64 { return l.ub - l.ua*ideal }
	slices.SortStableFunc(all, func(x, y lost) int { return cmp.Compare(excess(y), excess(x)) })
	fmt.Printf("%-32s %-20s %10s %10s %9s %10s\n", "nodes losing the most", "operator", fmt.Sprintf("us at %d", a.cores), fmt.Sprintf("us at %d", b.cores), "speed-up", "lost us")
	for _, l := range all[:min(*nodes, len(all))] {
		fmt.Printf("%-32s %-20s %10.1f %10.1f %8.2fx %10.1f\n", l.node, l.op, l.ua, l.ub, l.ua/max(l.ub, 1e-9), excess(l))
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

// profiled is one of quantserve's profiled runs: the weights' kind, the
// batch and the threads.
type profiled struct {
	kind    string
	batch   int
	threads int
}

// ortNode is one node of ONNX Runtime's session profile: its median
// kernel time a run.
type ortNode struct {
	name, op string
	us       float64
}

// printORTProfile prints ONNX Runtime's profile res of b's file of the
// given weights at batch n on cores threads: time by operator and, with
// -nodes, its slowest nodes beside quantserve's time on as many threads
// (ours, by kind, batch and threads) for the node of the same name.
func printORTProfile(model, weights string, n, cores int, res map[string]any, ours map[profiled]map[string]float64) {
	var all []ortNode
	var sum float64
	for _, v := range res["nodes"].([]any) {
		f := v.([]any)
		nd := ortNode{name: f[0].(string), op: f[1].(string), us: f[2].(float64)}
		all = append(all, nd)
		sum += nd.us
	}
	fmt.Printf("\n## %s ONNX Runtime %s batch %d, %d thread(s): %.0f runs, %.2f ms a run, its nodes' medians %.2f ms\n", model, weights, n, cores, res["runs"].(float64), res["ms"].(float64), sum/1000)
	type opTime struct {
		op    string
		nodes int
		us    float64
	}
	var ops []opTime
	for _, nd := range all {
		i := slices.IndexFunc(ops, func(o opTime) bool { return o.op == nd.op })
		if i < 0 {
			ops, i = append(ops, opTime{op: nd.op}), len(ops)
		}
		ops[i].nodes++
		ops[i].us += nd.us
	}
	slices.SortStableFunc(ops, func(a, b opTime) int { return cmp.Compare(b.us, a.us) })
	fmt.Printf("%-24s %6s %10s %7s\n", "operator", "nodes", "ms/run", "share")
	for i, o := range ops {
		if i == *top {
			break
		}
		fmt.Printf("%-24s %6d %10.3f %6.1f%%\n", o.op, o.nodes, o.us/1000, 100*o.us/max(sum, 1e-9))
	}
	if *nodes <= 0 {
		return
	}
	// quantserve's columns: its own quantization of the float model, and
	// the exported file with -exported, for int8; float32 for float32.
	cols := []string{"float32"}
	if weights == "int8" {
		cols = []string{"int8"}
		if *exported {
			cols = append(cols, "exp i8")
		}
	}
	slices.SortStableFunc(all, func(a, b ortNode) int { return cmp.Compare(b.us, a.us) })
	fmt.Printf("\n%-32s %-20s %10s", "slowest nodes", "operator", "us/run")
	for _, c := range cols {
		fmt.Printf(" %12s", "qs "+c+" us")
	}
	fmt.Println()
	for _, nd := range all[:min(*nodes, len(all))] {
		fmt.Printf("%-32s %-20s %10.1f", nd.name, nd.op, nd.us)
		for _, c := range cols {
			if us, ok := ours[profiled{c, n, cores}][graphNode(nd.name)]; ok {
				fmt.Printf(" %12.1f", us)
			} else {
				fmt.Printf(" %12s", "-")
			}
		}
		fmt.Println()
	}
}

// graphNode is the graph's name of the node ONNX Runtime's profile
// names name: without the suffix _token_N it gives the nodes of a QDQ
// group it fuses.
func graphNode(name string) string {
	if i := strings.LastIndex(name, "_token_"); i > 0 {
		if _, err := strconv.Atoi(name[i+len("_token_"):]); err == nil {
			return name[:i]
		}
	}
	return name
}
