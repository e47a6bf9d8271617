package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// These tests run the real server binary as a child process: signals,
// exit codes and resident memory are the process's own.

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
	buildDir  string
	cannotRun string // why the built binary cannot run here
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// serverBinary builds cmd/serve once per test run.
func serverBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "quantserve-test-"); buildErr != nil {
			return
		}
		binary = filepath.Join(buildDir, "serve")
		out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		// A test binary run under an emulator (GOARCH=arm64 with -exec
		// qemu-aarch64) builds a server this machine cannot execute.
		if err := exec.Command(binary, "--version").Run(); errors.Is(err, syscall.ENOEXEC) {
			cannotRun = fmt.Sprintf("the %s/%s server binary cannot run on this machine (an emulated test run); the native run covers these tests", runtime.GOOS, runtime.GOARCH)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	if cannotRun != "" {
		t.Skip(cannotRun)
	}
	return binary
}

// child is a server process started by a test.
type child struct {
	cmd  *exec.Cmd
	url  string
	logs *syncBuffer
	exit chan error // receives Wait's result once
}

// startChild starts the server binary on a free port of 127.0.0.1 and
// waits for it to listen. The test's end kills it if it still runs.
func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	cmd := exec.Command(serverBinary(t), append([]string{"--addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "GOMEMLIMIT=") // the test's own settings only
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, logs: &syncBuffer{}, exit: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			c.logs.Write([]byte(line + "\n"))
			if strings.Contains(line, "msg=listening") {
				if i := strings.Index(line, "addr="); i >= 0 {
					addr <- strings.Fields(line[i+len("addr="):])[0]
				}
			}
		}
		c.exit <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-c.exit
		c.exit <- nil
	})
	select {
	case a := <-addr:
		c.url = "http://" + a
	case err := <-c.exit:
		c.exit <- err
		t.Fatalf("the server exited before listening (%v):\n%s", err, c.logs.String())
	}
	return c
}

// wait waits for the process to exit and returns its exit code.
func (c *child) wait(t *testing.T, ctx context.Context) int {
	t.Helper()
	select {
	case err := <-c.exit:
		c.exit <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-ctx.Done():
		t.Fatalf("the server did not exit: %v\n%s", ctx.Err(), c.logs.String())
		return -1
	}
}

func (c *child) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// status reads a field of /proc/<pid>/status in bytes (VmRSS, VmHWM).
func (c *child) status(t *testing.T, field string) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest) // "123456 kB"
			n, _ := strconv.ParseInt(f[0], 10, 64)
			return n << 10
		}
	}
	t.Fatalf("no %s in /proc/<pid>/status", field)
	return 0
}

// metric scrapes one unlabelled sample (or the sum of a family's samples)
// from /metrics.
func metric(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return sum
}

func mnistBody(rows int, value string) string {
	var b strings.Builder
	b.WriteString(`{"inputs":[{"name":"input","shape":[`)
	b.WriteString(strconv.Itoa(rows))
	b.WriteString(`,784],"datatype":"FP32","data":[`)
	for i := 0; i < rows*784; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(value)
	}
	b.WriteString("]}]}")
	return b.String()
}

