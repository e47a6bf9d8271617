package model_test

import (
	"context"
	"errors"
	"maps"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// The limits a hostile run is held to: the budget its values are charged
// to, the deadline it runs under, and what the process may allocate
// beyond what the budget granted (scratch, views, the run's bookkeeping).
const (
	hostileBudget   = 64 << 20
	hostileDeadline = 3 * time.Second
	hostileSlack    = 256 << 20
)

// grantBudget is a capBudget that also counts every byte it granted.
type grantBudget struct {
	capBudget
	granted int64
}

func (b *grantBudget) Grow(n int64) error {
	if err := b.capBudget.Grow(n); err != nil {
		return err
	}
	b.mu.Lock()
	b.granted += n
	b.mu.Unlock()
	return nil
}

// hostileModels are the value-driven models of onnxbuild.ShapeBombs,
// loaded once; hostileNames orders them so that a fuzzed byte picks one.
var (
	hostileOnce   sync.Once
	hostileModels map[string]*model.Model
	hostileBombs  map[string]onnxbuild.ShapeBomb
	hostileNames  []string
	hostileErr    error
)

func loadHostile() error {
	hostileOnce.Do(func() {
		hostileBombs = onnxbuild.ShapeBombs()
		hostileNames = slices.Sorted(maps.Keys(hostileBombs))
		hostileModels = map[string]*model.Model{}
		for _, name := range hostileNames {
			m, err := model.Load(hostileBombs[name].Graph.Bytes())
			if err != nil {
				hostileErr = errors.Join(hostileErr, err)
				continue
			}
			hostileModels[name] = m
		}
	})
	return hostileErr
}

// hostileSeeds are, for every model, a request asking for more than
// 1 GiB, and a few of the values a hostile client tries first: zeros,
// negatives, 2^31-ish and 2^62.
var hostileSeeds = []struct {
	op      string
	a, b, c int64
	s       float32
}{
	{"ConstantOfShape", 1 << 15, 1 << 15, 1, 1},    // 4 GiB
	{"ConstantOfShape", 46340, 46340, 1, 1},        // the attention mask's 8 GiB
	{"ConstantOfShape", 1 << 62, 4, 1, 1},          // overflows
	{"ConstantOfShape", -1, 1 << 31, 0, 1},         // negative
	{"ConstantOfShape", 64, 64, 64, 1},             // 1 MiB: fits
	{"Expand", 1 << 15, 1 << 15, 1, 2},             // 16 GiB
	{"Expand", 1<<31 - 1, 1, 1, 2},                 // 8 GiB
	{"Expand", 0, 1 << 62, 1 << 62, 2},             // empty, but overflowing
	{"Tile", 1 << 14, 1 << 14, 0, 3},               // 4 GiB
	{"Tile", -3, 2, 0, 3},                          // negative
	{"Range", 0, 1 << 30, 1, 0},                    // 8 GiB
	{"Range", -1 << 62, 1 << 62, 1, 0},             // overflows
	{"Range", 0, 10, 0, 0},                         // a zero step
	{"Pad/constant", 1 << 14, 1 << 14, 1 << 14, 1}, // 16 GiB
	{"Pad/constant", -1 << 62, 1 << 62, 2, 1},      // overflows
	{"Pad/edge", 1 << 14, 1 << 14, 1 << 14, 1},     // 16 GiB
	{"Pad/edge", 1, -2, 3, 1},                      // crops one axis
	{"Pad/edge", 1<<31 - 10, -1, 0, 1},             // 8 GiB along one axis: its map is asked for first
	{"Pad/reflect", 1 << 14, 1 << 14, 1 << 14, 1},  // 16 GiB
	{"Pad/reflect", 1, 2, 1, 1},                    // fits
	{"Resize/sizes", 1 << 15, 1 << 15, 0, 0},       // 4 GiB
	{"Resize/sizes", -1, 1 << 62, 0, 0},            // negative, overflowing
	{"Resize/sizes", 1<<31 - 1, 1, 0, 0},           // 8 GiB along one axis: its tables are asked for first
	{"Resize/scales", 1 << 14, 0, 0, 1 << 14},      // 4 GiB
	{"Resize/scales", 1 << 62, 0, 0, -2},           // huge and negative scales
	{"Resize/scales", 1, 0, 0, 1 << 29},            // 8 GiB along one axis
	{"Upsample", 1 << 14, 0, 0, 1 << 14},           // 4 GiB
	{"Upsample", 2, 0, 0, 3},                       // fits
	{"OneHot", 1 << 30, 0, 5, 1},                   // 8 GiB
	{"OneHot", -5, 0, 1 << 62, 1},                  // a negative depth
	{"Gather", 1 << 15, 1, 0, 0},                   // 2 GiB
	{"Gather", 1 << 15, 1 << 62, 0, 0},             // out-of-range indices
	{"Gather", 4, -1, 0, 0},                        // fits
	{"MatMul", 1 << 15, 1, 1 << 15, 1},             // 16 GiB
	{"MatMul", 1 << 31, 1 << 31, 1 << 31, 1},       // operands past 2^31 elements
	{"MatMul", 8, 4, 8, 1},                         // fits
	{"Add", 46340, 46340, 0, 1},                    // 8 GiB
	{"Add", 1 << 16, 1 << 16, 0, 1},                // 16 GiB
	{"Where", 46340, 46340, 0, 1},                  // 8 GiB
	{"Where", 0, 1 << 16, 0, 1},                    // empty
	{"CenterCropPad", 1 << 15, 1 << 15, 0, 1},      // 16 GiB
	{"CenterCropPad", 1 << 62, -1, 0, 1},           // past the limit, negative
	{"CenterCropPad", 1<<31 - 1, 1, 0, -14},        // 8 GiB along one axis: its map is asked for first
	{"Col2Im", 1 << 15, 1 << 15, 0, 1},             // 4 GiB
	{"Col2Im", 1 << 62, 1 << 62, 0, 1},             // overflows
	{"AffineGrid", 1 << 14, 1 << 15, 0, 1},         // 4 GiB
	{"AffineGrid", -1, 1 << 31, 0, 1},              // negative
	{"StringSplit", 1 << 15, 1 << 15, 0, 0},        // 16 GiB of string headers
	{"StringSplit", 1 << 16, 1 << 16, 0, 0},        // past 2^31 substrings
	{"StringSplit", 3, 4, 0, 0},                    // fits
	{"Loop", 1 << 20, 1 << 12, 0, 1},               // 16 GiB of scan output
	{"Loop", 1 << 62, 1, 0, 1},                     // 2^62 trips: the deadline or the budget
	{"Loop", -7, 3, 0, 1},                          // no trips
	{"DFT", 1 << 24, 16, 0, 1},                     // 2 GiB
	{"DFT", 1<<20 - 1, 0, 0, 1},                    // a long odd length: Bluestein
	{"DFT", 1 << 62, 0, 0, 1},                      // overflows
	{"DFT", -4, 0, 0, 1},                           // negative
}

// FuzzHostileShapes runs models whose outputs' sizes follow from request
// values (onnxbuild.ShapeBombs) with fuzzed values under a 64 MiB budget
// and a deadline. Each run must end cleanly (an answer, an input error,
// a refusal by the budget, or the deadline), never hold more than the
// budget granted nor leave any of it held, and never make the process
// allocate far beyond what the budget granted: an operator that
// allocates before it asks shows up here.
func FuzzHostileShapes(f *testing.F) {
	if err := loadHostile(); err != nil {
		f.Fatal(err)
	}
	for _, s := range hostileSeeds {
		i := slices.Index(hostileNames, s.op)
		if i < 0 {
			f.Fatalf("seed for %s: no such model", s.op)
		}
		f.Add(uint8(i), s.a, s.b, s.c, s.s)
	}
	f.Fuzz(func(t *testing.T, op uint8, a, b, c int64, s float32) {
		name := hostileNames[int(op)%len(hostileNames)]
		runHostile(t, name, hostileModels[name], hostileBombs[name].Inputs(a, b, c, s))
	})
}

// TestHostileSeedsAskForGigabytes: each model's first seed asks for more
// than 1 GiB, and the budget refuses it.
func TestHostileSeedsAskForGigabytes(t *testing.T) {
	if err := loadHostile(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range hostileSeeds {
		if seen[s.op] {
			continue
		}
		seen[s.op] = true
		b := &grantBudget{capBudget: capBudget{limit: hostileBudget}}
		_, err := hostileModels[s.op].Run(model.WithBudget(context.Background(), b), hostileBombs[s.op].Inputs(s.a, s.b, s.c, s.s), nil)
		want := int64(1 << 30)
		if s.op == "Loop" {
			want = 0 // a Loop asks trip by trip
		}
		var me *model.MemoryError
		if !errors.As(err, &me) || me.Bytes <= want {
			t.Errorf("%s %v: err = %v, want a refusal of more than 1 GiB", s.op, s, err)
		}
	}
	if len(seen) != len(hostileNames) {
		t.Errorf("seeds for %d of %d models", len(seen), len(hostileNames))
	}
}

// runHostile runs m on in under a fresh budget and deadline and checks
// how the run ended.
func runHostile(t *testing.T, name string, m *model.Model, in map[string]*tensor.Tensor) {
	t.Helper()
	b := &grantBudget{capBudget: capBudget{limit: hostileBudget}}
	ctx, cancel := context.WithTimeout(model.WithBudget(context.Background(), b), hostileDeadline)
	defer cancel()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, err := m.Run(ctx, in, nil)
	runtime.ReadMemStats(&after)
	var me *model.MemoryError
	switch {
	case err == nil, errors.Is(err, model.ErrInput), errors.Is(err, model.ErrUnsupported), errors.As(err, &me):
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
	default:
		t.Fatalf("%s: err = %v (%T), want nil, an input error, a refusal or the deadline", name, err, err)
	}
	if me != nil && !errors.Is(err, errOverBudget) {
		t.Errorf("%s: a MemoryError not from the budget: %v", name, err)
	}
	if b.used != 0 || b.peak > b.limit {
		t.Errorf("%s: the budget holds %d after the run and peaked at %d of %d", name, b.used, b.peak, b.limit)
	}
	var size int64
	for _, y := range out {
		size += ops.SizeOf(y)
	}
	if size > b.limit {
		t.Errorf("%s: outputs of %d bytes under a budget of %d", name, size, b.limit)
	}
	if alloc := int64(after.TotalAlloc - before.TotalAlloc); alloc > b.granted+hostileSlack {
		t.Errorf("%s: the run allocated %d MiB, the budget granted %d MiB", name, alloc>>20, b.granted>>20)
	}
}
