package deploy

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// What the manifests are checked against: the Dockerfile's final stage and
// the flags of serve, built from ../cmd/serve and asked with -h, so flags
// added later are checked without changing this test.

var tmpDir string

func TestMain(m *testing.M) {
	var err error
	if tmpDir, err = os.MkdirTemp("", "quantserve-deploy-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tmpDir)
	os.Exit(code)
}

// serveFlag is one flag as serve -h prints it.
type serveFlag struct {
	typ string // "string", "int", "duration", ...; "bool" for a bare flag
	def string // the default; "" when -h prints none (the zero value)
}

// envTwin returns the flag an environment variable sets, by serve's rule:
// QUANTSERVE_ and the flag's name in upper case with '-' as '_'.
func envTwin(env string) (string, bool) {
	name, ok := strings.CutPrefix(env, "QUANTSERVE_")
	return strings.ReplaceAll(strings.ToLower(name), "_", "-"), ok
}

var serve struct {
	once  sync.Once
	bin   string
	flags map[string]serveFlag
	repo  string // a model repository holding mnist/1/model.onnx
	err   error
}

// serveBinary builds serve for the machine running the test (also when the
// test itself runs under qemu for another GOARCH), reads its flags and lays
// out a model repository, once per test binary.
func serveBinary(t *testing.T) (string, map[string]serveFlag, string) {
	t.Helper()
	serve.once.Do(func() {
		serve.err = buildServe()
	})
	if serve.err != nil {
		t.Fatal(serve.err)
	}
	return serve.bin, serve.flags, serve.repo
}

func buildServe() error {
	out, err := exec.Command("go", "env", "GOHOSTOS", "GOHOSTARCH").Output()
	if err != nil {
		return fmt.Errorf("go env: %v", err)
	}
	host := strings.Fields(string(out))
	if len(host) != 2 {
		return fmt.Errorf("go env GOHOSTOS GOHOSTARCH printed %q", out)
	}
	bin := filepath.Join(tmpDir, "serve")
	build := exec.Command("go", "build", "-o", bin, "./cmd/serve")
	build.Dir = ".."
	build.Env = append(os.Environ(), "GOOS="+host[0], "GOARCH="+host[1])
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/serve: %v\n%s", err, out)
	}
	help, _ := exec.Command(bin, "-h").CombinedOutput()
	flags, err := parseHelp(string(help))
	if err != nil {
		return err
	}
	repo := filepath.Join(tmpDir, "models")
	onnx, err := os.ReadFile("../defaultmodel/mnist.onnx")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(repo, "mnist", "1"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(repo, "mnist", "1", "model.onnx"), onnx, 0o644); err != nil {
		return err
	}
	serve.bin, serve.flags, serve.repo = bin, flags, repo
	return nil
}

var defaultRE = regexp.MustCompile(`\(default (.+)\)$`)

// parseHelp reads the flag package's PrintDefaults output:
//
//	-addr string
//	  	listen address (env QUANTSERVE_ADDR) (default ":8000")
//	-version
//	  	print the version and exit
func parseHelp(help string) (map[string]serveFlag, error) {
	flags := map[string]serveFlag{}
	cur := ""
	for line := range strings.Lines(help) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "  -"):
			// "  -name type", or "  -x\tusage" for a one-letter name.
			head, usage, _ := strings.Cut(line[3:], "\t")
			f := strings.Fields(head)
			if len(f) == 0 {
				continue
			}
			cur = f[0]
			typ := "bool"
			if len(f) > 1 {
				typ = f[1]
			}
			flags[cur] = serveFlag{typ: typ}
			if m := defaultRE.FindStringSubmatch(usage); m != nil {
				flags[cur] = serveFlag{typ: typ, def: unquote(m[1])}
			}
		case strings.HasPrefix(line, "    \t") && cur != "":
			if m := defaultRE.FindStringSubmatch(line); m != nil {
				f := flags[cur]
				f.def = unquote(m[1])
				flags[cur] = f
			}
		}
	}
	for _, name := range []string{"addr", "model-repository", "log-level"} {
		if _, ok := flags[name]; !ok {
			return nil, fmt.Errorf("serve -h lists no --%s: the help output was not understood:\n%s", name, help)
		}
	}
	return flags, nil
}

// unquote undoes the %q of a string flag's default.
func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}

// image is the Dockerfile's final stage: what the image runs with.
type image struct {
	user       string
	uid        int64
	env        map[string]string
	expose     []int
	entrypoint []string
}

