package quantize

import (
	"context"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// BenchmarkEncoder runs the default encoder at batch 1 on one thread:
// quantserve's own int8 of the float model, and the file quantize_dynamic
// writes, fused (as it loads) and as written.
func BenchmarkEncoder(b *testing.B) {
	cfg := onnxbuild.DefaultEncoder
	float := onnxbuild.Encoder(cfg).Bytes()
	exported, _, err := Dynamic(float)
	if err != nil {
		b.Fatal(err)
	}
	e := gemm.New(gemm.Default().Table(), 1)
	defer e.Close()
	in := map[string]*tensor.Tensor{"input_ids": onnxbuild.EncoderInput(cfg, 1, 1)}
	for _, c := range []struct {
		name string
		data []byte
		opts model.Options
	}{
		{"own-int8", float, model.Options{Exec: e, Quantize: true, Scheme: quant.PerChannel}},
		{"exported-fused", exported, model.Options{Exec: e}},
		{"exported-unfused", exported, model.Options{Exec: e, Unrewritten: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			m, err := model.LoadWith(c.data, c.opts)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Run(context.Background(), in, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
