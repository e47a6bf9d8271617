package repository

import (
	"fmt"
	"strconv"
	"strings"
)

// A parser for the subset of protobuf's text format that Triton's
// config.pbtxt files use: fields "name: value" and "name { ... }" (the
// colon optional before a message, "<...>" as well as "{...}"), lists
// "name: [a, b]" and "name [ {...}, {...} ]", fields separated by
// whitespace, ',' or ';', strings in double or single quotes (adjacent
// strings concatenate), numbers, identifiers (enum values, true, false)
// and '#' comments. It builds a tree of fields; what the fields mean is
// decided by its reader (triton.go), which refuses the ones it does not
// know.

// pbField is one field of a text-format message. A list is expanded into
// one field per element, as repeated fields are.
type pbField struct {
	Name  string
	Line  int
	Value *pbScalar  // a scalar value, or
	Msg   []*pbField // a message's fields (Value nil)
}

type pbScalarKind uint8

const (
	pbStrKind pbScalarKind = iota
	pbNumber
	pbIdent
)

type pbScalar struct {
	Kind pbScalarKind
	Text string // the string's value, or the number's or identifier's text
}

type pbToken struct {
	kind byte // 's' string, 'n' number, 'i' identifier, or the punctuation itself; 0 at the end
	text string
	line int
}

type pbParser struct {
	src  string
	pos  int
	line int
	tok  pbToken
}

// maxPbDepth bounds the nesting of messages, so a hostile file cannot
// exhaust the stack.
const maxPbDepth = 32

// parsePbtxt parses a text-format message.
func parsePbtxt(src string) ([]*pbField, error) {
	p := &pbParser{src: src, line: 1}
	if err := p.next(); err != nil {
		return nil, err
	}
	fields, err := p.message(0, 0)
	if err != nil {
		return nil, err
	}
	return fields, nil
}

func (p *pbParser) errorf(line int, format string, args ...any) error {
	return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...))
}

// next reads the next token into p.tok.
func (p *pbParser) next() error {
	p.skipSpace()
	if p.pos >= len(p.src) {
		p.tok = pbToken{line: p.line}
		return nil
	}
	return p.token()
}

