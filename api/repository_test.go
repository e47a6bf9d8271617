package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/repository"
	"github.com/quantserve/quantserve/tensor"
)

const adminToken = "s3cret"

func adminServer(t *testing.T, repo *repository.Repository, token string) string {
	t.Helper()
	srv := newTestHTTPServer(t, Options{Repository: repo, Version: "test", AdminToken: token, Logger: quietLog()})
	return srv
}

func doAuth(t *testing.T, method, url, token string) response {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return response{resp.StatusCode, resp.Header, []byte(b.String()), resp.Close}
}

func index(t *testing.T, url string) []repository.IndexEntry {
	t.Helper()
	r := do(t, "POST", url+"/v2/repository/index", "")
	var idx []repository.IndexEntry
	if err := json.Unmarshal(r.body, &idx); err != nil || r.status != 200 {
		t.Fatalf("index: %d %s", r.status, r.body)
	}
	return idx
}

func stateOf(idx []repository.IndexEntry, name, version string) (string, string) {
	for _, e := range idx {
		if e.Name == name && e.Version == version {
			return e.State, e.Reason
		}
	}
	return "", ""
}

func TestRepositoryControlNeedsAdminToken(t *testing.T) {
	dir := writeRepo(t, map[string]map[int][]byte{"m": {1: onnxbuild.Identity(tensor.Float32, []int{-1})}}, nil)
	off := adminServer(t, openRepo(t, dir), "")
	wantError(t, doAuth(t, "POST", off+"/v2/repository/models/m/load", ""), 403, "--admin-token", "QUANTSERVE_ADMIN_TOKEN")
	wantError(t, doAuth(t, "POST", off+"/v2/repository/models/m/unload", "anything"), 403, "--admin-token")

	on := adminServer(t, openRepo(t, dir), adminToken)
	r := doAuth(t, "POST", on+"/v2/repository/models/m/load", "")
	wantError(t, r, 401, "Bearer")
	if r.header.Get("WWW-Authenticate") == "" {
		t.Error("401 without WWW-Authenticate")
	}
	wantError(t, doAuth(t, "POST", on+"/v2/repository/models/m/load", "wrong"), 401)
	if r := doAuth(t, "POST", on+"/v2/repository/models/m/load", adminToken); r.status != 200 {
		t.Errorf("load with the token: %d %s", r.status, r.body)
	}
	for _, bad := range []string{".hidden", "%2e%2e", "a%2Fb", "..%2F..%2Fetc"} {
		r := doAuth(t, "POST", on+"/v2/repository/models/"+bad+"/load", adminToken)
		if r.status == 200 || r.status >= 500 {
			t.Errorf("load %q: %d %s", bad, r.status, r.body)
		}
	}
	wantError(t, doAuth(t, "POST", on+"/v2/repository/models/nope/load", adminToken), 404, "nope")
	// without a repository directory there is nothing to load from
	emb := adminServer(t, repository.New(serverOptions(), repository.Source{Name: "mnist", Version: 1, ONNX: defaultmodel.ONNX}), adminToken)
	wantError(t, doAuth(t, "POST", emb+"/v2/repository/models/mnist/load", adminToken), 409, "--model-repository")
}