func readDockerfile(t *testing.T) image {
	t.Helper()
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var img image
	var insts []string
	cont := ""
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if s, ok := strings.CutSuffix(line, `\`); ok {
			cont += s + " "
			continue
		}
		insts = append(insts, cont+line)
		cont = ""
	}
	for _, inst := range insts {
		word, rest, _ := strings.Cut(inst, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(word) {
		case "FROM":
			img = image{env: map[string]string{}}
		case "ENV":
			f := strings.Fields(rest)
			if len(f) > 0 && !strings.Contains(f[0], "=") { // ENV KEY value
				img.env[f[0]] = strings.TrimSpace(strings.TrimPrefix(rest, f[0]))
				continue
			}
			for _, kv := range f {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					t.Fatalf("Dockerfile: ENV %q: want KEY=value pairs", rest)
				}
				if u, err := strconv.Unquote(v); err == nil {
					v = u
				}
				img.env[k] = v
			}
		case "EXPOSE":
			for _, p := range strings.Fields(rest) {
				n, err := strconv.Atoi(strings.TrimSuffix(p, "/tcp"))
				if err != nil {
					t.Fatalf("Dockerfile: EXPOSE %q: %v", p, err)
				}
				img.expose = append(img.expose, n)
			}
		case "USER":
			img.user = rest
			uid, _, _ := strings.Cut(rest, ":")
			if img.uid, err = strconv.ParseInt(uid, 10, 64); err != nil {
				t.Fatalf("Dockerfile: USER %s is not numeric: Kubernetes' runAsNonRoot cannot verify a name", rest)
			}
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(rest), &img.entrypoint); err != nil {
				t.Fatalf("Dockerfile: ENTRYPOINT %s: want the exec (JSON) form: %v", rest, err)
			}
		}
	}
	if img.user == "" || img.uid == 0 {
		t.Fatalf("Dockerfile: the final stage runs as %q: want a numeric non-root USER", img.user)
	}
	if len(img.entrypoint) == 0 || len(img.expose) == 0 {
		t.Fatalf("Dockerfile: the final stage has entrypoint %q, EXPOSE %v", img.entrypoint, img.expose)
	}
	return img
}

// running is a serve process started by startServe.
type running struct {
	base string // http://127.0.0.1:port
	log  *syncLog
}

type syncLog struct {
	mu    sync.Mutex
	b     strings.Builder
	added chan struct{} // closed and replaced at each line
}

func (l *syncLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
	l.b.WriteByte('\n')
	if l.added != nil {
		close(l.added)
		l.added = nil
	}
}

// says reports whether the log holds want, and otherwise returns a
// channel closed when the next line is added.
func (l *syncLog) says(want string) (bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if strings.Contains(l.b.String(), want) {
		return true, nil
	}
	if l.added == nil {
		l.added = make(chan struct{})
	}
	return false, l.added
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServe runs serve with flags (name -> value) until the test ends.
// Every address flag is replaced by one on 127.0.0.1: --addr by a free port,
// the others (such as --grpc-addr) by port 0. It returns once serve logs that
// it listens on that port.
func startServe(t *testing.T, flags map[string]string) *running {
	t.Helper()
	bin, known, _ := serveBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var args []string
	for name, v := range flags {
		if strings.HasSuffix(name, "addr") {
			continue
		}
		args = append(args, "--"+name+"="+v)
	}
	for name := range known {
		switch {
		case name == "addr":
			args = append(args, "--addr="+addr)
		case strings.HasSuffix(name, "-addr"):
			args = append(args, "--"+name+"=127.0.0.1:0")
		case name == "drain-delay":
			// The manifest's value was parsed above; the test need not wait.
			args = append(args, "--drain-delay=0s")
		}
	}
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "QUANTSERVE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &running{base: "http://" + addr, log: &syncLog{}}
	listening := make(chan struct{})
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			r.log.add(line)
			if strings.Contains(line, "listening") && strings.Contains(line, addr) {
				once.Do(func() { close(listening) })
			}
		}
		io.Copy(io.Discard, stderr)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			<-exited
			t.Errorf("serve did not stop within a minute of SIGTERM:\n%s", r.log)
		}
	})
	select {
	case <-listening:
		return r
	case err := <-exited:
		exited <- err
		t.Fatalf("serve %s exited before listening: %v\n%s", strings.Join(args, " "), err, r.log)
	case <-time.After(2 * time.Minute):
		t.Fatalf("serve %s did not listen on %s within 2 minutes:\n%s", strings.Join(args, " "), addr, r.log)
	}
	return nil
}

// waitLoaded waits until serve says its start-up load is over: it listens
// before its models load.
func (r *running) waitLoaded(t *testing.T) {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		said, added := r.log.says("start-up load finished")
		if said {
			return
		}
		select {
		case <-added:
		case <-timeout:
			t.Fatalf("serve did not finish loading its models within 2 minutes:\n%s", r.log)
		}
	}
}

// TestParseHelp reads what the flag package prints for each kind of flag,
// including the one-letter form whose usage shares the name's line.
func TestParseHelp(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var b strings.Builder
	fs.SetOutput(&b)
	fs.String("addr", ":8000", "listen address\nover two lines")
	fs.String("model-repository", "", "empty: no default printed")
	fs.String("log-level", "info", "level")
	fs.Int("n", 3, "one letter")
	fs.Duration("request-timeout", time.Minute, "deadline")
	fs.Bool("version", false, "print the version")
	fs.Bool("x", true, "one-letter bool")
	fs.PrintDefaults()
	got, err := parseHelp(b.String())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]serveFlag{
		"addr":             {"string", ":8000"},
		"model-repository": {"string", ""},
		"log-level":        {"string", "info"},
		"n":                {"int", "3"},
		"request-timeout":  {"duration", "1m0s"},
		"version":          {"bool", ""},
		"x":                {"bool", "true"},
	}
	if !maps.Equal(got, want) {
		t.Errorf("parseHelp(%q)\n= %v\nwant %v", b.String(), got, want)
	}
}
