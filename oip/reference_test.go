package oip

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/quantserve/quantserve/tensor"
)

// referenceDecode is an independent decoder built on encoding/json and
// math/big: slow, simple, and the definition the scanner is held to. It
// returns the same tensors, or an error in the same cases.
func referenceDecode(body []byte) (*InferRequest, error) {
	return referenceDecodeWith(json.Unmarshal, body)
}

// The reference reads objects into maps, not structs: encoding/json
// matches struct fields case-insensitively, the protocol does not.
type jsonObject = map[string]json.RawMessage

func field[T any](unmarshal func([]byte, any) error, obj jsonObject, key string, dst *T) (bool, error) {
	raw, ok := obj[key]
	if !ok {
		return false, nil
	}
	if string(raw) == "null" {
		return false, fmt.Errorf("%s is null", key)
	}
	return true, unmarshal(raw, dst)
}

// noDuplicates fails when an object repeats one of the known keys.
func noDuplicates(raw []byte, known ...string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key := tok.(string)
		if seen[key] && slices.Contains(known, key) {
			return fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	return nil
}

func referenceDecodeWith(unmarshal func([]byte, any) error, body []byte) (*InferRequest, error) {
	var top jsonObject
	if err := unmarshal(body, &top); err != nil {
		return nil, err
	}
	if top == nil {
		return nil, fmt.Errorf("not an object")
	}
	if err := noDuplicates(body, "id", "parameters", "inputs", "outputs"); err != nil {
		return nil, err
	}
	var rawInputs, rawOutputs []json.RawMessage
	unmarshal(top["inputs"], &rawInputs)
	unmarshal(top["outputs"], &rawOutputs)
	for _, raw := range rawInputs {
		if err := noDuplicates(raw, "name", "shape", "datatype", "parameters", "data"); err != nil && raw[0] == '{' {
			return nil, err
		}
	}
	for _, raw := range rawOutputs {
		if err := noDuplicates(raw, "name", "parameters"); err != nil && raw[0] == '{' {
			return nil, err
		}
	}
	req := &InferRequest{}
	if _, err := field(unmarshal, top, "id", &req.ID); err != nil {
		return nil, err
	}
	if raw, ok := top["parameters"]; ok {
		if err := refObject(raw); err != nil {
			return nil, err
		}
		req.Parameters = raw
	}
	var inputs []jsonObject
	if ok, err := field(unmarshal, top, "inputs", &inputs); err != nil || !ok {
		return nil, fmt.Errorf("no inputs (%v)", err)
	}
	for _, in := range inputs {
		var name, dtName string
		var dims []json.Number
		okName, err1 := field(unmarshal, in, "name", &name)
		okShape, err2 := field(unmarshal, in, "shape", &dims)
		okType, err3 := field(unmarshal, in, "datatype", &dtName)
		data, okData := in["data"]
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, err
		}
		if !okName || !okShape || !okType || !okData || string(data) == "null" {
			return nil, fmt.Errorf("missing field")
		}
		params, hasParams := in["parameters"]
		if hasParams {
			if err := refObject(params); err != nil {
				return nil, err
			}
		}
		shape := []int{}
		for _, d := range dims {
			v, err := strconv.ParseInt(string(d), 10, 64)
			if err != nil {
				r, ok := new(big.Rat).SetString(string(d))
				if !ok || !r.IsInt() || !r.Num().IsInt64() {
					return nil, fmt.Errorf("bad dim")
				}
				v = r.Num().Int64()
			}
			if v < 0 || v > tensor.MaxElements {
				return nil, fmt.Errorf("bad dim")
			}
			shape = append(shape, int(v))
		}
		if len(shape) > MaxRank {
			return nil, fmt.Errorf("rank")
		}
		dt, ok := tensor.ParseDataType(dtName)
		if !ok {
			return nil, fmt.Errorf("bad datatype")
		}
		n, err := tensor.NumElements(shape)
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		flat, err := refFlatten(v, shape)
		if err != nil {
			return nil, err
		}
		if len(flat) != n {
			return nil, fmt.Errorf("count")
		}
		values, err := refConvert(dt, flat)
		if err != nil {
			return nil, err
		}
		it := InputTensor{Name: name, Tensor: &tensor.Tensor{DType: dt, Shape: shape, Data: values}}
		if hasParams {
			it.Parameters = params
		}
		req.Inputs = append(req.Inputs, it)
	}
	var outputs []jsonObject
	if _, err := field(unmarshal, top, "outputs", &outputs); err != nil {
		return nil, err
	}
	for _, o := range outputs {
		var name string
		ok, err := field(unmarshal, o, "name", &name)
		if err != nil || !ok {
			return nil, fmt.Errorf("output without name")
		}
		if raw, has := o["parameters"]; has {
			if err := refObject(raw); err != nil {
				return nil, err
			}
		}
		req.Outputs = append(req.Outputs, RequestedOutput{Name: name})
	}
	return req, nil
}

