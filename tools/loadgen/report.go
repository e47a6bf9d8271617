package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var groupShort = map[string]string{"mnist": "MNIST", "wide": "Wide model (2 × 4096×4096 int8)", "cnn": "PaddleOCR CNN"}

var groupTitles = map[string]string{
	"mnist": "Embedded MNIST model (784-256-128-10), 8 KB JSON or 3 KB binary bodies",
	"wide":  "Wide model: two 4096×4096 int8 Gemm layers, batch-1 requests of 4,096 floats",
	"cnn":   "PaddleOCR text-direction CNN (3×48×192 input), binary bodies",
}

// grpcTitle is added to a group's title when it has gRPC variants.
const grpcTitle = "; gRPC ModelInfer calls with the same values in raw_input_contents"

// hasGRPC tells whether any variant (of group g, or of any group if "")
// is a gRPC one.
func (s *suiteRun) hasGRPC(g string) bool {
	for _, v := range s.variants {
		if v.grpc && (g == "" || v.group == g) {
			return true
		}
	}
	return false
}

func (s *suiteRun) chartDir() string {
	if filepath.IsAbs(s.cfg.charts) {
		return s.cfg.charts
	}
	return filepath.Join(filepath.Dir(s.cfg.out), s.cfg.charts)
}

// ratio is one of the targets as measured.
type ratio struct {
	what, target string
	value        float64
	ok           bool
	detail       string
}

func (s *suiteRun) ratios() []ratio {
	var out []ratio
	top := s.concs[len(s.concs)-1]
	rps := func(id string, c int) float64 {
		if r := s.best(id, c); r != nil {
			return r.PerSecond
		}
		return 0
	}
	div := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	for _, body := range []string{"binary", "json"} {
		on, off := rps("wide/"+body+"/on", top), rps("wide/"+body+"/off", top)
		if on > 0 && off > 0 {
			r := div(on, off)
			out = append(out, ratio{fmt.Sprintf("wide model, %d concurrent batch-1 clients, %s: batching on / off", top, body), "≥ 3×", r, r >= 3,
				fmt.Sprintf("%.0f / %.0f req/s", on, off)})
		}
	}
	if b := s.bound; b != nil && b.Batch1 > 0 {
		out = append(out, ratio{"(bound) wide model in process, no HTTP: batches of 64 / batch 1 with GOMAXPROCS callers", "—", b.ratio(), true,
			fmt.Sprintf("%.0f / %.0f rows/s", b.Batch64, b.Batch1)})
	}
	for _, batching := range []string{"off", "on"} {
		m, bare := rps("mnist/json/"+batching, 8), rps("bare/json", 8)
		if m > 0 && bare > 0 {
			r := div(m, bare)
			out = append(out, ratio{"MNIST, JSON, 8 connections, batching " + batching + ": served / decode-only handler", "≥ 0.6×", r, r >= 0.6,
				fmt.Sprintf("%.0f / %.0f req/s", m, bare)})
		}
	}
	for _, c := range []int{8, top} {
		for _, batching := range []string{"on", "off"} {
			b, j := rps("wide/binary/"+batching, c), rps("wide/json/"+batching, c)
			if b > 0 && j > 0 {
				r := div(b, j)
				out = append(out, ratio{fmt.Sprintf("wide model, %d connections, batching %s: binary / JSON bodies", c, batching), "≥ 3×", r, r >= 3,
					fmt.Sprintf("%.0f / %.0f req/s", b, j)})
			}
		}
	}
	for _, id := range []string{"bare/json", "bare/binary", "mnist/json/off", "mnist/json/on", "mnist/binary/off", "mnist/binary/on", "mnist/grpc/off", "mnist/grpc/on"} {
		if p := s.best(id, 8); p != nil && p.LatencyMS.P50 > 0 {
			r := p.LatencyMS.P99 / p.LatencyMS.P50
			what, target := "MNIST "+strings.ReplaceAll(strings.TrimPrefix(id, "mnist/"), "/", ", batching ")+", 8 connections: p99 / p50", "≤ 3×"
			switch {
			case strings.HasPrefix(id, "bare/"):
				what, target = "(reference) decode-only handler, "+strings.TrimPrefix(id, "bare/")+" MNIST bodies, 8 connections: p99 / p50", "—"
			case strings.Contains(id, "/grpc/"):
				what, target = "(reference) MNIST gRPC, batching "+strings.TrimPrefix(id, "mnist/grpc/")+", 8 calls outstanding: p99 / p50", "—"
			}
			out = append(out, ratio{what, target, r, r <= 3, fmt.Sprintf("p99 %.2f ms, p50 %.2f ms", p.LatencyMS.P99, p.LatencyMS.P50)})
		}
	}
	// gRPC beside HTTP with binary bodies: the same bytes of input, the
	// protocol's overhead told apart (no target: a reference).
	for _, gc := range []struct {
		group string
		c     int
	}{{"mnist", 8}, {"wide", top}} {
		for _, batching := range []string{"off", "on"} {
			g, b := rps(gc.group+"/grpc/"+batching, gc.c), rps(gc.group+"/binary/"+batching, gc.c)
			if g > 0 && b > 0 {
				r := div(g, b)
				out = append(out, ratio{fmt.Sprintf("(reference) %s, %d clients, batching %s: gRPC / HTTP binary bodies", groupShort[gc.group], gc.c, batching), "—", r, true,
					fmt.Sprintf("%.0f / %.0f req/s", g, b)})
			}
		}
	}
	return out
}