// isRefused reports a connection refused: the listener is closed.
func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// TestDrainOnSIGTERM: clients send infers steadily over keep-alive
// connections; on SIGTERM readiness turns 503 while requests are still
// served; clients that see it finish and go, as behind a load balancer;
// then the listener closes. No request is reset or cut, readiness was 503
// before the listener closed, and the process exits 0.
func TestDrainOnSIGTERM(t *testing.T) {
	c := startChild(t, "--drain-delay", "3s", "--shutdown-timeout", "20s")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	body := mnistBody(1, "0.5")
	var notReady atomic.Bool
	var ok, okDraining, cut atomic.Int64
	var firstCut atomic.Value
	var warm sync.WaitGroup
	var clients sync.WaitGroup
	const n = 16
	warm.Add(n)
	for i := 0; i < n; i++ {
		clients.Add(1)
		go func() {
			defer clients.Done()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			done, after := 0, 0
			for ctx.Err() == nil && after < 3 {
				draining := notReady.Load()
				req, _ := http.NewRequestWithContext(ctx, "POST", c.url+"/v2/models/mnist/infer", strings.NewReader(body))
				resp, err := client.Do(req)
				if err != nil {
					if !isRefused(err) {
						cut.Add(1)
						firstCut.CompareAndSwap(nil, err.Error())
					}
					break
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					cut.Add(1)
					firstCut.CompareAndSwap(nil, fmt.Sprintf("status %d", resp.StatusCode))
					break
				}
				ok.Add(1)
				if draining {
					okDraining.Add(1)
					after++
				}
				if done++; done == 20 {
					warm.Done()
				}
			}
			if done < 20 {
				warm.Done()
			}
		}()
	}
	// the readiness poller: a load balancer's health check
	var sawNotReadyBeforeClose atomic.Bool
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		client := &http.Client{}
		for ctx.Err() == nil {
			resp, err := client.Get(c.url + "/v2/health/ready")
			if err != nil {
				return // the listener closed
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 503 {
				sawNotReadyBeforeClose.Store(true)
				notReady.Store(true)
			}
		}
	}()
	warm.Wait()
	c.signal(t, syscall.SIGTERM)
	clients.Wait()
	<-polled
	if code := c.wait(t, ctx); code != 0 {
		t.Errorf("exit code %d after a clean drain:\n%s", code, c.logs.String())
	}
	if cut.Load() != 0 {
		t.Errorf("%d requests reset or cut (first: %v) of %d", cut.Load(), firstCut.Load(), ok.Load()+cut.Load())
	}
	if !sawNotReadyBeforeClose.Load() {
		t.Error("readiness never answered 503 before the listener closed")
	}
	if okDraining.Load() == 0 {
		t.Error("no request was served while draining")
	}
	if logs := c.logs.String(); !strings.Contains(logs, "drained: every request finished") {
		t.Errorf("log:\n%s", logs)
	}
	t.Logf("%d requests, %d of them while draining, 0 cut", ok.Load(), okDraining.Load())
}

// TestSecondSignalExitsAtOnce: a second signal during the drain delay
// exits at once, non-zero.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	c := startChild(t, "--drain-delay", "10m")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c.signal(t, syscall.SIGTERM)
	for ctx.Err() == nil {
		resp, err := http.Get(c.url + "/v2/health/ready")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 503 {
			break
		}
	}
	c.signal(t, syscall.SIGINT)
	if code := c.wait(t, ctx); code == 0 {
		t.Error("exit code 0 after a second signal")
	}
	if logs := c.logs.String(); !strings.Contains(logs, "second signal") {
		t.Errorf("log:\n%s", logs)
	}
}

