package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestDrainAnswersEveryNewConnection: clients open a new connection for
// every request (infers and readiness checks) and keep doing so through
// SIGTERM, as clients a load balancer has not yet moved away do. Every
// request gets a complete answer (200, or 503 from readiness) until the
// listener is gone and new connections are refused: none is reset or cut,
// new connections are still answered after the signal, and the process
// exits 0.
func TestDrainAnswersEveryNewConnection(t *testing.T) {
	c := startChild(t, "--drain-delay", "300ms", "--shutdown-timeout", "20s")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	body := mnistBody(1, "0.5")
	var signalled atomic.Bool
	var answered, afterSignal, refused, cut atomic.Int64
	var mu sync.Mutex
	var cuts []string
	const clients, warmUp = 24, 10
	var warm, done sync.WaitGroup
	warm.Add(clients)
	for i := range clients {
		done.Add(1)
		go func() {
			defer done.Done()
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			for n := 0; ctx.Err() == nil; n++ {
				if n == warmUp {
					warm.Done()
				}
				late := signalled.Load()
				var req *http.Request
				if (i+n)%4 == 0 {
					req, _ = http.NewRequestWithContext(ctx, "GET", c.url+"/v2/health/ready", nil)
				} else {
					req, _ = http.NewRequestWithContext(ctx, "POST", c.url+"/v2/models/mnist/infer", strings.NewReader(body))
				}
				status, err := exchange(client, req)
				switch {
				case err != nil && isRefused(err):
					refused.Add(1)
					if n < warmUp {
						warm.Done()
					}
					return
				case err == nil && (status == 200 || status == 503 && req.Method == "GET"):
					answered.Add(1)
					if late {
						afterSignal.Add(1)
					}
					continue
				}
				cut.Add(1)
				mu.Lock()
				cuts = append(cuts, fmt.Sprintf("%s %s: status %d, %v", req.Method, req.URL.Path, status, err))
				mu.Unlock()
				if n < warmUp {
					warm.Done()
				}
				return
			}
		}()
	}
	warm.Wait()
	signalled.Store(true)
	c.signal(t, syscall.SIGTERM)
	done.Wait()
	if code := c.wait(t, ctx); code != 0 {
		t.Errorf("exit code %d after a clean drain:\n%s", code, c.logs.String())
	}
	if cut.Load() != 0 {
		t.Errorf("%d of %d requests reset or cut: %s", cut.Load(), answered.Load()+cut.Load(), strings.Join(cuts, "; "))
	}
	if refused.Load() != clients {
		t.Errorf("%d of %d clients ended on a refused connection", refused.Load(), clients)
	}
	if afterSignal.Load() == 0 {
		t.Error("no new connection was answered after the signal")
	}
	if logs := c.logs.String(); !strings.Contains(logs, "drained: every request finished") {
		t.Errorf("log:\n%s", logs)
	}
	t.Logf("%d requests answered, %d of them after the signal", answered.Load(), afterSignal.Load())
}

// exchange sends req and reads its whole answer.
func exchange(client *http.Client, req *http.Request) (int, error) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return resp.StatusCode, err
	}
	return resp.StatusCode, nil
}
