package ml

import (
	"math"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// keyIndex maps keys of one type (strings, integers or floats) to
// positions: the lookup of LabelEncoder, CategoryMapper and OneHotEncoder.
type keyIndex struct {
	dtype  tensor.DataType
	str    map[string]int
	ints   map[int64]int
	floats map[float64]int
	nan    int // position of a NaN key, or -1
}

// newKeyIndex indexes keys; a repeated key maps to its last position
// when last is set, else its first.
func newKeyIndex(keys *tensor.Tensor, last bool) *keyIndex {
	k := &keyIndex{dtype: keys.DType, nan: -1}
	switch d := keys.Data.(type) {
	case []string:
		k.str = map[string]int{}
		for i, s := range d {
			if _, dup := k.str[s]; !dup || last {
				k.str[s] = i
			}
		}
	case []float32, []float64, []tensor.F16, []tensor.BF16:
		k.floats = map[float64]int{}
		for i, v := range keys.Float64s() {
			if math.IsNaN(v) {
				if k.nan < 0 || last {
					k.nan = i
				}
				continue
			}
			if _, dup := k.floats[v]; !dup || last {
				k.floats[v] = i
			}
		}
	default:
		k.ints = map[int64]int{}
		vs, _ := keys.Int64s()
		for i, v := range vs {
			if _, dup := k.ints[v]; !dup || last {
				k.ints[v] = i
			}
		}
	}
	return k
}

// lookup returns, for each element of x, its key's position or miss.
func (k *keyIndex) lookup(op string, x *tensor.Tensor, miss int) ([]int, error) {
	if x.DType != k.dtype {
		return nil, ops.InputErrorf("%s takes %v input (the type of its keys), got %v", op, k.dtype, x.DType)
	}
	idx := make([]int, x.Len())
	switch {
	case k.str != nil:
		for i, s := range x.Data.([]string) {
			if j, ok := k.str[s]; ok {
				idx[i] = j
			} else {
				idx[i] = miss
			}
		}
	case k.floats != nil:
		for i, v := range x.Float64s() {
			j, ok := k.floats[v]
			switch {
			case math.IsNaN(v) && k.nan >= 0:
				idx[i] = k.nan
			case ok:
				idx[i] = j
			default:
				idx[i] = miss
			}
		}
	default:
		vs, err := x.Int64s()
		if err != nil {
			return nil, ops.InputErrorf("%s: %v", op, err)
		}
		for i, v := range vs {
			if j, ok := k.ints[v]; ok {
				idx[i] = j
			} else {
				idx[i] = miss
			}
		}
	}
	return idx, nil
}

// encoder maps each input element through keys to values (the value
// table's last element is the default): a compiled LabelEncoder.
type encoder struct {
	op     string
	keys   *keyIndex
	values *tensor.Tensor
	miss   int // the default's position in values
}

func newEncoder(op string, keys *keyIndex, values *tensor.Tensor) *encoder {
	return &encoder{op: op, keys: keys, values: values, miss: values.Len() - 1}
}

func (e *encoder) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	idx, err := e.keys.lookup(e.op, in[0], e.miss)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{{DType: e.values.DType, Shape: in[0].Shape, Data: take(e.values.Data, idx)}}, nil
}

// stringIntMapper maps strings to integers and integers to strings: a
// compiled CategoryMapper or LabelEncoder-1.
type stringIntMapper struct {
	op       string
	s2i, i2s *encoder
}

// newStringIntMapper maps by pairs (strs[i], ints[i]); ints nil means
// positions. A repeated key maps to its last pair when last is set, else
// to its first.
func newStringIntMapper(op string, strs []string, ints []int64, defInt int64, defStr string, last bool) *stringIntMapper {
	if ints == nil {
		ints = make([]int64, len(strs))
		for i := range ints {
			ints[i] = int64(i)
		}
	}
	m := &stringIntMapper{op: op}
	m.s2i = newEncoder(op, newKeyIndex(tensor.From([]int{len(strs)}, strs), last), tensor.From([]int{len(ints) + 1}, append(slices.Clone(ints), defInt)))
	m.i2s = newEncoder(op, newKeyIndex(tensor.From([]int{len(ints)}, ints), last), tensor.From([]int{len(strs) + 1}, append(slices.Clone(strs), defStr)))
	return m
}

func (m *stringIntMapper) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	switch in[0].DType {
	case tensor.String:
		return m.s2i.Run(c, in)
	case tensor.Int64:
		return m.i2s.Run(c, in)
	}
	return nil, ops.InputErrorf("%s takes BYTES or INT64 input, got %v", m.op, in[0].DType)
}
