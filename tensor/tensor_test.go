package tensor

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

func TestNumElements(t *testing.T) {
	cases := []struct {
		shape []int
		want  int
		err   bool
	}{
		{nil, 1, false},
		{[]int{0, math.MaxInt}, 0, false},
		{[]int{3, 4, 5}, 60, false},
		{[]int{-1, 4}, 0, true},
		{[]int{1 << 20, 1 << 20}, 0, true},
		{[]int{math.MaxInt, 2}, 0, true},
		{[]int{1 << 16, 1 << 15}, 1 << 31, false},
		{[]int{1 << 16, 1 << 15, 2}, 0, true},
	}
	for _, c := range cases {
		got, err := NumElements(c.shape)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("NumElements(%v) = %d, %v; want %d, err=%v", c.shape, got, err, c.want, c.err)
		}
	}
	if _, err := NumElements([]int{1 << 40, 1 << 40}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("overflowing shape: got %v, want ErrTooLarge", err)
	}
}

func TestParseDataType(t *testing.T) {
	for dt := Bool; dt <= Float64; dt++ {
		got, ok := ParseDataType(dt.String())
		if !ok || got != dt {
			t.Errorf("ParseDataType(%q) = %v, %v", dt.String(), got, ok)
		}
		s, err := MakeSlice(dt, 3)
		if err != nil {
			t.Fatal(err)
		}
		tt := &Tensor{DType: dt, Shape: []int{3}, Data: s}
		if tt.Len() != 3 {
			t.Errorf("%v: Len = %d", dt, tt.Len())
		}
	}
	for _, bad := range []string{"", "INVALID", "fp32", "FP8", "INT4"} {
		if _, ok := ParseDataType(bad); ok {
			t.Errorf("ParseDataType(%q) accepted", bad)
		}
	}
}

func TestReshapedAndClone(t *testing.T) {
	x := From([]int{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	y, err := x.Reshaped([]int{3, 2})
	if err != nil {
		t.Fatal(err)
	}
	if y.Shape[0] != 3 || y.Len() != 6 {
		t.Fatalf("got %v", y.Shape)
	}
	if _, err := x.Reshaped([]int{4}); err == nil {
		t.Fatal("reshape to wrong count accepted")
	}
	c := x.Clone()
	c.Data.([]float32)[0] = 9
	if x.Data.([]float32)[0] != 1 {
		t.Fatal("Clone shares data")
	}
	if got := x.Float64s(); got[5] != 6 {
		t.Fatalf("Float64s = %v", got)
	}
	if _, err := x.Int64s(); err == nil {
		t.Fatal("Int64s of FP32 accepted")
	}
	if DTypeOf[int64]() != Int64 || DTypeOf[bool]() != Bool {
		t.Fatal("DTypeOf")
	}
}

func TestBroadcastStrides(t *testing.T) {
	cases := []struct{ shape, out, want []int }{
		{[]int{3, 1}, []int{2, 3, 4}, []int{0, 1, 0}},
		{[]int{2, 3, 4}, []int{2, 3, 4}, []int{12, 4, 1}},
		{[]int{4}, []int{2, 3, 4}, []int{0, 0, 1}},
		{nil, []int{5}, []int{0}},
	}
	for _, c := range cases {
		got := BroadcastStrides(c.shape, c.out)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("BroadcastStrides(%v, %v) = %v, want %v", c.shape, c.out, got, c.want)
		}
	}
}