func TestFailedLoadKeepsServingAndIndexShowsWhy(t *testing.T) {
	dir := writeRepo(t, map[string]map[int][]byte{"m": {1: onnxbuild.Identity(tensor.Float32, []int{-1})}}, nil)
	url := adminServer(t, openRepo(t, dir), adminToken)
	x := `{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[5]}]}`
	if st, _ := stateOf(index(t, url), "m", "1"); st != "READY" {
		t.Fatalf("m/1 state %q", st)
	}
	// a broken version 2
	os.MkdirAll(filepath.Join(dir, "m", "2"), 0o755)
	os.WriteFile(filepath.Join(dir, "m", "2", "model.onnx"), []byte("garbage"), 0o644)
	wantError(t, doAuth(t, "POST", url+"/v2/repository/models/m/load", adminToken), 400, "failed to load")
	idx := index(t, url)
	if st, _ := stateOf(idx, "m", "1"); st != "READY" {
		t.Errorf("m/1 after a failed load: %q", st)
	}
	if st, why := stateOf(idx, "m", "2"); st != "UNAVAILABLE" || !strings.Contains(why, "decoding ONNX") {
		t.Errorf("m/2: %q %q", st, why)
	}
	if r := do(t, "POST", url+"/v2/models/m/infer", x); r.status != 200 || !strings.Contains(string(r.body), `"model_version":"1"`) {
		t.Errorf("m after a failed load: %d %s", r.status, r.body)
	}
	// fixed: version 2 serves
	os.WriteFile(filepath.Join(dir, "m", "2", "model.onnx"), onnxbuild.Identity(tensor.Float32, []int{-1}), 0o644)
	if r := doAuth(t, "POST", url+"/v2/repository/models/m/load", adminToken); r.status != 200 {
		t.Fatalf("load: %d %s", r.status, r.body)
	}
	if r := do(t, "POST", url+"/v2/models/m/infer", x); !strings.Contains(string(r.body), `"model_version":"2"`) {
		t.Errorf("after reload: %s", r.body)
	}
	// a model directory added after start-up shows as not loaded until loaded
	os.MkdirAll(filepath.Join(dir, "late", "1"), 0o755)
	os.WriteFile(filepath.Join(dir, "late", "1", "model.onnx"), onnxbuild.Identity(tensor.Float32, []int{-1}), 0o644)
	if st, why := stateOf(index(t, url), "late", ""); st != "UNAVAILABLE" || why != "not loaded" {
		t.Errorf("late: %q %q", st, why)
	}
	doAuth(t, "POST", url+"/v2/repository/models/late/load", adminToken)
	if st, _ := stateOf(index(t, url), "late", "1"); st != "READY" {
		t.Errorf("late after load: %q", st)
	}
	// unload
	if r := doAuth(t, "POST", url+"/v2/repository/models/m/unload", adminToken); r.status != 200 {
		t.Fatalf("unload: %d %s", r.status, r.body)
	}
	wantError(t, do(t, "POST", url+"/v2/models/m/infer", x), 404)
	if st, why := stateOf(index(t, url), "m", ""); st != "UNAVAILABLE" || why != "unloaded" {
		t.Errorf("m after unload: %q %q", st, why)
	}
	wantError(t, doAuth(t, "POST", url+"/v2/repository/models/m/unload", adminToken), 404, "not loaded")
}

func TestVersionPolicy(t *testing.T) {
	id := onnxbuild.Identity(tensor.Float32, []int{-1})
	dir := writeRepo(t, map[string]map[int][]byte{"latest": {1: id, 2: id, 3: id}, "specific": {1: id, 2: id, 3: id}}, map[string]string{
		"latest":   "version_policy:\n  latest:\n    num_versions: 2\n",
		"specific": "version_policy:\n  specific:\n    versions: [1, 3]\n",
	})
	repo := openRepo(t, dir)
	for name, want := range map[string]string{"latest": "2, 3", "specific": "1, 3"} {
		e, _, release, err := repo.Get(name, "")
		if err != nil {
			t.Fatal(err)
		}
		release()
		if e.VersionList() != want {
			t.Errorf("%s: versions %s, want %s", name, e.VersionList(), want)
		}
	}
	if _, err := repository.ParseConfig([]byte("version_policy:\n  latest: {num_versions: 1}\n  all: {}\n")); err == nil {
		t.Error("two policies accepted")
	}
}