func refObject(raw json.RawMessage) error {
	if raw != nil && (len(raw) == 0 || raw[0] != '{') {
		return fmt.Errorf("parameters must be an object")
	}
	return nil
}

func refFlatten(v any, shape []int) ([]any, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("data is not an array")
	}
	if len(arr) > 0 {
		if _, nested := arr[0].([]any); nested {
			if len(shape) < 2 {
				return nil, fmt.Errorf("nested data for rank < 2")
			}
			var out []any
			var walk func(v any, shape []int) error
			walk = func(v any, shape []int) error {
				a, ok := v.([]any)
				if !ok || len(a) != shape[0] {
					return fmt.Errorf("nested shape mismatch")
				}
				for _, e := range a {
					if len(shape) == 1 {
						if _, isArr := e.([]any); isArr {
							return fmt.Errorf("too deep")
						}
						out = append(out, e)
					} else if err := walk(e, shape[1:]); err != nil {
						return err
					}
				}
				return nil
			}
			return out, walk(v, shape)
		}
	}
	for _, e := range arr {
		if _, isArr := e.([]any); isArr {
			return nil, fmt.Errorf("mixed nesting")
		}
	}
	return arr, nil
}

func refConvert(dt tensor.DataType, flat []any) (any, error) {
	out, err := tensor.MakeSlice(dt, len(flat))
	if err != nil {
		return nil, err
	}
	for i, e := range flat {
		if dt == tensor.Bool {
			b, ok := e.(bool)
			if !ok {
				return nil, fmt.Errorf("not a bool")
			}
			out.([]bool)[i] = b
			continue
		}
		if dt == tensor.String {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("not a string")
			}
			out.([]string)[i] = s
			continue
		}
		num, ok := e.(json.Number)
		if !ok {
			return nil, fmt.Errorf("not a number")
		}
		s := string(num)
		switch dt {
		case tensor.Float32:
			f, err := strconv.ParseFloat(s, 32)
			if err != nil {
				return nil, err
			}
			out.([]float32)[i] = float32(f)
		case tensor.Float64:
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, err
			}
			out.([]float64)[i] = f
		case tensor.Float16:
			h, err := refHalf(s, func(h uint16) float64 { return float64(tensor.F16(h).Float32()) }, 0x7c00)
			if err != nil {
				return nil, err
			}
			out.([]tensor.F16)[i] = tensor.F16(h)
		case tensor.BFloat16:
			h, err := refHalf(s, func(h uint16) float64 { return float64(tensor.BF16(h).Float32()) }, 0x7f80)
			if err != nil {
				return nil, err
			}
			out.([]tensor.BF16)[i] = tensor.BF16(h)
		default:
			r, ok := new(big.Rat).SetString(s)
			if !ok && zeroSignificand(s) {
				// big.Rat refuses an exponent past an int's range, but a
				// zero times any power of ten is the integer 0
				r, ok = new(big.Rat), true
			}
			if !ok || !r.IsInt() {
				return nil, fmt.Errorf("not an integer")
			}
			x := r.Num()
			lo, hi := intRange(dt)
			if x.Cmp(lo) < 0 || x.Cmp(hi) > 0 {
				return nil, fmt.Errorf("out of range")
			}
			setInt(out, i, x)
		}
	}
	return out, nil
}

