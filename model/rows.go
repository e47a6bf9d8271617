package model

import (
	"context"
	"errors"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Whether a batch runs row by row. A batch's layers each pass over the
// whole batch before the next begins, so their outputs are the batch's
// size: ResNet-50's first stage writes 3.2 MB an image, which at batch 1
// stays in a core's 4 MB L2 and at batch 8 (25 MB) goes out to memory
// and back between every two layers. On one thread its int8 runs took 11%
// longer an image at batch 8 than at batch 1. A model whose rows of
// dimension 0 are independent (an image classifier's) gives the same
// bits run on one row at a time, layer outputs of one image each; a model
// with big weights and small layers gains from batches instead (each
// product streams its weights once for every row).
//
// So a model learns, for each size of its inputs with a batch dimension,
// whether its batches run whole or row by row: the first time a size runs
// it runs both ways on the same input and compares every output bit for
// bit (a model that mixes rows, whose outputs' first dimension is not the
// batch, or that refuses a row alone never runs by rows again), then
// alternates the two ways two runs at a time, timing the second of each
// two when it runs alone on the engine, until each has splitWindow
// times, and takes the way whose median is lower. Every rowProbe-th run
// after takes the other way, timed, so a host that changes changes the
// choice; a probe faster than the chosen way's median is run again
// splitWindow-1 times at once (the first times of a size, taken while
// the model's buffers grow, can favour either way). A profiled run takes
// whole batches.
//
// On an engine of several threads the other way is not row after row,
// each row split across the cores (ResNet-50 at batch 8 on two cores
// took 90 ms a batch whole and 110 so, PaddleOCR 3.4 and 5.4), but by
// parts: the batch cut into one part of consecutive rows a core, the
// parts run at once, each whole on one core (gemm.Engine.Serial), with
// no hand-off between cores inside a layer. The encoder at batch 8 on
// two cores of a Zen 4 ran 402-422 sequences/s split and 500 as two
// one-core halves at once. Only a model of small weights tries parts
// (partsMaxWeights): each part streams all of them.
type rowTuner struct {
	// off is set once a run by rows gave other bits or shapes than the
	// batch: the model's rows are not independent.
	off   atomic.Bool
	mu    sync.Mutex
	sizes map[int]*rowStats // by the number of input elements
}

// rowStats is what a tuner knows of one input size.
type rowStats struct {
	checked bool // a run by rows gave the batch's bits
	runs    int
	last    int       // the way of the last run
	again   bool      // the last run was the first of its way: the next takes it too
	confirm int       // runs still to take the way not chosen: its probe beat the choice
	times   [2]window // by way: whole batches, rows
	chosen  int
}

// The ways a batch runs.
const (
	wayBatch = iota
	wayRows
)

// rowProbe: settled, every rowProbe-th run of a size takes the other way;
// rowExplore is how many runs of a size may alternate before the choice
// is taken on what was timed (runs seldom alone on the engine time
// little).
const (
	rowProbe   = 64
	rowExplore = 8 * splitWindow
)

func newRowTuner() *rowTuner {
	return &rowTuner{sizes: map[int]*rowStats{}}
}

// next returns the way the next run of size takes and whether to time
// it; check reports that the size has not been checked yet: the run takes
// both ways and compares them. A run that takes another way than the
// last is not timed, and the run after it takes the same way and is: the
// first finds the data where the other way left it.
func (t *rowTuner) next(size int) (way int, timed, check bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.sizes[size]
	if s == nil {
		if len(t.sizes) >= splitSizes {
			return wayBatch, false, false
		}
		s = &rowStats{}
		t.sizes[size] = s
	}
	if !s.checked {
		return wayBatch, false, true
	}
	if s.again {
		s.again = false
		return s.last, true, false
	}
	s.runs++
	switch {
	case s.confirm > 0:
		s.confirm--
		way, timed = 1-s.chosen, true
	case !s.explored():
		way, timed = wayBatch, true
		if s.times[wayRows].n < s.times[wayBatch].n {
			way = wayRows
		}
	case s.runs%rowProbe == 0:
		way, timed = 1-s.chosen, true
	default:
		way = s.chosen
	}
	if way != s.last {
		s.last, s.again = way, true
		return way, false, false
	}
	return way, timed, false
}

// record adds a timed run of way w of size.
func (t *rowTuner) record(size, w int, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.sizes[size]
	if c := &s.times[s.chosen]; s.explored() && w != s.chosen && s.confirm == 0 && c.n > 0 && d < c.median() {
		// A probe faster than the choice: its way's window is refilled
		// at once, so it holds times of now.
		s.confirm = splitWindow - 1
	}
	s.times[w].add(d)
	if b, r := &s.times[wayBatch], &s.times[wayRows]; b.n > 0 && r.n > 0 && s.explored() {
		s.chosen = wayBatch
		if r.median() < b.median() {
			s.chosen = wayRows
		}
	}
}

// explored reports whether the alternation of the two ways is over: each
// has splitWindow times, or the size has run rowExplore times.
func (s *rowStats) explored() bool {
	return s.times[wayBatch].full() && s.times[wayRows].full() || s.runs > rowExplore
}

// checked marks size checked: its runs by rows gave the batch's bits.
func (t *rowTuner) checked(size int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.sizes[size]
	s.checked, s.last = true, wayRows // the check's last run was by rows
}

// RowChoice is what a model learned of batches of one input size
// (Model.RowChoices).
type RowChoice struct {
	// Elements is the number of input elements of the runs.
	Elements int
	// Decided reports whether both ways have been timed enough to
	// choose (or tried as long as the tuner tries them).
	Decided bool
	// Rows reports whether batches of this size run row by row (an
	// engine of one thread) or by parts, one a core at once (Parts).
	Rows bool
	// Parts reports that the model's engine has several threads: the
	// other way than whole is by parts, not row by row.
	Parts bool
	// Batch and ByRows are the median times of the last timed runs of
	// each way (0: none yet).
	Batch, ByRows time.Duration
}

// RowChoices returns, for each batched input size the model has run,
// whether it runs its batches whole or by rows (row by row, or by parts
// on an engine of several threads), as timed so far; nil when its
// batches always run whole: with Options.WholeBatches, on several
// threads with weights beyond partsMaxWeights, or once its rows proved
// not independent.
func (m *Model) RowChoices() []RowChoice {
	t := m.rows
	if t == nil || t.off.Load() {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	parts := m.exec != nil && m.exec.Threads() > 1
	out := make([]RowChoice, 0, len(t.sizes))
	for size, s := range t.sizes {
		c := RowChoice{Elements: size, Rows: s.chosen == wayRows, Parts: parts, Decided: s.checked && s.explored()}
		if w := &s.times[wayBatch]; w.n > 0 {
			c.Batch = w.median()
		}
		if w := &s.times[wayRows]; w.n > 0 {
			c.ByRows = w.median()
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b RowChoice) int { return a.Elements - b.Elements })
	return out
}

// batchRows returns the rows of the batch args hold when the model's
// inputs and wanted outputs all have a batch dimension (a first dimension
// the model leaves open) and args agree on more than one row, or 0; 0 as
// well for inputs beyond partsMaxBytes on an engine of several threads.
func (m *Model) batchRows(args []*tensor.Tensor, want map[int]string) int {
	rows := 0
	for i, t := range args {
		sp := m.Inputs[i]
		if sp.Shape == nil || len(sp.Shape) == 0 || sp.Shape[0] >= 0 || len(t.Shape) == 0 || t.DType == tensor.String {
			return 0
		}
		if i == 0 {
			rows = t.Shape[0]
		} else if t.Shape[0] != rows {
			return 0
		}
	}
	for i, sp := range m.Outputs {
		if _, ok := want[m.outputSlot[i]]; ok && (sp.Shape == nil || len(sp.Shape) == 0 || sp.Shape[0] >= 0 || sp.DType == tensor.String) {
			return 0
		}
	}
	if rows < 2 {
		return 0
	}
	if m.exec != nil && m.exec.Threads() > 1 {
		n := int64(0)
		for _, t := range args {
			n += ops.SizeOf(t)
		}
		if n > partsMaxBytes {
			return 0
		}
	}
	return rows
}

// partsMaxWeights bounds the weights of a model whose batches may run
// by parts on an engine of several threads: each part streams all of
// them, where a split product streams each weight once. A model of more
// (ResNet-50's 25 MB of int8, a 32 MB wide model's) runs its batches
// whole and tries no other way: the wide model's batched JSON requests
// went from 2,984 to 2,511 a second while its batches of every size
// tried parts.
const partsMaxWeights = 16 << 20

// weightBytes is about how many bytes the model's layers' weights take:
// K×N values each, one byte for an int8 layer, four otherwise.
func weightBytes(layers []Layer) int {
	n := 0
	for _, l := range layers {
		size := 4
		if l.Int8() {
			size = 1
		}
		n += size * l.K * l.N
	}
	return n
}

// partsMaxBytes bounds the inputs of a batch that may run by parts: a
// bigger one runs whole. The first batch of a size runs both ways, and
// each part's run keeps buffers of its own sizes for the next run: for
// a big batch, a second copy of its values beside the first, outside the
// request's budget (16 MNIST batches of 60 MB bodies at once under a
// 256 MiB budget peaked at 700 MiB resident).
const partsMaxBytes = 16 << 20

// executeBatch runs a batch of rows rows (Model.batchRows): whole or by
// rows (executeByRows), as the tuner chooses for its size.
func (m *Model) executeBatch(ctx context.Context, args []*tensor.Tensor, want map[int]string, rows int) ([]*tensor.Tensor, error) {
	keep := func(s int) bool { _, ok := want[s]; return ok }
	size := inputElements(args)
	way, timed, check := m.rows.next(size)
	if check {
		vals, err := m.executeSplit(ctx, args, keep)
		if err != nil {
			return nil, err
		}
		byRows, _, err := m.executeByRows(ctx, args, want, rows)
		switch {
		case err == nil && sameOutputs(vals, byRows, want):
			m.rows.checked(size)
		case ctx.Err() == nil: // other bits or shapes, or a row the model refuses
			m.rows.off.Store(true)
		}
		return vals, nil
	}
	start := time.Now()
	var vals []*tensor.Tensor
	var alone bool
	var err error
	if way == wayRows {
		if vals, alone, err = m.executeByRows(ctx, args, want, rows); err != nil && ctx.Err() == nil {
			// A row of another size than the check's that the model
			// refuses, or whose outputs do not stack: the batch as it is.
			m.rows.off.Store(true)
			return m.executeSplit(ctx, args, keep)
		}
	} else {
		vals, alone, err = m.executeAlone(ctx, args, keep)
	}
	if d := time.Since(start); timed && alone && err == nil {
		m.rows.record(size, way, d)
	}
	return vals, err
}

// errRowShapes reports rows whose outputs do not stack into the batch's:
// a first dimension other than 1, or shapes that differ between rows.
var errRowShapes = errors.New("model: outputs of rows do not stack")

// executeByRows runs the batch args the tuner's other way: row by row on
// an engine of one thread (executeRows), by parts on several
// (executeParts).
func (m *Model) executeByRows(ctx context.Context, args []*tensor.Tensor, want map[int]string, rows int) ([]*tensor.Tensor, bool, error) {
	if m.exec.Threads() > 1 {
		return m.executeParts(ctx, args, want, rows)
	}
	return m.executeRows(ctx, args, want, rows)
}

// executeParts runs the batch args as one part of consecutive rows for
// each of the engine's threads (at most one a row), the parts at once,
// each whole on the engine's one-core engine, and returns the wanted
// outputs stacked (the slots of want; nil elsewhere), and whether the
// run was alone on the engine. A part that panics ends the run with a
// gemm.PanicError, as a split loop's chunk does.
func (m *Model) executeParts(ctx context.Context, args []*tensor.Tensor, want map[int]string, rows int) ([]*tensor.Tensor, bool, error) {
	keep := func(s int) bool { _, ok := want[s]; return ok }
	parts := min(m.exec.Threads(), rows)
	one := context.WithValue(ctx, engineKey{}, m.exec.Serial())
	vals := make([][]*tensor.Tensor, parts)
	errs := make([]error, parts)
	run := func(p int) {
		defer func() {
			if v := recover(); v != nil {
				errs[p] = &gemm.PanicError{Value: v, Stack: debug.Stack()}
			}
		}()
		r0, r1 := p*rows/parts, (p+1)*rows/parts
		part := make([]*tensor.Tensor, len(args))
		for i, t := range args {
			part[i] = t.SliceRows(r0, r1-r0)
		}
		vals[p], errs[p] = m.graph.execute(one, part, nil, keep)
	}
	end := m.exec.Begin()
	var wg sync.WaitGroup
	for p := 1; p < parts; p++ {
		wg.Go(func() { run(p) })
	}
	run(0)
	wg.Wait()
	alone := end()
	for _, err := range errs {
		if err != nil {
			return nil, false, err
		}
	}
	out := make([]*tensor.Tensor, len(vals[0]))
	for p := range parts {
		r0, r1 := p*rows/parts, (p+1)*rows/parts
		for s := range want {
			if err := stackRows(out, s, vals[p][s], r0, r1-r0, rows); err != nil {
				return nil, false, err
			}
		}
	}
	return out, alone, nil
}

// executeRows runs the batch args row by row and returns the wanted
// outputs stacked (the slots of want; nil elsewhere), and whether each
// row's run was alone on the engine.
func (m *Model) executeRows(ctx context.Context, args []*tensor.Tensor, want map[int]string, rows int) ([]*tensor.Tensor, bool, error) {
	keep := func(s int) bool { _, ok := want[s]; return ok }
	row := make([]*tensor.Tensor, len(args))
	var out []*tensor.Tensor
	alone := true
	for r := 0; r < rows; r++ {
		for i, t := range args {
			row[i] = t.SliceRows(r, 1)
		}
		vals, one, err := m.executeAlone(ctx, row, keep)
		if err != nil {
			return nil, false, err
		}
		alone = alone && one
		if out == nil {
			out = make([]*tensor.Tensor, len(vals))
		}
		for s := range want {
			if err := stackRows(out, s, vals[s], r, 1, rows); err != nil {
				return nil, false, err
			}
		}
	}
	return out, alone, nil
}

// stackRows copies v, the n rows from row r0 of a batch of rows rows,
// into out[s] at r0, making out[s] (v's type, rows rows of v's) when it
// is nil; errRowShapes when v is no such rows: nil, a scalar, strings,
// another first dimension, or another type or row shape than out[s].
func stackRows(out []*tensor.Tensor, s int, v *tensor.Tensor, r0, n, rows int) error {
	if v == nil || len(v.Shape) == 0 || v.Shape[0] != n || v.DType == tensor.String {
		return errRowShapes
	}
	if out[s] == nil {
		shape := slices.Clone(v.Shape)
		shape[0] = rows
		t, err := tensor.New(v.DType, shape)
		if err != nil {
			return errRowShapes
		}
		out[s] = t
	}
	o := out[s]
	if o.DType != v.DType || !slices.Equal(o.Shape[1:], v.Shape[1:]) {
		return errRowShapes
	}
	tensor.CopyData(o.SliceRows(r0, n).Data, v.Data)
	return nil
}

// sameOutputs reports whether the wanted outputs of a and b have the
// same types, shapes and bits (tensor.SameBits).
func sameOutputs(a, b []*tensor.Tensor, want map[int]string) bool {
	for s := range want {
		if a[s] == nil || b[s] == nil || !tensor.SameBits(a[s], b[s]) {
			return false
		}
	}
	return true
}
