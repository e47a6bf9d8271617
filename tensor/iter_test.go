package tensor

import (
	"errors"
	"slices"
	"testing"
)

func TestIterBroadcast(t *testing.T) {
	out := []int{2, 3, 4}
	a := []int{3, 1} // broadcast over dims 0 and 2
	sa := BroadcastStrides(a, out)
	so := Strides(out)
	it := NewIter(out, so, sa)
	var got [][3]int
	for it.Next() {
		idx := it.Index()
		got = append(got, [3]int{it.Off(0), it.Off(1), idx[0]*100 + idx[1]*10 + idx[2]})
	}
	if len(got) != 24 {
		t.Fatalf("%d positions, want 24", len(got))
	}
	for i, g := range got {
		i0, i1, i2 := i/12, i/4%3, i%4
		if g[0] != i || g[1] != i1 || g[2] != i0*100+i1*10+i2 {
			t.Fatalf("position %d: offsets %d,%d index %d", i, g[0], g[1], g[2])
		}
	}
}

func TestIterReverseAndEmpty(t *testing.T) {
	// Walk a 3x2 tensor with rows reversed: base offset 4, stride -2.
	it := NewIter([]int{3, 2}, []int{-2, 1}).Start(0, 4)
	var offs []int
	for it.Next() {
		offs = append(offs, it.Off(0))
	}
	if !slices.Equal(offs, []int{4, 5, 2, 3, 0, 1}) {
		t.Errorf("reversed walk: %v", offs)
	}
	if NewIter([]int{3, 0, 2}, []int{0, 0, 0}).Next() {
		t.Error("an empty shape has a position")
	}
	scalar := NewIter(nil, []int{})
	if !scalar.Next() || scalar.Next() {
		t.Error("a scalar shape has exactly one position")
	}
}

func TestRows(t *testing.T) {
	shape := []int{2, 2, 3}
	st := Strides(shape)
	tr := []int{1, 6, 2} // a transposed view of a 3x2x2... any strides will do
	var starts [][2]int
	Rows(shape, [][]int{st, tr}, func(offs []int) { starts = append(starts, [2]int{offs[0], offs[1]}) })
	want := [][2]int{{0, 0}, {3, 6}, {6, 1}, {9, 7}}
	if !slices.Equal(starts, want) {
		t.Errorf("row starts %v, want %v", starts, want)
	}
	calls := 0
	Rows(nil, [][]int{{}}, func([]int) { calls++ })
	Rows([]int{4, 0}, [][]int{{0, 1}}, func([]int) { calls += 10 })
	if calls != 1 {
		t.Errorf("scalar and empty shapes made %d calls, want 1", calls)
	}
}

// TestRowsUntil: the walk stops at the first error f returns and returns
// it; without one it visits every row.
func TestRowsUntil(t *testing.T) {
	shape := []int{3, 4, 2}
	st := Strides(shape)
	stop := errors.New("stop")
	calls := 0
	err := RowsUntil(shape, [][]int{st}, func(offs []int) error {
		calls++
		if offs[0] == 2*2 { // the third row
			return stop
		}
		return nil
	})
	if err != stop || calls != 3 {
		t.Errorf("RowsUntil = %v after %d calls, want the error after 3", err, calls)
	}
	calls = 0
	if err := RowsUntil(shape, [][]int{st}, func([]int) error { calls++; return nil }); err != nil || calls != 12 {
		t.Errorf("RowsUntil = %v after %d calls, want nil after 12", err, calls)
	}
}