// refHalf rounds the decimal literal s to a 16-bit float format exactly:
// among all finite values (bits below inf, either sign) it picks the
// nearest by exact rational distance, ties to the even bit pattern; a
// literal at least halfway from the largest finite value to the next
// power of two is out of range.
func refHalf(s string, value func(uint16) float64, inf uint16) (uint16, error) {
	x, ok := new(big.Rat).SetString(s)
	if !ok {
		// big.Rat refuses an exponent past a million either way; such a
		// literal is a zero (a tiny value or a zero significand) or far
		// past the largest finite value, whatever its digits
		f, err := strconv.ParseFloat(s, 64)
		switch {
		case err == nil && f == 0 && s[0] == '-':
			return 0x8000, nil
		case err == nil && f == 0:
			return 0, nil
		case err != nil && math.IsInf(f, 0):
			return 0, fmt.Errorf("out of range")
		}
		return 0, fmt.Errorf("not a number")
	}
	neg := x.Sign() < 0 || s[0] == '-'
	ax := new(big.Rat).Abs(x)
	// binary search the magnitude bits: values grow with the bits
	lo, hi := uint16(0), inf-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if new(big.Rat).SetFloat64(value(mid)).Cmp(ax) <= 0 {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	best := lo // the largest value <= |x|
	if best < inf-1 || new(big.Rat).SetFloat64(value(best)).Cmp(ax) < 0 {
		next := new(big.Rat)
		if best+1 < inf {
			next.SetFloat64(value(best + 1))
		} else { // past the largest finite value: the next power of two
			next.SetFloat64(value(best) + (value(best) - value(best-1)))
		}
		dLo := new(big.Rat).Sub(ax, new(big.Rat).SetFloat64(value(best)))
		dHi := new(big.Rat).Sub(next, ax)
		if c := dLo.Cmp(dHi); c > 0 || c == 0 && best&1 == 1 {
			best++
		}
	}
	if best >= inf {
		return 0, fmt.Errorf("out of range")
	}
	if neg {
		best |= 0x8000
	}
	return best, nil
}

func intRange(dt tensor.DataType) (*big.Int, *big.Int) {
	bits := uint(dt.Size() * 8)
	one := big.NewInt(1)
	switch dt {
	case tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64:
		hi := new(big.Int).Sub(new(big.Int).Lsh(one, bits), one)
		return big.NewInt(0), hi
	}
	hi := new(big.Int).Sub(new(big.Int).Lsh(one, bits-1), one)
	lo := new(big.Int).Neg(new(big.Int).Lsh(one, bits-1))
	return lo, hi
}

func setInt(out any, i int, x *big.Int) {
	switch d := out.(type) {
	case []int8:
		d[i] = int8(x.Int64())
	case []int16:
		d[i] = int16(x.Int64())
	case []int32:
		d[i] = int32(x.Int64())
	case []int64:
		d[i] = x.Int64()
	case []uint8:
		d[i] = uint8(x.Uint64())
	case []uint16:
		d[i] = uint16(x.Uint64())
	case []uint32:
		d[i] = uint32(x.Uint64())
	case []uint64:
		d[i] = x.Uint64()
	}
}

// sameTensorBits reports whether a and b hold the same type, shape and
// bit-identical elements (so -0 differs from 0 and NaN equals NaN).
func sameTensorBits(a, b *tensor.Tensor) error {
	if a.DType != b.DType || fmt.Sprint(a.Shape) != fmt.Sprint(b.Shape) || a.Len() != b.Len() {
		return fmt.Errorf("%v%v vs %v%v", a.DType, a.Shape, b.DType, b.Shape)
	}
	switch x := a.Data.(type) {
	case []float32:
		y := b.Data.([]float32)
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				return fmt.Errorf("[%d]: %v (%#x) vs %v (%#x)", i, x[i], math.Float32bits(x[i]), y[i], math.Float32bits(y[i]))
			}
		}
	case []float64:
		y := b.Data.([]float64)
		for i := range x {
			if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
				return fmt.Errorf("[%d]: %v vs %v", i, x[i], y[i])
			}
		}
	default:
		if fmt.Sprint(a.Data) != fmt.Sprint(b.Data) {
			return fmt.Errorf("%v vs %v", a.Data, b.Data)
		}
	}
	return nil
}

// zeroSignificand reports whether the JSON number s has only zeros before
// its exponent.
func zeroSignificand(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	return s != "" && strings.Trim(s, "0.") == ""
}
