// Command ortbench measures quantserve's products and ONNX Runtime's on
// the same shapes in one invocation, interleaved shape by shape and round
// by round (so a noisy neighbour slows both alike), and prints each
// side's best rate and their ratio:
//
//	int8     quantserve qgemm (the table chosen, per-channel int8 weights)
//	         vs ONNX Runtime MatMulInteger u8s8 on constant int8 weights
//	f32      quantserve sgemm vs ONNX Runtime MatMul
//	batch 1  from DRAM: quantserve's dram row vs ONNX Runtime's cold2.js
//	         (36 different 4096×4096 weights in turn); L3-resident: the l3
//	         row vs bench.js reusing one weight
//
// ONNX Runtime runs through onnxruntime-node with the scripts of
// ../shared/peers/ort, installed once in a directory of your choice:
//
//	d=$(mktemp -d) && cp -r ../shared/peers/ort/. "$d"
//	(cd "$d" && ONNXRUNTIME_NODE_INSTALL_CUDA=skip npm install)
//	go run -C tools ./ortbench -ort "$d" [-threads 1] [-rounds 3]
//
// It downloads nothing itself and is no part of the test suite.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/tools/internal/servermod"
)

var (
	ortDir  = flag.String("ort", "", "directory holding ../shared/peers/ort with onnxruntime-node installed")
	threads = flag.Int("threads", 1, "threads for both runtimes")
	shapes  = flag.String("shapes", "8x4096x4096,64x1024x1024,256x1024x1024,1024x1024x1024", "batched MxKxN shapes")
	l3Shape = flag.String("l3", "1x2048x2048", "batch-1 shape whose weights stay in L3")
	rounds  = flag.Int("rounds", 3, "interleaved rounds; each side keeps its best")
	table   = flag.String("tables", "", "quantserve kernel table (default: the one the CPU selects)")
	cold    = flag.Bool("dram", true, "also compare batch 1 from DRAM (4096×4096 weights)")
)

// key names one comparison row.
type key struct{ kind, shape string }

func main() {
	flag.Parse()
	if *ortDir == "" {
		log.Fatal("ortbench: -ort DIR is required (see go doc -C tools ./ortbench for the one-time npm install)")
	}
	if _, err := os.Stat(filepath.Join(*ortDir, "node_modules", "onnxruntime-node")); err != nil {
		log.Fatalf("ortbench: %s has no node_modules/onnxruntime-node: run ONNXRUNTIME_NODE_INSTALL_CUDA=skip npm install there first", *ortDir)
	}
	tmp, err := os.MkdirTemp("", "ortbench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "bench")
	if out, err := servermod.Build(bin, "./cmd/bench"); err != nil {
		log.Fatalf("ortbench: building cmd/bench: %v\n%s", err, out)
	}
	ours, theirs := map[key]float64{}, map[key]float64{}
	keep := func(m map[key]float64, k key, v float64) { m[k] = max(m[k], v) }
	th := strconv.Itoa(*threads)
	all := append(strings.Split(*shapes, ","), *l3Shape)
	// cmd/bench measures every table it is given, or every table the CPU
	// runs; the comparison is of the one the server would choose.
	if *table == "" {
		*table = dispatch.Default().Name
	}
	tableName := *table
	for r := 0; r < *rounds; r++ {
		for _, sh := range all {
			args := []string{"-json", "-shapes", sh, "-threads", th, "-time", "500ms"}
			args = append(args, "-tables", *table)
			for _, rw := range runOurs(bin, args) {
				if rw.Op != "qgemm" && rw.Op != "sgemm" {
					continue
				}
				if rw.Where == "dram" {
					continue // measured below, with its own weights
				}
				kind := map[string]string{"qgemm": "int8", "sgemm": "f32"}[rw.Op]
				keep(ours, key{kind, sh}, rw.GOPS)
			}
			for kind, v := range runORT(sh, th) {
				keep(theirs, key{kind, sh}, v)
			}
		}
		if *cold {
			args := []string{"-json", "-shapes", "1x4096x4096", "-threads", th, "-time", "500ms", "-ops", "qgemm"}
			args = append(args, "-tables", *table)
			for _, rw := range runOurs(bin, args) {
				if rw.Op == "qgemm" && rw.Where == "dram" {
					keep(ours, key{"int8 dram", "1x4096x4096"}, rw.GOPS)
				}
			}
			keep(theirs, key{"int8 dram", "1x4096x4096"}, runCold(th))
		}
	}
	var keys []key
	for k := range ours {
		if _, ok := theirs[k]; ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].kind != keys[j].kind {
			return keys[i].kind < keys[j].kind
		}
		return keys[i].shape < keys[j].shape
	})
	fmt.Printf("# quantserve (%s) vs ONNX Runtime, %d thread(s), best of %d interleaved rounds, GOP/s\n", tableName, *threads, *rounds)
	fmt.Printf("%-10s %-16s %12s %12s %8s\n", "kind", "M,K,N", "quantserve", "onnxruntime", "ratio")
	for _, k := range keys {
		fmt.Printf("%-10s %-16s %12.1f %12.1f %7.2fx\n", k.kind, strings.ReplaceAll(k.shape, "x", ","), ours[k], theirs[k], ours[k]/theirs[k])
	}
}

type benchRow struct {
	Op, Impl, Where string
	GOPS            float64
}

func runOurs(bin string, args []string) []benchRow {
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		log.Fatalf("ortbench: %s %v: %v", bin, args, err)
	}
	var rows []benchRow
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r benchRow
		if err := json.Unmarshal(sc.Bytes(), &r); err == nil {
			rows = append(rows, r)
		}
	}
	return rows
}

// ortLine matches bench.js's rows: kind, M,K,N, median and best G/s.
var ortLine = regexp.MustCompile(`^(\S+)\s+(\d+),(\d+),(\d+)\s+([\d.]+)\s+([\d.]+)`)

// runORT runs bench.js on one shape and returns the best rate per kind.
func runORT(shape, th string) map[string]float64 {
	cmd := exec.Command("node", "bench.js", th, "f32,mmi_u8s8", "5", "500")
	cmd.Dir = *ortDir
	cmd.Env = append(os.Environ(), "SHAPES="+shape, "QUIETWAIT=0")
	out, err := cmd.Output()
	if err != nil {
		log.Fatalf("ortbench: node bench.js: %v", err)
	}
	res := map[string]float64{}
	for _, line := range strings.Split(string(out), "\n") {
		m := ortLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		best, _ := strconv.ParseFloat(m[6], 64)
		switch m[1] {
		case "mmi_u8s8":
			res["int8"] = best
		case "f32":
			res["f32"] = best
		}
	}
	return res
}

var coldLine = regexp.MustCompile(`best ([\d.]+) G/s`)

// runCold runs cold2.js: batch 1 over 36 different 4096×4096 int8
// weights, which stream from DRAM.
func runCold(th string) float64 {
	cmd := exec.Command("node", "cold2.js", th, "mmi_u8s8", "36")
	cmd.Dir = *ortDir
	out, err := cmd.Output()
	if err != nil {
		log.Fatalf("ortbench: node cold2.js: %v", err)
	}
	m := coldLine.FindSubmatch(out)
	if m == nil {
		log.Fatalf("ortbench: cold2.js printed %q", out)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}
