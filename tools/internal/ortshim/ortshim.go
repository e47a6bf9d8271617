// Package ortshim starts ../shared/peers/ort's Open Inference Protocol
// shim over ONNX Runtime, for the tools that write ONNX Runtime reference
// outputs.
package ortshim

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Start starts the shim in ortDir (onnxruntime-node installed there) on a
// free port of 127.0.0.1, serving the models under repo
// (<repo>/<model>/1/model.onnx); it returns its base URL and a function
// that stops it. It exits the tool when the shim does not start.
func Start(ortDir, repo string) (string, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	shim := exec.CommandContext(ctx, "node", filepath.Join(ortDir, "oipshim.js"), fmt.Sprint(port), repo)
	shim.Dir, shim.Stderr = ortDir, os.Stderr
	if err := shim.Start(); err != nil {
		log.Fatal(err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for i := 0; ; i++ {
		if r, err := http.Get(base + "/v2/health/live"); err == nil {
			r.Body.Close()
			break
		}
		if i > 100 {
			cancel()
			log.Fatal("the ONNX Runtime shim did not start")
		}
		time.Sleep(100 * time.Millisecond)
	}
	return base, func() { cancel(); shim.Wait() }
}
