package oip

import (
	"encoding/json"
	"unicode/utf8"
)

// The JSON scanner under the decoder: numbers, strings, objects and
// arrays read in place from the body, with offsets for errors.

// number scans a JSON number at d.i.
func (d *decoder) number() (numLit, error) {
	b := d.b
	i := d.i
	start := i
	var n numLit
	if i < len(b) && b[i] == '-' {
		n.neg = true
		i++
	}
	if i >= len(b) {
		return n, d.syntaxAt(i, "expected a number")
	}
	nd := 0 // significant digits kept in mant
	switch c := b[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if nd < 19 {
				n.mant = n.mant*10 + uint64(b[i]-'0')
				nd++
			} else {
				n.exp10++
				if b[i] != '0' {
					n.trunc = true
				}
			}
		}
	default:
		return n, d.syntaxAt(i, "expected a number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return n, d.syntaxAt(i, "expected a digit after the decimal point")
		}
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if n.mant == 0 && b[i] == '0' {
				n.exp10--
				continue
			}
			if nd < 19 {
				n.mant = n.mant*10 + uint64(b[i]-'0')
				nd++
				n.exp10--
			} else if b[i] != '0' {
				n.trunc = true
			}
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return n, d.syntaxAt(i, "expected a digit in the exponent")
		}
		e := 0
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if e < 1e8 {
				e = e*10 + int(b[i]-'0')
			}
		}
		if eneg {
			e = -e
		}
		n.exp10 += e
	}
	n.lit = b[start:i]
	d.i = i
	return n, nil
}

func (d *decoder) syntaxAt(i int, msg string) error {
	d.i = i
	if i >= len(d.b) {
		return d.syntax("unexpected end of input: %s", msg)
	}
	return d.syntax("%s, found %q", msg, d.b[i])
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func (d *decoder) ws() {
	for d.i < len(d.b) && isSpace(d.b[d.i]) {
		d.i++
	}
}

func (d *decoder) lit(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// object parses an object, calling field with d.i after the colon of each
// member; field must consume the value.
func (d *decoder) object(field func(key string) error) error {
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return d.syntaxAt(d.i, "expected an object")
	}
	if d.depth++; d.depth > maxNesting {
		return d.syntax("values nested too deeply")
	}
	defer func() { d.depth-- }()
	d.i++
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return nil
	}
	for {
		d.ws()
		key, err := d.str()
		if err != nil {
			return err
		}
		d.ws()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return d.syntaxAt(d.i, "expected ':' after an object key")
		}
		d.i++
		if err := field(key); err != nil {
			return err
		}
		d.ws()
		if d.i >= len(d.b) {
			return d.syntax("unexpected end of input in an object")
		}
		c := d.b[d.i]
		d.i++
		if c == '}' {
			return nil
		}
		if c != ',' {
			d.i--
			return d.syntaxAt(d.i, "expected ',' or '}' in an object")
		}
	}
}

// array parses an array, calling elem with d.i at each element; elem must
// consume it.
func (d *decoder) array(elem func(i int) error) error {
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '[' {
		return d.syntaxAt(d.i, "expected an array")
	}
	if d.depth++; d.depth > maxNesting {
		return d.syntax("values nested too deeply")
	}
	defer func() { d.depth-- }()
	d.i++
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return nil
	}
	for i := 0; ; i++ {
		if err := elem(i); err != nil {
			return err
		}
		d.ws()
		if d.i >= len(d.b) {
			return d.syntax("unexpected end of input in an array")
		}
		c := d.b[d.i]
		d.i++
		if c == ']' {
			return nil
		}
		if c != ',' {
			d.i--
			return d.syntaxAt(d.i, "expected ',' or ']' in an array")
		}
	}
}

// str parses a JSON string.
func (d *decoder) str() (string, error) {
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return "", d.syntaxAt(d.i, "expected a string")
	}
	start := d.i
	i := d.i + 1
	escaped := false
	for ; i < len(d.b); i++ {
		c := d.b[i]
		switch {
		case c == '"':
			d.i = i + 1
			if !escaped && utf8.Valid(d.b[start+1:i]) {
				return string(d.b[start+1 : i]), nil
			}
			var s string
			if err := json.Unmarshal(d.b[start:i+1], &s); err != nil {
				d.i = start
				return "", d.syntax("invalid string: %v", err)
			}
			return s, nil
		case c == '\\':
			escaped = true
			i++
		case c < 0x20:
			d.i = i
			return "", d.syntax("control character in a string")
		}
	}
	d.i = i
	return "", d.syntax("unexpected end of input in a string")
}

// rawObject returns a copy of the object at d.i.
func (d *decoder) rawObject() (json.RawMessage, error) {
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return nil, d.syntaxAt(d.i, `expected an object for "parameters"`)
	}
	start := d.i
	if err := d.skip(); err != nil {
		return nil, err
	}
	return append(json.RawMessage(nil), d.b[start:d.i]...), nil
}

// skip consumes and validates one JSON value.
func (d *decoder) skip() error {
	d.ws()
	if d.i >= len(d.b) {
		return d.syntax("unexpected end of input: expected a value")
	}
	switch c := d.b[d.i]; {
	case c == '{':
		return d.object(func(string) error { return d.skip() })
	case c == '[':
		return d.array(func(int) error { return d.skip() })
	case c == '"':
		_, err := d.str()
		return err
	case c == 't':
		if d.lit("true") {
			return nil
		}
	case c == 'f':
		if d.lit("false") {
			return nil
		}
	case c == 'n':
		if d.lit("null") {
			return nil
		}
	case c == '-' || c >= '0' && c <= '9':
		_, err := d.number()
		return err
	}
	return d.syntaxAt(d.i, "expected a value")
}
