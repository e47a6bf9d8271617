package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/quantserve/quantserve/oip"
)

// bareAnswer is what the decode-only handler answers: the size and shape of
// the embedded model's answer to one image.
var bareAnswer = []byte(`{"model_name":"mnist","model_version":"1","outputs":[{"name":"scores","datatype":"FP32","shape":[1,10],"data":[3.2512276e-10,2.9374874e-09,1.1980438e-07,4.074432e-05,5.3067672e-11,1.7184607e-09,6.479069e-12,0.9999582,4.27315e-08,8.519061e-07]}]}` + "\n")

var barePool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// bareHandler reads a body and decodes it as the server does (JSON, or
// the binary tensor extension), then answers bareAnswer: the ceiling of
// what the server can do with the same bodies over net/http, its own work
// (routing, limits, the model, encoding) left out.
func bareHandler(w http.ResponseWriter, r *http.Request) {
	buf := barePool.Get().(*bytes.Buffer)
	defer barePool.Put(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	body := buf.Bytes()
	var err error
	if h := r.Header.Get("Inference-Header-Content-Length"); h != "" {
		n, perr := strconv.Atoi(h)
		if perr != nil || n < 0 || n > len(body) {
			http.Error(w, "bad Inference-Header-Content-Length", http.StatusBadRequest)
			return
		}
		_, err = oip.DecodeBinaryInferRequest(body[:n], body[n:])
	} else {
		_, err = oip.DecodeInferRequest(body)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(bareAnswer)))
	w.Write(bareAnswer)
}

// serveBare serves bareHandler on addr until the process is killed,
// printing the address it listens on first.
func serveBare(addr string, stdout io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, ln.Addr().String())
	srv := &http.Server{Handler: http.HandlerFunc(bareHandler), ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}
