package main

import (
	"flag"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// helpIntro is what --help says before the flags.
const helpIntro = `serve runs the quantserve model server: it serves the ONNX models of a model
repository over the Open Inference Protocol (KServe v2), HTTP on --addr and
gRPC on --grpc-addr. It listens at once and loads the models in the
background: /v2/health/live answers 200 while they load, /v2/health/ready 503
with the reason until every one has loaded. With no --model-repository it
serves the embedded "mnist" model. SIGTERM drains before it exits.

Usage:
  serve [flags]

Every flag but --version has an environment twin, QUANTSERVE_ and the flag's
name in upper case with '-' as '_' (shown as "env"); a flag given on the
command line wins. Request spans are exported over OTLP when the standard
OTEL_EXPORTER_OTLP_* variables name an endpoint.
`

// flagGroup is one section of --help: a title and its flags in the order
// they are printed.
type flagGroup struct {
	title string
	flags []string
}

// flagGroups orders --help: where to listen, what to serve, how to compute
// it, the limits on requests and memory, then the rest. Every flag belongs
// to exactly one group (TestHelp).
var flagGroups = []flagGroup{
	{"Serving", []string{"addr", "cors-origins"}},
	{"Models", []string{"model-repository", "model-name", "model-load-timeout"}},
	{"Compute", []string{"quantize", "quantize-scheme", "kernels", "threads", "spin"}},
	{"Limits", []string{"max-body-bytes", "max-inflight", "max-inflight-bytes", "max-request-bytes", "request-timeout", "memory-limit", "gc-min-heap"}},
	{"gRPC", []string{"grpc-addr", "grpc-max-streams"}},
	{"Shutdown", []string{"drain-delay", "shutdown-timeout"}},
	{"Telemetry", []string{"log-level", "log-format", "request-log-rate"}},
	{"TLS", []string{"tls-cert", "tls-key"}},
	{"Admin", []string{"admin-token"}},
	{"Other", []string{"version"}},
}

// envName is the environment twin of the flag name.
func envName(name string) string {
	return "QUANTSERVE_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// printHelp writes --help: the introduction, then fs's flags by group, each
// as the flag package prints it (name, kind, usage with its env twin, and
// the default when it is not the zero value). A flag no group names is
// printed under "Other flags".
func printHelp(w io.Writer, fs *flag.FlagSet) error {
	var b strings.Builder
	b.WriteString(helpIntro)
	printed := map[string]bool{}
	section := func(title string, names []string) {
		fmt.Fprintf(&b, "\n%s:\n", title)
		for _, name := range names {
			if f := fs.Lookup(name); f != nil && !printed[name] {
				printed[name] = true
				printFlag(&b, f)
			}
		}
	}
	for _, g := range flagGroups {
		section(g.title, g.flags)
	}
	var rest []string
	fs.VisitAll(func(f *flag.Flag) {
		if !printed[f.Name] {
			rest = append(rest, f.Name)
		}
	})
	if len(rest) > 0 {
		section("Other flags", rest)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// printFlag writes one flag in the layout of flag.PrintDefaults:
//
//	-addr string
//	  	listen address (env QUANTSERVE_ADDR) (default ":8000")
func printFlag(b *strings.Builder, f *flag.Flag) {
	kind, usage := flag.UnquoteUsage(f)
	line := "  -" + f.Name
	if kind != "" {
		line += " " + kind
	}
	b.WriteString(line)
	if len(line) <= 4 { // a one-letter name shares its line with the usage
		b.WriteString("\t")
	} else {
		b.WriteString("\n    \t")
	}
	b.WriteString(strings.ReplaceAll(usage, "\n", "\n    \t"))
	if !isZeroValue(f) {
		if g, ok := f.Value.(flag.Getter); ok {
			if _, ok := g.Get().(string); ok {
				fmt.Fprintf(b, " (default %q)", f.DefValue)
				b.WriteString("\n")
				return
			}
		}
		fmt.Fprintf(b, " (default %v)", f.DefValue)
	}
	b.WriteString("\n")
}

// isZeroValue reports whether f's default is its type's zero value, which
// the help leaves out (as flag.PrintDefaults does).
func isZeroValue(f *flag.Flag) (zero bool) {
	t := reflect.TypeOf(f.Value)
	var z reflect.Value
	if t.Kind() == reflect.Pointer {
		z = reflect.New(t.Elem())
	} else {
		z = reflect.Zero(t)
	}
	defer func() {
		if recover() != nil {
			zero = false
		}
	}()
	return f.DefValue == z.Interface().(flag.Value).String()
}