// skipSpace skips whitespace and comments.
func (p *pbParser) skipSpace() {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == '\n':
			p.line++
			p.pos++
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

func (p *pbParser) token() error {
	c := p.src[p.pos]
	start, line := p.pos, p.line
	switch {
	case strings.IndexByte("{}[]<>:,;", c) >= 0:
		p.pos++
		p.tok = pbToken{kind: c, text: string(c), line: line}
	case c == '"' || c == '\'':
		var b strings.Builder
		for p.pos < len(p.src) && (p.src[p.pos] == '"' || p.src[p.pos] == '\'') {
			s, err := p.quoted()
			if err != nil {
				return err
			}
			b.WriteString(s) // adjacent strings concatenate
			p.skipSpace()
		}
		p.tok = pbToken{kind: 's', text: b.String(), line: line}
	case c == '-' || c == '+' || c == '.' || c >= '0' && c <= '9':
		p.pos++
		for p.pos < len(p.src) {
			d := p.src[p.pos]
			if !isPbWord(d) && d != '.' && !((d == '-' || d == '+') && (p.src[p.pos-1] == 'e' || p.src[p.pos-1] == 'E')) {
				break
			}
			p.pos++
		}
		p.tok = pbToken{kind: 'n', text: p.src[start:p.pos], line: line}
	case isPbWord(c):
		for p.pos < len(p.src) && (isPbWord(p.src[p.pos]) || p.src[p.pos] == '.') {
			p.pos++
		}
		p.tok = pbToken{kind: 'i', text: p.src[start:p.pos], line: line}
	default:
		return p.errorf(line, "unexpected character %q", c)
	}
	return nil
}

// quoted reads one quoted string at p.pos.
func (p *pbParser) quoted() (string, error) {
	q := p.src[p.pos]
	line := p.line
	end := p.pos + 1
	for end < len(p.src) && p.src[end] != q {
		switch p.src[end] {
		case '\\':
			end++
		case '\n':
			return "", p.errorf(line, "string not closed on its line")
		}
		end++
	}
	if end >= len(p.src) {
		return "", p.errorf(line, "string not closed")
	}
	raw := p.src[p.pos : end+1]
	p.pos = end + 1
	if q == '\'' {
		raw = `"` + strings.ReplaceAll(strings.ReplaceAll(raw[1:len(raw)-1], `\'`, `'`), `"`, `\"`) + `"`
	}
	s, err := strconv.Unquote(raw)
	if err != nil {
		return "", p.errorf(line, "string %s: %v", raw, err)
	}
	return s, nil
}

func isPbWord(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// message reads fields until close (0 for the end of the file).
func (p *pbParser) message(close byte, depth int) ([]*pbField, error) {
	if depth > maxPbDepth {
		return nil, p.errorf(p.tok.line, "messages nested more than %d deep", maxPbDepth)
	}
	var fields []*pbField
	for {
		switch p.tok.kind {
		case close:
			if close != 0 {
				if err := p.next(); err != nil {
					return nil, err
				}
			}
			return fields, nil
		case 0:
			return nil, p.errorf(p.tok.line, "missing %q at the end of the file", close)
		case 'i':
		default:
			return nil, p.errorf(p.tok.line, "expected a field name, found %q", p.tok.text)
		}
		name, line := p.tok.text, p.tok.line
		if err := p.next(); err != nil {
			return nil, err
		}
		colon := p.tok.kind == ':'
		if colon {
			if err := p.next(); err != nil {
				return nil, err
			}
		}
		switch p.tok.kind {
		case '{', '<':
			f, err := p.submessage(name, line, depth)
			if err != nil {
				return nil, err
			}
			fields = append(fields, f)
		case '[':
			if err := p.next(); err != nil {
				return nil, err
			}
			for p.tok.kind != ']' {
				var f *pbField
				var err error
				if p.tok.kind == '{' || p.tok.kind == '<' {
					f, err = p.submessage(name, p.tok.line, depth)
				} else {
					f, err = p.scalar(name, p.tok.line)
				}
				if err != nil {
					return nil, err
				}
				fields = append(fields, f)
				if p.tok.kind == ',' {
					if err := p.next(); err != nil {
						return nil, err
					}
				} else if p.tok.kind != ']' {
					return nil, p.errorf(p.tok.line, "%s: expected ',' or ']' in the list, found %q", name, p.tok.text)
				}
			}
			if err := p.next(); err != nil {
				return nil, err
			}
		default:
			if !colon {
				return nil, p.errorf(line, "%s: expected ':' or '{' after the field name, found %q", name, p.tok.text)
			}
			f, err := p.scalar(name, line)
			if err != nil {
				return nil, err
			}
			fields = append(fields, f)
		}
		if p.tok.kind == ',' || p.tok.kind == ';' {
			if err := p.next(); err != nil {
				return nil, err
			}
		}
	}
}

func (p *pbParser) submessage(name string, line, depth int) (*pbField, error) {
	close := byte('}')
	if p.tok.kind == '<' {
		close = '>'
	}
	if err := p.next(); err != nil {
		return nil, err
	}
	msg, err := p.message(close, depth+1)
	if err != nil {
		return nil, err
	}
	return &pbField{Name: name, Line: line, Msg: msg}, nil
}

func (p *pbParser) scalar(name string, line int) (*pbField, error) {
	var v pbScalar
	switch p.tok.kind {
	case 's':
		v = pbScalar{Kind: pbStrKind, Text: p.tok.text}
	case 'n':
		v = pbScalar{Kind: pbNumber, Text: p.tok.text}
	case 'i':
		v = pbScalar{Kind: pbIdent, Text: p.tok.text}
	case 0:
		return nil, p.errorf(line, "%s: the file ends where its value should be", name)
	default:
		return nil, p.errorf(p.tok.line, "%s: expected a value, found %q", name, p.tok.text)
	}
	if err := p.next(); err != nil {
		return nil, err
	}
	return &pbField{Name: name, Line: line, Value: &v}, nil
}
