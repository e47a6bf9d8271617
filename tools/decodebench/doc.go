// Package decodebench measures oip.DecodeInferRequest, the server's JSON
// decoder for infer bodies, against the generic libraries it was chosen
// over (encoding/json, goccy/go-json, bytedance/sonic, minio/simdjson-go)
// on Open Inference Protocol FP32 bodies, and checks that they agree on
// the values:
//
//	go test -C tools ./decodebench -run '^$' -bench DecodeCandidates -benchtime 2s
//
// It lives in the tools module so that the libraries it compares stay out
// of the server's go.mod. The package has only tests.
package decodebench
