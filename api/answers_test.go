package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/oip"
	"github.com/quantserve/quantserve/repository"
	"github.com/quantserve/quantserve/tensor"
)

// answerOf returns an answer of rows rows of MNIST scores, and the request
// it answers.
func answerOf(rows int) (*oip.InferRequest, *oip.InferResponse) {
	scores := make([]float32, rows*10)
	for i := range scores {
		scores[i] = float32(i%97)/7 - 3
	}
	return &oip.InferRequest{ID: "r"}, &oip.InferResponse{ModelName: "mnist", ModelVersion: "1", ID: "r",
		Outputs: []oip.OutputTensor{{Name: "scores", Tensor: tensor.From([]int{rows, 10}, scores)}}}
}

// encodeAnswer encodes an answer as the HTTP infer path does, gives its
// buffer back and returns its length.
func encodeAnswer(c *httpInfer, req *oip.InferRequest, resp *oip.InferResponse) int {
	*c = httpInfer{in: c.in}
	if err := c.encode(req, resp); err != nil {
		panic(err)
	}
	n := len(*c.answer)
	c.free()
	c.in.acct.release()
	return n
}

// TestAnswerBuffersAreReused: an answer is encoded into the capacity an
// earlier answer gave back to the pool, so encoding answers of a size the
// pool has seen allocates nothing (with the race detector, sync.Pool
// drops a random share of its buffers: then at most half as often as
// without the pool). A buffer grown past maxPooledAnswer is not kept.
func TestAnswerBuffersAreReused(t *testing.T) {
	req, resp := answerOf(64)
	s := newServer(Options{Logger: quietLog()})
	c := httpInfer{in: &workInput{acct: &account{s: s, ctx: context.Background()}}}
	c.encode(req, resp)
	want := append(oip.AppendInferResponse(nil, resp), '\n')
	if !bytes.Equal(*c.answer, want) {
		t.Fatalf("pooled encoding differs:\n got %s\nwant %s", *c.answer, want)
	}
	c.free()

	fresh := testing.AllocsPerRun(50, func() { oip.AppendInferResponse(nil, resp) })
	if fresh < 4 {
		t.Fatalf("encoding into no buffer allocates %v times: too few to tell reuse", fresh)
	}
	pooled := testing.AllocsPerRun(50, func() { encodeAnswer(&c, req, resp) })
	if limit := map[bool]float64{false: 0, true: fresh / 2}[raceEnabled]; pooled > limit {
		t.Errorf("encoding an answer with the pool allocates %v times per answer, want at most %v (%v without the pool)", pooled, limit, fresh)
	}

	bigReq, big := answerOf(maxPooledAnswer / 40)
	if n := encodeAnswer(&c, bigReq, big); n <= maxPooledAnswer {
		t.Fatalf("the large answer has %d bytes, not more than %d", n, maxPooledAnswer)
	}
	if a := testing.AllocsPerRun(2, func() { encodeAnswer(&c, bigReq, big) }); a < 1 {
		t.Errorf("an answer of more than %d bytes is encoded with %v allocations: its buffer was kept", maxPooledAnswer, a)
	}
	p := getAnswer()
	*p = make([]byte, 0, maxPooledAnswer+1)
	putAnswer(p)
	for i := 0; i < 8; i++ {
		if q := getAnswer(); cap(*q) > maxPooledAnswer {
			t.Fatalf("the pool gave out a buffer of %d bytes", cap(*q))
		}
	}
}

// BenchmarkAnswer encodes an MNIST answer of 1 and 64 rows as the HTTP
// infer path does, with a pooled buffer, and into a new buffer each time.
func BenchmarkAnswer(b *testing.B) {
	for _, rows := range []int{1, 64} {
		req, resp := answerOf(rows)
		var c httpInfer
		size := int64(encodeAnswer(&c, req, resp))
		b.Run(fmt.Sprintf("pooled/rows=%d", rows), func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				encodeAnswer(&c, req, resp)
			}
		})
		b.Run(fmt.Sprintf("new/rows=%d", rows), func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				oip.AppendInferResponse(nil, resp)
			}
		})
	}
}

// TestAnswersKeepTheirBytes sends requests whose answers differ in size
// (one past maxPooledAnswer) and form (JSON, binary tensor data) from
// several clients at once to one server reusing its answer buffers: each
// answer is its own request's, byte for byte, of its Content-Length.
func TestAnswersKeepTheirBytes(t *testing.T) {
	url := testServer(t, repository.New(serverOptions(), repository.Source{Name: "id", Version: 1, ONNX: onnxbuild.Identity(tensor.Float32, []int{-1})}), 0) + "/v2/models/id/infer"
	sizes := []int{3, 5000, 1, 150000, 200}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2*len(sizes); i++ {
				n, binary := sizes[(g+i)%len(sizes)], (g+i)%2 == 0
				if err := checkIdentity(url, n, binary, float32(100*g+i)); err != nil {
					t.Errorf("client %d, request %d (%d elements, binary %v): %v", g, i, n, binary, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// checkIdentity sends n FP32 elements from base to an Identity model and
// checks that they come back, as JSON or as binary tensor data.
func checkIdentity(url string, n int, binary bool, base float32) error {
	x := make([]float32, n)
	for i := range x {
		x[i] = base + float32(i)/3
	}
	body := mustJSON(map[string]any{"parameters": map[string]bool{"binary_data_output": binary},
		"inputs": []any{map[string]any{"name": "x", "datatype": "FP32", "shape": []int{n}, "data": x}}})
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: %.200s", resp.Status, b)
	}
	if cl := resp.Header.Get("Content-Length"); cl != strconv.Itoa(len(b)) {
		return fmt.Errorf("Content-Length %s for %d bytes", cl, len(b))
	}
	var ans struct {
		Outputs []struct {
			Name       string
			Data       []float32
			Parameters map[string]int
		}
	}
	if !binary {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" || b[len(b)-1] != '\n' {
			return fmt.Errorf("Content-Type %q, answer ending %q", ct, b[len(b)-1:])
		}
		if err := json.Unmarshal(b, &ans); err != nil || len(ans.Outputs) != 1 {
			return fmt.Errorf("answer %.200s: %v", b, err)
		}
		if got := ans.Outputs[0].Data; len(got) != n || !bytes.Equal(f32bytes(got...), f32bytes(x...)) {
			return fmt.Errorf("%d elements came back, not the %d sent", len(got), n)
		}
		return nil
	}
	hl, err := strconv.Atoi(resp.Header.Get(binaryHeader))
	if err != nil || hl > len(b) || resp.Header.Get("Content-Type") != "application/octet-stream" {
		return fmt.Errorf("binary answer with %s %q, Content-Type %q, %d bytes", binaryHeader, resp.Header.Get(binaryHeader), resp.Header.Get("Content-Type"), len(b))
	}
	if err := json.Unmarshal(b[:hl], &ans); err != nil || len(ans.Outputs) != 1 || ans.Outputs[0].Parameters["binary_data_size"] != 4*n {
		return fmt.Errorf("binary answer's header %.200s: %v", b[:hl], err)
	}
	if !bytes.Equal(b[hl:], f32bytes(x...)) {
		return fmt.Errorf("%d bytes of tensor data came back, not the %d sent", len(b)-hl, 4*n)
	}
	return nil
}