func (s *suiteRun) write() error {
	dir := s.chartDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(s.cfg.out), dir)
	if err != nil {
		rel = dir
	}
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Serving benchmarks\n\n")
	p("Regenerate with `go run -C tools ./loadgen -suite` (about %s; `-point`, `-rounds`, `-conc`, `-models` and `-out` change what is run and where it goes).\n", s.estimate())
	p("It builds `cmd/serve`, lays out a model repository in a temporary directory, starts the server and a decode-only `net/http` server on 127.0.0.1, ")
	p("and drives both with `tools/loadgen`'s closed loop (each connection sends a request, reads the whole answer, sends the next) and open loop (requests leave at a fixed rate, answered or not; latency counts from when each was due).\n\n")
	p("Every point runs %s; the %d rounds are interleaved (every variant at one concurrency, then the next concurrency, then the next round), and each point reports its best round, so the ratios below compare runs made under the same neighbours. ", s.cfg.point, s.cfg.rounds)
	p("The server runs with `--log-level warn` (no line per request) and `--max-inflight 1024`. ")
	p("Batching on means `%s` in the model's `config.yaml`", strings.TrimSpace(strings.ReplaceAll(batchedConfig(0), "\n", "; ")))
	for _, g := range groups {
		if d := s.cfg.delays[g]; d > 0 && len(s.group(g)) > 0 {
			p(", but `max_queue_delay_microseconds: %d` for the %s model, whose batch-1 execution takes about as long: a request waits that long at most for others to share its execution", d.Microseconds(), g)
		}
	}
	p("; the batch column is the mean number of requests per execution, from `/metrics`.\n\n")
	if s.hasGRPC("") {
		p("The gRPC variants call the Open Inference Protocol's `ModelInfer` with the input in `raw_input_contents` (answers come back in `raw_output_contents`), all over one HTTP/2 connection as a client's one channel would; ")
		p("their clients are unary calls outstanding on it, where each HTTP client is a connection of its own with one request outstanding (`go run -C tools ./loadgen -grpc 127.0.0.1:8001` drives them alone).\n\n")
	}
	p("Machine: %s, %d logical CPUs (load generator and server share them), GOMAXPROCS %d, %s, kernel table `%s`; load average %s before and %s after; %s. ",
		s.machine.CPU, s.machine.CPUs, s.machine.GOMAXPROCS, s.machine.Go, s.kernels, s.loadBefore, s.loadAfter, s.started.UTC().Format(time.DateOnly))
	p("Every measurement is in [%s/results.json](%s/results.json); `go run -C tools ./loadgen -suite -from %s` rewrites this page and the charts from it.\n\n", rel, rel, filepath.ToSlash(filepath.Join(dir, "results.json")))
	for _, n := range s.notes {
		p("%s\n\n", n)
	}
	p("## The targets\n\n| measured | target | ratio | | from |\n|---|---|---|---|---|\n")
	for _, r := range s.ratios() {
		verdict := "met"
		switch {
		case r.target == "—":
			verdict = ""
		case !r.ok:
			verdict = "**not met**"
		}
		p("| %s | %s | %.2f× | %s | %s |\n", r.what, r.target, r.value, verdict, r.detail)
	}
	p("\n")
	p("Reading these: the load generator and the server share the machine's cores, and on a shared machine so do other processes (see the load average above), so absolute rates are low and tails long; the decode-only handler's own p99/p50 is listed as the floor this machine puts under the latency ratio. ")
	p("A batch-1 request on the wide model streams all 32 MB of its int8 weights (bound by memory bandwidth); a batch streams them once for all its rows and is bound by the cores instead, so batching gains most where the cores are the server's own. ")
	if s.bound != nil {
		p("The (bound) row measures both in process before any server starts, one batch-1 caller per core against batches of 64: its ratio is the most batching can gain on this machine, before HTTP work and the load generator take their share of the cores. ")
	}
	p("On the wide model the JSON work per request (4,096 numbers parsed, 4,096 written) sits beside about 67 million multiply-adds of the two layers, which bounds what binary bodies can gain over JSON.\n\n")
	for _, g := range groups {
		vs := s.group(g)
		if len(vs) == 0 {
			continue
		}
		title := groupTitles[g]
		if s.hasGRPC(g) {
			title += grpcTitle
		}
		p("## %s\n\n", title)
		p("![requests per second against concurrency](%s/%s-throughput.png) ![p99 latency against concurrency](%s/%s-p99.png)\n\n", rel, g, rel, g)
		p("Closed loop:\n\n| variant | clients | req/s | p50 ms | p90 ms | p99 ms | batch | not 200/OK |\n|---|---:|---:|---:|---:|---:|---:|---|\n")
		for _, v := range vs {
			for _, c := range s.concs {
				pt := s.bestPoint(v.id, c)
				if pt == nil {
					continue
				}
				r := pt.Report
				p("| %s | %d | %.0f | %.2f | %.2f | %.2f | %s | %s |\n", v.label, c, r.PerSecond, r.LatencyMS.P50, r.LatencyMS.P90, r.LatencyMS.P99, batchCell(v, pt.MeanBatch), nonOK(r))
			}
		}
		open := false
		for _, pt := range s.points {
			if pt.Rate > 0 && s.variantOf(pt.Variant).group == g {
				if !open {
					p("\nOpen loop:\n\n| variant | rate sent /s | answered /s | p50 ms | p90 ms | p99 ms | batch | dropped | not 200/OK |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
					open = true
				}
				v := s.variantOf(pt.Variant)
				r := pt.Report
				p("| %s | %.0f | %.0f | %.2f | %.2f | %.2f | %s | %d | %s |\n", v.label, pt.Rate, r.PerSecond, r.LatencyMS.P50, r.LatencyMS.P90, r.LatencyMS.P99, batchCell(v, pt.MeanBatch), r.Dropped, nonOK(r))
			}
		}
		p("\n")
		if err := s.chart(g, vs, filepath.Join(dir, g+"-throughput.png"), "requests/s", func(r *report) float64 { return r.PerSecond }, false); err != nil {
			return err
		}
		if err := s.chart(g, vs, filepath.Join(dir, g+"-p99.png"), "p99 latency (ms)", func(r *report) float64 { return r.LatencyMS.P99 }, true); err != nil {
			return err
		}
	}
	if s.cfg.from == "" {
		if err := s.save(filepath.Join(dir, "results.json")); err != nil {
			return err
		}
	}
	return os.WriteFile(s.cfg.out, []byte(b.String()), 0o644)
}