// TestShutdownTimeoutCutsShort: a request still running when the shutdown
// timeout passes is cut short; the process says so and exits non-zero.
func TestShutdownTimeoutCutsShort(t *testing.T) {
	c := startChild(t, "--drain-delay", "0s", "--shutdown-timeout", "300ms")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := net.Dial("tcp", strings.TrimPrefix(c.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v2/models/mnist/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
	for metric(t, c.url, "quantserve_receiving") < 1 {
	}
	c.signal(t, syscall.SIGTERM)
	if code := c.wait(t, ctx); code == 0 {
		t.Error("exit code 0 with a request cut short")
	}
	if logs := c.logs.String(); !strings.Contains(logs, "requests in flight were cut short") {
		t.Errorf("log:\n%s", logs)
	}
}

// TestAnnouncedBodiesDoNotDriveMemory: four waves of 64 connections
// announce 64 MiB bodies, send a few bytes and go away (a buffer sized by
// the announcement would be reused and touched wave after wave). The
// server's peak resident memory stays under 512 MiB, and it still answers
// an infer beside a wave.
func TestAnnouncedBodiesDoNotDriveMemory(t *testing.T) {
	c := startChild(t)
	host := strings.TrimPrefix(c.url, "http://")
	pending := func() float64 {
		return metric(t, c.url, "quantserve_receiving") + metric(t, c.url, "quantserve_inflight")
	}
	for wave := 0; wave < 4; wave++ {
		var conns []net.Conn
		for i := 0; i < 64; i++ {
			conn, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, conn)
			fmt.Fprintf(conn, "POST /v2/models/mnist/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"inputs\":", 64<<20)
		}
		for pending() < 64 {
		}
		if wave == 0 {
			resp, err := http.Post(c.url+"/v2/models/mnist/infer", "application/json", strings.NewReader(mnistBody(1, "0")))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("infer beside 64 announced bodies: %d", resp.StatusCode)
			}
		}
		for _, conn := range conns {
			conn.Close()
		}
		for pending() > 0 {
		}
	}
	if hwm := c.status(t, "VmHWM"); hwm >= 512<<20 {
		t.Errorf("peak resident memory %d MiB with waves of 64 announced 64 MiB bodies", hwm>>20)
	} else {
		t.Logf("peak resident memory %d MiB, now %d MiB", hwm>>20, c.status(t, "VmRSS")>>20)
	}
}

// TestConcurrentLargeBodiesStayWithinBudget: 16 clients send valid 60 MB
// infer bodies at once. Each is answered 200 or 503 with Retry-After, the
// bytes held never exceed --max-inflight-bytes, and the process's peak
// resident memory stays within the budget plus a fixed allowance (it was
// 6 GiB when each body grew its buffer to twice its size and nothing
// bounded how many were held).
func TestConcurrentLargeBodiesStayWithinBudget(t *testing.T) {
	const budget = 256 << 20
	c := startChild(t, "--max-inflight-bytes", "256MiB", "--memory-limit", "448MiB")
	rows := 60_000_000 / (784 * 5)
	body := mnistBody(rows, "0.25")
	base := c.status(t, "VmRSS")
	var wg sync.WaitGroup
	statuses := make(chan string, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(c.url+"/v2/models/mnist/infer", "application/json", strings.NewReader(body))
			if err != nil {
				statuses <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case resp.StatusCode == 200 && strings.Contains(string(b), fmt.Sprintf(`"shape":[%d,10]`, rows)):
				statuses <- "200"
			case resp.StatusCode == 503 && resp.Header.Get("Retry-After") != "":
				statuses <- "503"
			default:
				statuses <- fmt.Sprintf("%d %.200s", resp.StatusCode, b)
			}
		}()
	}
	// sample the bytes held while they run
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var maxHeld float64
sampling:
	for {
		select {
		case <-finished:
			break sampling
		case <-tick.C:
			maxHeld = max(maxHeld, metric(t, c.url, "quantserve_inflight_bytes"))
		}
	}
	close(statuses)
	count := map[string]int{}
	for s := range statuses {
		count[s]++
	}
	// 60 MB bodies and their 48 MB of tensors: two to four fit the budget
	// at once; all being refused would be a livelock
	if count["200"] < 2 || count["200"]+count["503"] != 16 {
		t.Errorf("answers: %v", count)
	}
	if maxHeld > budget {
		t.Errorf("requests held %v bytes, over the %d budget", maxHeld, budget)
	}
	hwm := c.status(t, "VmHWM")
	// the budget bounds request bytes; the rest is the model's activations
	// and the collector's headroom under --memory-limit
	if hwm > base+budget+384<<20 {
		t.Errorf("peak resident memory %d MiB (at start %d MiB, budget %d MiB)", hwm>>20, base>>20, budget>>20)
	}
	t.Logf("answers %v; bytes held at most %.0f MiB; resident memory at start %d MiB, peak %d MiB", count, maxHeld/(1<<20), base>>20, hwm>>20)
}
