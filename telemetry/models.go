package telemetry

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ModelState is the state of one model version as the repository index
// shows it (Version "" while a model has no version to name: being loaded
// or unloaded, or failed before any version was read).
type ModelState struct {
	Model, Version string
	State          string // READY, LOADING, UNLOADING or UNAVAILABLE (any case)
}

// ModelStates are the values of quantserve_model_state's state label.
var ModelStates = []string{"loading", "ready", "unavailable", "unloading"}

// ObserveModels exports what f returns at each scrape:
//
//	quantserve_model_state{model,version,state}   1 for the version's state, 0 for the others
//
// and starts the inference counters of each ready version at zero
// (quantserve_inferences_total, outcome ok and error), so that they show
// before its first request. Only the first call on a Telemetry registers.
func (t *Telemetry) ObserveModels(f func() []ModelState) error {
	if t == nil {
		return nil
	}
	var err error
	t.modelsOnce.Do(func() { err = t.observeModels(f) })
	return err
}

func (t *Telemetry) observeModels(f func() []ModelState) error {
	state, err := t.meter.Int64ObservableGauge("quantserve.model.state",
		metric.WithDescription("1 for the state each model version is in (loading, ready, unavailable, unloading), 0 for the others; a model that failed to load is unavailable"))
	if err != nil {
		return err
	}
	_, err = t.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		for _, m := range f() {
			current := strings.ToLower(m.State)
			for _, s := range ModelStates {
				v := int64(0)
				if s == current {
					v = 1
				}
				o.ObserveInt64(state, v, metric.WithAttributes(attribute.String("model", m.Model),
					attribute.String("version", m.Version), attribute.String("state", s)))
			}
			if current == "ready" && m.Version != "" {
				t.startInferences(ctx, m.Model, m.Version)
			}
		}
		return nil
	}, state)
	return err
}

// startInferences adds zero to a version's inference counters.
func (t *Telemetry) startInferences(ctx context.Context, model, version string) {
	for _, ok := range []bool{true, false} {
		t.inferences.Add(ctx, 0, t.inferenceAttrs(model, version, ok)...)
	}
}
