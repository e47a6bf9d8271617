package api

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// mlpRow returns an infer body of one row of n values.
func mlpRow(rng *rand.Rand, n int) string {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return inferBody("x", "FP32", []int{1, n}, x)
}

// TestBatchingOverHTTP sends eight concurrent requests to a model whose
// config.yaml batches eight rows (with an hour of queue delay, so the
// batch goes when all eight are in): each answer equals, bit for bit, the
// answer of the same model without batching, and /metrics counts one
// execution of eight rows.
func TestBatchingOverHTTP(t *testing.T) {
	onnx := onnxbuild.MLP([]int{256, 128, 16}, 5).Bytes()
	dir := writeRepo(t, map[string]map[int][]byte{"batched": {1: onnx}, "plain": {1: onnx}},
		map[string]string{"batched": "max_batch_size: 8\ndynamic_batching:\n  max_queue_delay_microseconds: 3600000000\n"})
	url := testServer(t, openRepo(t, dir), 0)
	rng := rand.New(rand.NewPCG(1, 1))
	bodies := make([]string, 8)
	for i := range bodies {
		bodies[i] = mlpRow(rng, 256)
	}
	got := make([]response, len(bodies))
	var wg sync.WaitGroup
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(url+"/v2/models/batched/infer", "application/json", strings.NewReader(bodies[i]))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var m map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
				t.Error(err)
			}
			raw, _ := json.Marshal(m["outputs"])
			got[i] = response{status: resp.StatusCode, body: raw}
		}()
	}
	wg.Wait()
	for i, body := range bodies {
		want := do(t, "POST", url+"/v2/models/plain/infer", body)
		if got[i].status != 200 || want.status != 200 {
			t.Fatalf("request %d: status %d, without batching %d: %s", i, got[i].status, want.status, want.body)
		}
		wantOut, _ := json.Marshal(want.json(t)["outputs"])
		if string(got[i].body) != string(wantOut) {
			t.Errorf("request %d: batched answer\n%s\ndiffers from\n%s", i, got[i].body, wantOut)
		}
	}
	m := scrape(t, url)
	if m["quantserve_batch_executions_total"] != 1 || m["quantserve_batch_requests_total"] != 8 || m["quantserve_batch_waiting"] != 0 {
		t.Errorf("metrics: executions %v, requests %v, waiting %v; want one execution of 8 requests",
			m["quantserve_batch_executions_total"], m["quantserve_batch_requests_total"], m["quantserve_batch_waiting"])
	}
	if m["quantserve_batch_queue_seconds_total"] <= 0 || m["quantserve_batch_compute_seconds_total"] <= 0 {
		t.Errorf("metrics: queue %v s, compute %v s", m["quantserve_batch_queue_seconds_total"], m["quantserve_batch_compute_seconds_total"])
	}
	// The statistics extension counts the batch as one execution of 8 rows.
	var st statsAnswer
	if err := json.Unmarshal(do(t, "GET", url+"/v2/models/batched/stats", "").body, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.ModelStats) != 1 {
		t.Fatalf("stats %+v", st)
	}
	ms := st.ModelStats[0]
	if ms.InferenceCount != 8 || ms.ExecutionCount != 1 || len(ms.BatchStats) != 1 || ms.BatchStats[0].BatchSize != 8 || ms.BatchStats[0].ComputeInfer.Count != 1 {
		t.Errorf("stats %+v", ms)
	}
	// A request of more rows than max_batch_size runs alone, with the
	// answer the model gives without batching.
	x := make([]float32, 9*256)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	big := inferBody("x", "FP32", []int{9, 256}, x)
	got9, want9 := do(t, "POST", url+"/v2/models/batched/infer", big), do(t, "POST", url+"/v2/models/plain/infer", big)
	g9, _ := json.Marshal(got9.json(t)["outputs"])
	w9, _ := json.Marshal(want9.json(t)["outputs"])
	if got9.status != 200 || string(g9) != string(w9) {
		t.Errorf("9 rows: status %d, %s\nwithout batching %s", got9.status, g9, w9)
	}
}

