package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ModelLayers counts the layers with a constant weight (MatMul, Gemm,
// Conv, ...) of one loaded model version, and how many of them run on the
// int8 kernels: the int8_layers of its metadata and load log.
type ModelLayers struct {
	Model, Version string
	Layers, Int8   int
}

// ObserveLayers exports what f returns at each scrape:
//
//	quantserve_model_layers{model,version,kernels="int8"}      layers on the int8 kernels
//	quantserve_model_layers{model,version,kernels="float32"}   the others
//
// Only the first call on a Telemetry registers.
func (t *Telemetry) ObserveLayers(f func() []ModelLayers) error {
	if t == nil {
		return nil
	}
	var err error
	t.layersOnce.Do(func() { err = t.observeLayers(f) })
	return err
}

func (t *Telemetry) observeLayers(f func() []ModelLayers) error {
	g, err := t.meter.Int64ObservableGauge("quantserve.model.layers",
		metric.WithDescription("Layers with a constant weight (MatMul, Gemm, Conv, ...) of each loaded model version, by the kernels they run on (int8 or float32)"))
	if err != nil {
		return err
	}
	_, err = t.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, m := range f() {
			for _, k := range []struct {
				name string
				n    int
			}{{"int8", m.Int8}, {"float32", m.Layers - m.Int8}} {
				o.ObserveInt64(g, int64(k.n), metric.WithAttributes(attribute.String("model", m.Model),
					attribute.String("version", m.Version), attribute.String("kernels", k.name)))
			}
		}
		return nil
	}, g)
	return err
}
