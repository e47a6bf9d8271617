package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/dispatch"
)

// syncBuffer is a bytes.Buffer safe for the server's log writes while the
// test reads it.
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{} // closed and replaced at each write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrote != nil {
		close(s.wrote)
		s.wrote = nil
	}
	return s.b.Write(p)
}

// waitFor returns the log once it holds want (the server writes its log
// in batches, so a line can follow the event it reports), failing the
// test if it never does.
func (s *syncBuffer) waitFor(t *testing.T, want string) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		s.mu.Lock()
		log := s.b.String()
		if s.wrote == nil {
			s.wrote = make(chan struct{})
		}
		wrote := s.wrote
		s.mu.Unlock()
		if strings.Contains(log, want) {
			return log
		}
		select {
		case <-wrote:
		case <-deadline:
			t.Fatalf("the log never said %q:\n%s", want, log)
		}
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs the server with args and env until the test ends, and returns
// its base URL and its log.
func start(t *testing.T, args []string, env map[string]string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		// a cancelled ctx drains like a signal; tests need no drain delay
		done <- run(ctx, append([]string{"--drain-delay", "0s", "--grpc-addr", "127.0.0.1:0"}, args...), func(k string) string { return env[k] }, io.Discard, logs, ready)
	}()
	select {
	case addr := <-ready:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("server exited with %v", err)
			}
		})
		logs.waitFor(t, "start-up load finished") // the server listens while its models load
		return "http://" + addr, logs
	case err := <-done:
		cancel()
		t.Fatalf("server did not start: %v\n%s", err, logs.String())
	}
	return "", nil
}