// TestHotSwapUnderTraffic loads new versions of a model, and loads and
// unloads another, while clients keep sending requests: no request fails,
// and each client sees versions only move forward.
func TestHotSwapUnderTraffic(t *testing.T) {
	two := func(c float32) []byte { // y = x + c, so the answer names the version
		return onnxbuild.Graph{
			Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1)},
			Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, -1)},
			Nodes:   []onnxbuild.Node{{Op: "Add", Inputs: []string{"x", "c"}, Outputs: []string{"y"}}},
			Inits:   map[string]*tensor.Tensor{"c": tensor.From([]int{1}, []float32{c})},
		}.Bytes()
	}
	dir := writeRepo(t, map[string]map[int][]byte{"m": {1: two(100)}, "other": {1: two(0)}}, nil)
	url := adminServer(t, openRepo(t, dir), adminToken)

	const clients = 4
	var done atomic.Int64
	var failures atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := 0.0
			for i := 0; i < 100000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := http.Post(url+"/v2/models/m/infer", "application/json", strings.NewReader(`{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[0]}]}`))
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				var out struct{ Outputs []struct{ Data []float64 } }
				err = json.NewDecoder(resp.Body).Decode(&out)
				resp.Body.Close()
				if resp.StatusCode != 200 || err != nil || len(out.Outputs) != 1 {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("status %d: %v", resp.StatusCode, err))
					continue
				}
				v := out.Outputs[0].Data[0]
				if v < last {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("version went back from %v to %v", last, v))
				}
				last = v
				done.Add(1)
			}
		}()
	}
	// wait (without sleeping) until the clients have made n more requests
	progress := func(n int64) {
		target := done.Load() + n
		for done.Load() < target && failures.Load() == 0 {
			runtime.Gosched()
		}
	}
	load := func(name string) {
		if r := doAuth(t, "POST", url+"/v2/repository/models/"+name+"/load", adminToken); r.status != 200 {
			t.Errorf("load %s: %d %s", name, r.status, r.body)
		}
	}
	progress(50)
	for v, c := range []float32{200, 300} {
		os.MkdirAll(filepath.Join(dir, "m", fmt.Sprint(v+2)), 0o755)
		os.WriteFile(filepath.Join(dir, "m", fmt.Sprint(v+2), "model.onnx"), two(c), 0o644)
		load("m")
		progress(50)
		if r := doAuth(t, "POST", url+"/v2/repository/models/other/unload", adminToken); r.status != 200 {
			t.Errorf("unload other: %d", r.status)
		}
		progress(20)
		load("other")
		progress(20)
	}
	close(stop)
	wg.Wait()
	if failures.Load() != 0 {
		t.Fatalf("%d of %d requests failed during hot swaps; first: %v", failures.Load(), done.Load()+failures.Load(), firstErr.Load())
	}
	if r := do(t, "POST", url+"/v2/models/m/infer", `{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[0]}]}`); !strings.Contains(string(r.body), `"model_version":"3"`) || !strings.Contains(string(r.body), `"data":[300]`) {
		t.Errorf("final version: %s", r.body)
	}
	t.Logf("%d requests, 0 failed, across 2 version swaps and 2 unload/load cycles of another model", done.Load())
}

// TestUnloadWaitsForRequestsInFlight holds a request open and checks that
// Unload does not finish until it is released, while new requests are
// already refused.
func TestUnloadWaitsForRequestsInFlight(t *testing.T) {
	dir := writeRepo(t, map[string]map[int][]byte{"m": {1: onnxbuild.Identity(tensor.Float32, []int{-1})}}, nil)
	repo := openRepo(t, dir)
	_, _, release, err := repo.Get("m", "")
	if err != nil {
		t.Fatal(err)
	}
	unloaded := make(chan error)
	go func() { unloaded <- repo.Unload(context.Background(), "m") }()
	for {
		if st, _ := stateOf(repo.Index(), "m", ""); st == "UNLOADING" {
			break
		}
		runtime.Gosched()
	}
	select {
	case err := <-unloaded:
		t.Fatalf("Unload returned (%v) with a request in flight", err)
	default:
	}
	if _, _, _, err := repo.Get("m", ""); err == nil {
		t.Error("a new request was accepted during unload")
	}
	release()
	if err := <-unloaded; err != nil {
		t.Fatal(err)
	}
	if st, why := stateOf(repo.Index(), "m", ""); st != "UNAVAILABLE" || why != "unloaded" {
		t.Errorf("after unload: %q %q", st, why)
	}
	if err := repo.Load(context.Background(), "m"); err != nil {
		t.Fatal(err)
	}
	if st, _ := stateOf(repo.Index(), "m", "1"); st != "READY" {
		t.Errorf("after reload: %q", st)
	}
}