// TestBatchQueueFullAndDeadline: with max_queue_size 2, two requests wait
// (the queue delay is an hour), a third gets 503 with Retry-After, and the
// two waiting leave the queue at their deadline with 504; a request of
// a preferred size then goes at once.
func TestBatchQueueFullAndDeadline(t *testing.T) {
	onnx := onnxbuild.MLP([]int{64, 8}, 5).Bytes()
	dir := writeRepo(t, map[string]map[int][]byte{"m": {1: onnx}},
		map[string]string{"m": "max_batch_size: 64\ndynamic_batching: {max_queue_delay_microseconds: 3600000000, max_queue_size: 2, preferred_batch_size: [3]}\n"})
	url := newTestHTTPServer(t, Options{Repository: openRepo(t, dir), Logger: quietLog(), RequestTimeout: time.Second})
	rng := rand.New(rand.NewPCG(2, 2))
	statuses := make(chan int, 2)
	for i := 0; i < 2; i++ {
		body := mlpRow(rng, 64)
		go func() {
			resp, err := http.Post(url+"/v2/models/m/infer", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				statuses <- 0
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	waitMetric(t, url, func(m metrics) bool { return m["quantserve_batch_waiting"] == 2 })
	r := do(t, "POST", url+"/v2/models/m/infer", mlpRow(rng, 64))
	wantError(t, r, http.StatusServiceUnavailable, "max_queue_size")
	if r.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	for i := 0; i < 2; i++ {
		if s := <-statuses; s != http.StatusGatewayTimeout {
			t.Errorf("queued request: status %d, want 504", s)
		}
	}
	m := scrape(t, url)
	if m["quantserve_batch_waiting"] != 0 || m["quantserve_batch_rejected_total"] != 1 || m["quantserve_batch_executions_total"] != 0 {
		t.Errorf("metrics: waiting %v, rejected %v, executions %v", m["quantserve_batch_waiting"], m["quantserve_batch_rejected_total"], m["quantserve_batch_executions_total"])
	}
	// A request of three rows (a preferred size) goes at once.
	x := make([]float32, 3*64)
	r = do(t, "POST", url+"/v2/models/m/infer", inferBody("x", "FP32", []int{3, 64}, x))
	if r.status != 200 {
		t.Errorf("status %d: %s", r.status, r.body)
	}
}

// TestBatchingConfigErrors: bad batching keys keep the model from loading,
// with the reason, and so does a model that mixes the rows of dimension 0.
func TestBatchingConfigErrors(t *testing.T) {
	mixing := onnxbuild.Graph{
		Opset:   13,
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1, 16)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, -1, 16)},
		Nodes: []onnxbuild.Node{
			{Op: "ReduceMean", Inputs: []string{"x"}, Outputs: []string{"m"}, Attrs: []*onnxpb.Attribute{{Name: "axes", Type: onnxpb.AttrInts, Ints: []int64{0}}}},
			{Op: "Sub", Inputs: []string{"x", "m"}, Outputs: []string{"y"}},
		},
	}.Bytes()
	mlp := onnxbuild.MLP([]int{16, 4}, 1).Bytes()
	cases := map[string]struct {
		onnx     []byte
		config   string
		fragment string
	}{
		"preferred":  {mlp, "max_batch_size: 4\ndynamic_batching: {preferred_batch_size: [8]}\n", "preferred_batch_size 8"},
		"nobatch":    {mlp, "dynamic_batching: {}\n", "needs max_batch_size"},
		"negative":   {mlp, "max_batch_size: 4\ndynamic_batching: {max_queue_size: -1}\n", "max_queue_size -1"},
		"misspelled": {mlp, "max_batch_size: 4\ndynamic_batching: {max_queue_delay: 5}\n", "max_queue_delay"},
		"mixing":     {mixing, "max_batch_size: 4\ndynamic_batching: {}\n", "mixes rows of dimension 0"},
	}
	models, configs := map[string]map[int][]byte{}, map[string]string{}
	for name, c := range cases {
		models[name], configs[name] = map[int][]byte{1: c.onnx}, c.config
	}
	url := testServer(t, openRepo(t, writeRepo(t, models, configs)), 0)
	for name, c := range cases {
		r := do(t, "POST", url+"/v2/models/"+name+"/infer", inferBody("x", "FP32", []int{1, 16}, make([]float32, 16)))
		wantError(t, r, http.StatusNotFound, c.fragment)
	}
	// The same model without max_batch_size loads and answers.
	r := do(t, "POST", testServer(t, openRepo(t, writeRepo(t, map[string]map[int][]byte{"mixing": {1: mixing}}, nil)), 0)+"/v2/models/mixing/infer",
		inferBody("x", "FP32", []int{1, 16}, make([]float32, 16)))
	if r.status != 200 {
		t.Errorf("without batching: %d %s", r.status, r.body)
	}
}

// TestBatchingManyClientsOverHTTP: 32 clients, each sending requests one
// after another, to a model batching with the default instances and no
// queue delay (batches then form while others execute and wait for their
// end): every answer equals, bit for bit, the same model's without
// batching, and /metrics counts every request once and no more executions
// than requests.
func TestBatchingManyClientsOverHTTP(t *testing.T) {
	onnx := onnxbuild.MLP([]int{256, 128, 16}, 6).Bytes()
	dir := writeRepo(t, map[string]map[int][]byte{"batched": {1: onnx}, "plain": {1: onnx}},
		map[string]string{"batched": "max_batch_size: 16\ndynamic_batching: {}\n"})
	url := testServer(t, openRepo(t, dir), 0)
	const clients, each = 32, 3
	rng := rand.New(rand.NewPCG(3, 3))
	bodies := make([]string, clients*each)
	for i := range bodies {
		bodies[i] = mlpRow(rng, 256)
	}
	got := make([]response, len(bodies))
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Go(func() {
			for i := c * each; i < (c+1)*each; i++ {
				resp, err := http.Post(url+"/v2/models/batched/infer", "application/json", strings.NewReader(bodies[i]))
				if err != nil {
					t.Error(err)
					return
				}
				var m map[string]any
				err = json.NewDecoder(resp.Body).Decode(&m)
				resp.Body.Close()
				if err != nil {
					t.Error(err)
					return
				}
				raw, _ := json.Marshal(m["outputs"])
				got[i] = response{status: resp.StatusCode, body: raw}
			}
		})
	}
	wg.Wait()
	for i, body := range bodies {
		want := do(t, "POST", url+"/v2/models/plain/infer", body)
		if got[i].status != 200 || want.status != 200 {
			t.Fatalf("request %d: status %d, without batching %d: %s", i, got[i].status, want.status, want.body)
		}
		wantOut, _ := json.Marshal(want.json(t)["outputs"])
		if string(got[i].body) != string(wantOut) {
			t.Fatalf("request %d: batched answer\n%s\ndiffers from\n%s", i, got[i].body, wantOut)
		}
	}
	m := scrape(t, url)
	if n := m["quantserve_batch_requests_total"]; n != clients*each {
		t.Errorf("metrics: %v requests, want %d", n, clients*each)
	}
	if e := m["quantserve_batch_executions_total"]; e < 1 || e > clients*each || m["quantserve_batch_waiting"] != 0 {
		t.Errorf("metrics: %v executions, %v waiting", e, m["quantserve_batch_waiting"])
	}
}
