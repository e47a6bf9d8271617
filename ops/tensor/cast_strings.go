package tensor

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Cast between numbers and strings, as CastTo describes.

// --- numbers to strings ---------------------------------------------------

// formatInto formats every element of src into out as numpy's str does.
func formatInto(out []string, src any) {
	switch d := src.(type) {
	case []bool:
		for i, v := range d {
			out[i] = "False"
			if v {
				out[i] = "True"
			}
		}
	case []float32:
		for i, v := range d {
			out[i] = formatFloat(float64(v), strconv.FormatFloat(float64(v), 'e', -1, 32))
		}
	case []float64:
		for i, v := range d {
			out[i] = formatFloat(v, strconv.FormatFloat(v, 'e', -1, 64))
		}
	case []tensor.F16:
		for i, v := range d {
			f := float64(v.Float32())
			out[i] = formatFloat(f, shortestDigits(f, func(p float64) bool { return tensor.F16FromFloat64(p) == v }))
		}
	case []tensor.BF16:
		for i, v := range d {
			f := float64(v.Float32())
			out[i] = formatFloat(f, shortestDigits(f, func(p float64) bool { return tensor.BF16FromFloat64(p) == v }))
		}
	case []int8:
		formatInts(out, d)
	case []int16:
		formatInts(out, d)
	case []int32:
		formatInts(out, d)
	case []int64:
		formatInts(out, d)
	case []uint8:
		formatUints(out, d)
	case []uint16:
		formatUints(out, d)
	case []uint32:
		formatUints(out, d)
	case []uint64:
		formatUints(out, d)
	}
}

func formatInts[T int8 | int16 | int32 | int64](out []string, d []T) {
	for i, v := range d {
		out[i] = strconv.FormatInt(int64(v), 10)
	}
}

func formatUints[T uint8 | uint16 | uint32 | uint64](out []string, d []T) {
	for i, v := range d {
		out[i] = strconv.FormatUint(uint64(v), 10)
	}
}

// shortestDigits returns, in strconv's 'e' format, the fewest significant
// digits of v that read back (through same) as the same half value.
func shortestDigits(v float64, same func(float64) bool) string {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return strconv.FormatFloat(v, 'e', -1, 64)
	}
	for p := 0; p < 17; p++ {
		s := strconv.FormatFloat(v, 'e', p, 64)
		if r, err := strconv.ParseFloat(s, 64); err == nil && same(r) {
			return s
		}
	}
	return strconv.FormatFloat(v, 'e', -1, 64)
}

// formatFloat lays out v, whose significant digits sci gives in strconv's
// 'e' format, as Python and numpy print floats: positional ("0.5",
// "100.0") when v is 0 or 1e-4 <= |v| < 1e16, scientific ("1e-05",
// "1.5e+20") otherwise; "nan", "inf", "-inf".
func formatFloat(v float64, sci string) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	sign := ""
	if strings.HasPrefix(sci, "-") {
		sign, sci = "-", sci[1:]
	}
	mant, e, _ := strings.Cut(sci, "e")
	exp, _ := strconv.Atoi(e)
	digits := strings.TrimRight(strings.Replace(mant, ".", "", 1), "0")
	if digits == "" {
		digits, exp = "0", 0
	}
	if a := math.Abs(v); a == 0 || a >= 1e-4 && a < 1e16 {
		if exp < 0 {
			return sign + "0." + strings.Repeat("0", -exp-1) + digits
		}
		if len(digits) <= exp+1 {
			return sign + digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
		}
		return sign + digits[:exp+1] + "." + digits[exp+1:]
	}
	s := sign + digits[:1]
	if len(digits) > 1 {
		s += "." + digits[1:]
	}
	return s + fmt.Sprintf("e%+03d", exp)
}

// --- strings to numbers -----------------------------------------------------

// parseInto converts strings into dst, a slice of dt of the same length.
func parseInto(dst any, d []string, dt tensor.DataType) error {
	switch {
	case dt.IsFloat():
		f := make([]float64, len(d))
		for i, s := range d {
			v, err := parseFloatString(s)
			if err != nil {
				return err
			}
			f[i] = v
		}
		switch dst := dst.(type) {
		case []tensor.F16:
			halfInto(dst, f, tensor.F16FromFloat64)
		case []tensor.BF16:
			halfInto(dst, f, tensor.BF16FromFloat64)
		case []float32:
			convert(dst, f)
		case []float64:
			copy(dst, f)
		}
		return nil
	case dt == tensor.Bool:
		b := dst.([]bool)
		for i, s := range d {
			switch t := strings.TrimSpace(s); {
			case strings.EqualFold(t, "true"):
				b[i] = true
			case strings.EqualFold(t, "false"):
			default:
				v, err := parseFloatString(s)
				if err != nil {
					return err
				}
				b[i] = v != 0
			}
		}
		return nil
	case dt.IsInteger():
		signed := dt.IsSigned()
		ints := make([]int64, len(d))
		uints := make([]uint64, len(d))
		for i, s := range d {
			t := strings.TrimSpace(s)
			var err error
			if signed {
				ints[i], err = strconv.ParseInt(t, 10, 64)
			} else if uints[i], err = strconv.ParseUint(strings.TrimPrefix(t, "+"), 10, 64); err != nil {
				var v int64 // a negative value wraps, as a negative integer cast to an unsigned type
				if v, err = strconv.ParseInt(t, 10, 64); err == nil {
					uints[i] = uint64(v)
				}
			}
			if err != nil { // "100.5" and the like: truncated, as Cast of the float would
				v, ferr := parseFloatString(s)
				if ferr != nil || math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) >= 1<<63 {
					return ops.InputErrorf("Cast: %q is not an integer of %v's range", s, dt)
				}
				ints[i], uints[i] = int64(v), uint64(int64(v))
			}
		}
		var wide any = uints
		if signed {
			wide = ints
		}
		_, err := castInto(dst, wide, dt) // narrower integers wrap
		return err
	}
	return ops.Unsupportedf("casts from strings to %v", dt)
}

// parseFloatString reads a decimal or scientific number, or (in any case)
// INF, +INF, -INF, INFINITY or NAN, surrounding spaces ignored.
func parseFloatString(s string) (float64, error) {
	t := strings.TrimSpace(s)
	v, err := strconv.ParseFloat(t, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return v, nil // ±Inf beyond the range, 0 below it
		}
		return 0, ops.InputErrorf("Cast: %q is not a number", s)
	}
	return v, nil
}
