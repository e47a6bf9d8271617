package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
)

// TestHelp: --help prints the introduction and every defined flag exactly
// once, under the groups in their order, each with its environment twin
// and its default as the flag package prints them; it exits without error.
func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, func(string) string { return "" }, &out, &errOut, nil); err != nil {
		t.Fatal(err)
	}
	if errOut.Len() != 0 {
		t.Errorf("--help wrote to stderr: %q", errOut.String())
	}
	help := out.String()
	if !strings.HasPrefix(help, "serve runs the quantserve model server") || !strings.Contains(help, "Usage:\n  serve [flags]\n") {
		t.Errorf("--help lacks its description:\n%s", help)
	}

	// The groups: each title once, in this order, and nothing else.
	wantTitles := []string{"Serving", "Models", "Compute", "Limits", "gRPC", "Shutdown", "Telemetry", "TLS", "Admin", "Other"}
	var titles []string
	for line := range strings.Lines(help) {
		if m := regexp.MustCompile(`^([A-Za-z][A-Za-z ]*):\n$`).FindStringSubmatch(line); m != nil && m[1] != "Usage" {
			titles = append(titles, m[1])
		}
	}
	if strings.Join(titles, ",") != strings.Join(wantTitles, ",") {
		t.Errorf("groups %v, want %v", titles, wantTitles)
	}

	// Every defined flag: in exactly one group, printed exactly once, under
	// its group's title, with its env twin and default.
	fs := newFlagSet(&config{})
	inGroup := map[string]int{}
	for _, g := range flagGroups {
		for _, name := range g.flags {
			inGroup[name]++
			if fs.Lookup(name) == nil {
				t.Errorf("group %s names %q, which is not a flag", g.title, name)
			}
		}
	}
	sections := map[string]string{} // flag -> the title above it
	title := ""
	for line := range strings.Lines(help) {
		if strings.HasSuffix(line, ":\n") && !strings.HasPrefix(line, " ") {
			title = strings.TrimSuffix(line, ":\n")
		}
		if rest, ok := strings.CutPrefix(line, "  -"); ok {
			name := strings.Fields(rest)[0]
			if _, dup := sections[name]; dup {
				t.Errorf("--%s printed twice", name)
			}
			sections[name] = title
		}
	}
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		if inGroup[f.Name] != 1 {
			t.Errorf("--%s is in %d groups of flagGroups, want 1", f.Name, inGroup[f.Name])
		}
		if sections[f.Name] == "" {
			t.Errorf("--help does not print --%s", f.Name)
		}
		kind, _ := flag.UnquoteUsage(f)
		head := "  -" + f.Name
		if kind != "" {
			head += " " + kind
		}
		i := strings.Index(help, head+"\n    \t")
		if i < 0 {
			t.Errorf("--help lacks the line %q", head)
			return
		}
		usage, _, _ := strings.Cut(help[i+len(head)+6:], "\n")
		if f.Name != "version" && !strings.Contains(usage, "(env "+envName(f.Name)+")") {
			t.Errorf("--%s: %q does not name QUANTSERVE's twin %s", f.Name, usage, envName(f.Name))
		}
		def := ""
		if j := strings.LastIndex(usage, " (default "); j >= 0 {
			def = strings.TrimSuffix(usage[j+len(" (default "):], ")")
		}
		wantDefault := map[string]string{"addr": `":8000"`, "grpc-addr": `":8001"`, "quantize": `"int8"`, "drain-delay": "5s",
			"gc-min-heap": "64MiB", "memory-limit": "", "admin-token": "", "version": ""}
		if want, ok := wantDefault[f.Name]; ok && def != want {
			t.Errorf("--%s: default %q, want %q", f.Name, def, want)
		}
	})
	if len(sections) != n {
		t.Errorf("--help prints %d flags, %d are defined", len(sections), n)
	}
	if !strings.Contains(help, "MatMul/Gemm and Conv") {
		t.Errorf("--quantize does not say convolutions are quantized too")
	}

	// The same as the flag package's own layout, flag by flag.
	ref := flag.NewFlagSet("ref", flag.ContinueOnError)
	var b strings.Builder
	ref.SetOutput(&b)
	fs.VisitAll(func(f *flag.Flag) { ref.Var(f.Value, f.Name, f.Usage) })
	ref.PrintDefaults()
	for line := range strings.Lines(b.String()) {
		if !strings.Contains(help, line) {
			t.Errorf("flag.PrintDefaults prints %q; --help does not", line)
		}
	}

	// A bad flag: the error and a hint, not the help.
	errOut.Reset()
	if err := run(context.Background(), []string{"--no-such-flag"}, func(string) string { return "" }, io.Discard, &errOut, nil); err == nil {
		t.Error("--no-such-flag accepted")
	}
	if !strings.Contains(errOut.String(), "serve --help") || strings.Contains(errOut.String(), "Serving:") {
		t.Errorf("a bad flag printed %q", errOut.String())
	}
}

// TestVersionOutput: --version prints the build's version (the one GET /v2
// reports), the Go version and the kernel table this CPU would use.
func TestVersionOutput(t *testing.T) {
	saved := version
	version = "v9.8.7-test"
	t.Cleanup(func() { version = saved })
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--version"}, func(string) string { return "" }, &out, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	auto, err := dispatch.Select("auto")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "quantserve v9.8.7-test (") || !strings.Contains(lines[0], runtime.Version()) ||
		lines[1] != "kernels: "+auto.Name+" on "+dispatch.CPU() {
		t.Errorf("--version printed %q; want quantserve v9.8.7-test, %s and kernels: %s on %s", out.String(), runtime.Version(), auto.Name, dispatch.CPU())
	}
	if buildVersion() != "v9.8.7-test" {
		t.Errorf("buildVersion() = %q: GET /v2 would not report the version --version prints", buildVersion())
	}
}

// TestBinaryHelpAndVersion: the built binary exits 0 for --help and
// --version and prints them on stdout.
func TestBinaryHelpAndVersion(t *testing.T) {
	bin := serverBinary(t)
	for _, c := range []struct{ arg, prefix string }{{"--help", "serve runs the quantserve model server"}, {"--version", "quantserve "}, {"-h", "serve runs"}} {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, c.arg)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("serve %s: %v\n%s", c.arg, err, stderr.String())
		}
		if !strings.HasPrefix(stdout.String(), c.prefix) || stderr.Len() != 0 {
			t.Errorf("serve %s: stdout %q, stderr %q", c.arg, stdout.String(), stderr.String())
		}
	}
	if err := exec.Command(bin, "--no-such-flag").Run(); err == nil {
		t.Error("serve --no-such-flag exited 0")
	}
}