func TestServeEmbeddedModel(t *testing.T) {
	url, logs := start(t, []string{"--addr", "127.0.0.1:0"}, nil)
	body := `{"inputs":[{"name":"input","shape":[1,784],"datatype":"FP32","data":[` + strings.Repeat("0,", 783) + `0]}]}`
	resp, err := http.Post(url+"/v2/models/mnist/infer", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"name":"scores","datatype":"FP32","shape":[1,10]`) {
		t.Fatalf("infer: %d %s", resp.StatusCode, b)
	}
	log := logs.String()
	for _, want := range []string{"model loaded", "model=mnist", "version=1", "parameters=235146", "load_time=", "listening", "addr=127.0.0.1:"} {
		if !strings.Contains(log, want) {
			t.Errorf("start-up log lacks %q:\n%s", want, log)
		}
	}
}

func TestServeRepositoryFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "digits", "4"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "digits", "4", "model.onnx"), defaultmodel.ONNX, 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"QUANTSERVE_ADDR": "127.0.0.1:0", "QUANTSERVE_MODEL_REPOSITORY": dir, "QUANTSERVE_MAX_BODY_BYTES": "100"}
	url, _ := start(t, nil, env)
	resp, err := http.Get(url + "/v2/models/digits")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"versions":["4"]`) {
		t.Fatalf("metadata: %d %s", resp.StatusCode, b)
	}
	resp, err = http.Post(url+"/v2/models/digits/infer", "application/json", strings.NewReader(strings.Repeat(" ", 101)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("QUANTSERVE_MAX_BODY_BYTES=100 not applied: status %d", resp.StatusCode)
	}
}

func TestFlagsOverrideEnvironment(t *testing.T) {
	c, err := parseConfig([]string{"--addr", ":9"}, func(k string) string {
		return map[string]string{"QUANTSERVE_ADDR": ":1", "QUANTSERVE_LOG_LEVEL": "debug"}[k]
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.addr != ":9" || c.logLevel != "debug" || c.maxBodyBytes != 64<<20 {
		t.Errorf("config %+v", c)
	}
	for _, bad := range [][]string{{"--max-body-bytes", "0"}, {"--nope"}, {"extra"}} {
		if _, err := parseConfig(bad, func(string) string { return "" }, io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if _, err := parseConfig(nil, func(k string) string {
		if k == "QUANTSERVE_MAX_BODY_BYTES" {
			return "lots"
		}
		return ""
	}, io.Discard); err == nil || !strings.Contains(err.Error(), "QUANTSERVE_MAX_BODY_BYTES") {
		t.Errorf("bad environment value: %v", err)
	}
}

func TestVersionAndBadRepository(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--version"}, func(string) string { return "" }, &out, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "quantserve ") {
		t.Errorf("--version printed %q", out.String())
	}
	err := run(context.Background(), []string{"--model-repository", filepath.Join(t.TempDir(), "missing"), "--addr", "127.0.0.1:0"}, func(string) string { return "" }, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing repository: %v", err)
	}
}

func TestKernelsFlag(t *testing.T) {
	url, logs := start(t, []string{"--addr", "127.0.0.1:0", "--kernels", "generic", "--threads", "1", "--quantize", "none"}, nil)
	resp, err := http.Get(url + "/v2")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"kernels":"generic"`) {
		t.Errorf("/v2: %s", b)
	}
	if !strings.Contains(logs.String(), "table=generic") || !strings.Contains(logs.String(), "int8_layers=0/3") {
		t.Errorf("start-up log: %s", logs.String())
	}
	// a table this CPU cannot run, or no such table: a clear start-up error
	for _, bad := range append(dispatch.Names(), "sse9") {
		if slices.ContainsFunc(dispatch.Available(), func(tb *dispatch.Table) bool { return tb.Name == bad }) {
			continue
		}
		err := run(context.Background(), []string{"--kernels", bad, "--addr", "127.0.0.1:0"}, func(string) string { return "" }, io.Discard, io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), "--kernels") || !strings.Contains(err.Error(), bad) {
			t.Errorf("--kernels %s: %v", bad, err)
		}
	}
	var out bytes.Buffer
	env := func(k string) string { return map[string]string{"QUANTSERVE_KERNELS": "generic"}[k] }
	if err := run(context.Background(), []string{"--version"}, env, &out, io.Discard, nil); err != nil || !strings.Contains(out.String(), "kernels: generic") {
		t.Errorf("--version with QUANTSERVE_KERNELS=generic: %q %v", out.String(), err)
	}
	// every table this CPU runs can be chosen by name, and is the one reported
	for _, tb := range dispatch.Available() {
		out.Reset()
		if err := run(context.Background(), []string{"--kernels", tb.Name, "--version"}, func(string) string { return "" }, &out, io.Discard, nil); err != nil || !strings.Contains(out.String(), "kernels: "+tb.Name+" ") {
			t.Errorf("--kernels %s --version: %q %v", tb.Name, out.String(), err)
		}
	}
}

func TestReliabilityFlags(t *testing.T) {
	c, err := parseConfig([]string{"--max-inflight-bytes", "512MiB", "--drain-delay", "1s"}, func(k string) string {
		return map[string]string{"QUANTSERVE_MEMORY_LIMIT": "2GiB", "QUANTSERVE_SHUTDOWN_TIMEOUT": "7s", "QUANTSERVE_DRAIN_DELAY": "9s"}[k]
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.maxInflightMem != 512<<20 || c.memoryLimit != 2<<30 || c.drainDelay != time.Second || c.shutdownTime != 7*time.Second {
		t.Errorf("config %+v", c)
	}
	for _, bad := range [][]string{{"--max-inflight-bytes", "lots"}, {"--memory-limit", "-1"}, {"--drain-delay", "-1s"}, {"--shutdown-timeout", "0s"}} {
		if _, err := parseConfig(bad, func(string) string { return "" }, io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	for in, want := range map[string]int64{"0": 0, "1000": 1000, "64KiB": 64 << 10, "1.5GiB": -1, "3 MB": 3e6, "2GiB": 2 << 30, "7B": 7} {
		var b byteSize
		err := b.Set(in)
		if want < 0 && err == nil || want >= 0 && (err != nil || int64(b) != want) {
			t.Errorf("byteSize %q: %d, %v", in, b, err)
		}
	}
}

// TestCgroupMemoryLimit reads limits laid out as cgroup v2 and v1 present
// them: the smallest on the process's cgroup and its ancestors, "max" and
// v1's huge "no limit" value being none.
func TestCgroupMemoryLimit(t *testing.T) {
	write := func(root, rel, content string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v2 := t.TempDir()
	write(v2, "memory.max", "max")
	write(v2, "kubepods/pod1/memory.max", "1073741824")
	write(v2, "kubepods/pod1/c1/memory.max", "max")
	if got := cgroupMemoryLimit(v2, []byte("0::/kubepods/pod1/c1\n")); got != 1<<30 {
		t.Errorf("v2 nested: %d", got)
	}
	if got := cgroupMemoryLimit(v2, []byte("0::/\n")); got != 0 {
		t.Errorf("v2 root without a limit: %d", got)
	}
	v1 := t.TempDir()
	write(v1, "memory/memory.limit_in_bytes", "9223372036854771712")
	write(v1, "memory/docker/abc/memory.limit_in_bytes", "536870912")
	self := "12:pids:/docker/abc\n4:memory:/docker/abc\n0::/\n"
	if got := cgroupMemoryLimit(v1, []byte(self)); got != 512<<20 {
		t.Errorf("v1: %d", got)
	}
	if got := cgroupMemoryLimit(v1, []byte("4:cpu,memory:/\n")); got != 0 {
		t.Errorf("v1 unlimited: %d", got)
	}
	// a container sees its own cgroup at the root
	inside := t.TempDir()
	write(inside, "memory.max", "268435456")
	if got := cgroupMemoryLimit(inside, []byte("0::/\n")); got != 256<<20 {
		t.Errorf("v2 in a container: %d", got)
	}
}