func batchCell(v *variant, mean float64) string {
	if !v.batched {
		return ""
	}
	return fmt.Sprintf("%.1f", mean)
}

func (s *suiteRun) estimate() string {
	n := len(s.variants) * len(s.concs) * s.cfg.rounds
	d := time.Duration(n)*s.cfg.point + time.Duration(len(s.variants))*(time.Second+2*s.cfg.point)
	return fmt.Sprintf("%.0f minutes", d.Minutes()+1)
}

func (s *suiteRun) group(g string) []*variant {
	var out []*variant
	for _, v := range s.variants {
		if v.group == g {
			out = append(out, v)
		}
	}
	return out
}

func (s *suiteRun) variantOf(id string) *variant {
	for _, v := range s.variants {
		if v.id == id {
			return v
		}
	}
	return &variant{}
}

var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, color.RGBA{0x17, 0xbe, 0xcf, 0xff},
}

// chart plots f of each variant's best round against concurrency.
func (s *suiteRun) chart(g string, vs []*variant, path, ylabel string, f func(*report) float64, logY bool) error {
	pl := plot.New()
	pl.Title.Text = groupShort[g] + ": " + ylabel
	pl.X.Label.Text = "concurrent clients (closed loop)"
	pl.Y.Label.Text = ylabel
	pl.X.Scale = plot.LogScale{}
	var ticks []plot.Tick
	for _, c := range s.concs {
		ticks = append(ticks, plot.Tick{Value: float64(c), Label: fmt.Sprint(c)})
	}
	pl.X.Tick.Marker = plot.ConstantTicks(ticks)
	if logY {
		pl.Y.Scale = plot.LogScale{}
		pl.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	} else {
		pl.Y.Min = 0
	}
	pl.Legend.Top = true
	pl.Legend.Left = true
	pl.Legend.XOffs = vg.Points(8)
	for i, v := range vs {
		var pts plotter.XYs
		for _, c := range s.concs {
			if r := s.best(v.id, c); r != nil && f(r) > 0 {
				pts = append(pts, plotter.XY{X: float64(c), Y: f(r)})
			}
		}
		if len(pts) == 0 {
			continue
		}
		line, dots, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		col := palette[i%len(palette)]
		line.Color, dots.Color = col, col
		dots.Shape = draw.CircleGlyph{}
		if v.grpc {
			dots.Shape = draw.TriangleGlyph{}
		}
		if v.model == "" {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		pl.Add(line, dots)
		pl.Legend.Add(v.label, line, dots)
	}
	return pl.Save(7*vg.Inch, 4.5*vg.Inch, path)
}
