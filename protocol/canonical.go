package protocol

import (
	"bytes"
	"slices"
	"unicode/utf8"
)

// canonical returns the RFC 8785 form of body when body keeps to what
// commands are made of: objects with ASCII member names, arrays, strings
// of UTF-8 without escapes, integers of up to fifteen digits, true, false
// and null. Anything else (an escape, a name past ASCII, a fraction or an
// exponent, a duplicate name, malformed JSON) is false: jcs.Transform then
// canonicalizes it or says what is wrong. For a body it takes, its output
// is jcs.Transform's byte for byte (FuzzCanonicalAgreesWithJCS): member
// names sort by their UTF-16 code units, which for ASCII is byte order;
// such strings and integers are written as they are read. It is the path
// of every command, at a quarter of jcs.Transform's cost.
func canonical(body []byte) ([]byte, bool) {
	c := canonicalizer{in: body, out: make([]byte, 0, len(body))}
	if !c.value() {
		return nil, false
	}
	c.space()
	if c.i != len(c.in) {
		return nil, false
	}
	return c.out, true
}

// maxCanonicalDepth bounds the nesting canonical takes; deeper bodies go
// to jcs.Transform.
const maxCanonicalDepth = 64

type canonicalizer struct {
	in    []byte
	i     int
	out   []byte
	depth int
}

func (c *canonicalizer) space() {
	for c.i < len(c.in) {
		switch c.in[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

// next skips whitespace and reports whether the next byte is b, taking it
// if so.
func (c *canonicalizer) next(b byte) bool {
	c.space()
	if c.i < len(c.in) && c.in[c.i] == b {
		c.i++
		return true
	}
	return false
}

func (c *canonicalizer) value() bool {
	c.space()
	if c.i >= len(c.in) {
		return false
	}
	switch b := c.in[c.i]; {
	case b == '{':
		return c.object()
	case b == '[':
		return c.array()
	case b == '"':
		s, ok := c.str(false)
		if ok {
			c.out = append(c.out, '"')
			c.out = append(c.out, s...)
			c.out = append(c.out, '"')
		}
		return ok
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	case b == '-' || b >= '0' && b <= '9':
		return c.integer()
	}
	return false
}

// str reads a string without escapes or control characters, of valid
// UTF-8 (ASCII only when ascii), and returns what is between its quotes.
func (c *canonicalizer) str(ascii bool) ([]byte, bool) {
	start := c.i + 1
	wide := false
	for j := start; j < len(c.in); j++ {
		switch b := c.in[j]; {
		case b == '"':
			if wide && (ascii || !utf8.Valid(c.in[start:j])) {
				return nil, false
			}
			c.i = j + 1
			return c.in[start:j], true
		case b < 0x20 || b == '\\':
			return nil, false
		case b >= 0x80:
			wide = true
		}
	}
	return nil, false
}

func (c *canonicalizer) literal(word string) bool {
	if !bytes.HasPrefix(c.in[c.i:], []byte(word)) {
		return false
	}
	c.i += len(word)
	c.out = append(c.out, word...)
	return true
}

// integer reads -?(0|[1-9][0-9]{0,14}) ended by neither a digit, a point
// nor an exponent: a number a double holds exactly, written as read. -0,
// which RFC 8785 writes 0, is not taken.
func (c *canonicalizer) integer() bool {
	start := c.i
	j := c.i
	if c.in[j] == '-' {
		j++
	}
	digits := j
	for j < len(c.in) && c.in[j] >= '0' && c.in[j] <= '9' {
		j++
	}
	n := j - digits
	if n == 0 || n > 15 || c.in[digits] == '0' && (n > 1 || digits > start) {
		return false
	}
	if j < len(c.in) && (c.in[j] == '.' || c.in[j] == 'e' || c.in[j] == 'E') {
		return false
	}
	c.out = append(c.out, c.in[start:j]...)
	c.i = j
	return true
}

func (c *canonicalizer) array() bool {
	if c.depth++; c.depth > maxCanonicalDepth {
		return false
	}
	defer func() { c.depth-- }()
	c.i++
	c.out = append(c.out, '[')
	if c.next(']') {
		c.out = append(c.out, ']')
		return true
	}
	for {
		if !c.value() {
			return false
		}
		if c.next(']') {
			c.out = append(c.out, ']')
			return true
		}
		if !c.next(',') {
			return false
		}
		c.out = append(c.out, ',')
	}
}

// member is an object member read: its name, and where its canonical
// value lies in out.
type member struct {
	name       []byte
	start, end int
}

func (c *canonicalizer) object() bool {
	if c.depth++; c.depth > maxCanonicalDepth {
		return false
	}
	defer func() { c.depth-- }()
	c.i++
	if c.next('}') {
		c.out = append(c.out, '{', '}')
		return true
	}
	// The values are written to out as they are read, then the members
	// are written again in the order of their names.
	base := len(c.out)
	var members []member
	for {
		c.space()
		if c.i >= len(c.in) || c.in[c.i] != '"' {
			return false
		}
		name, ok := c.str(true)
		if !ok || !c.next(':') {
			return false
		}
		start := len(c.out)
		if !c.value() {
			return false
		}
		members = append(members, member{name: name, start: start, end: len(c.out)})
		if c.next('}') {
			break
		}
		if !c.next(',') {
			return false
		}
	}
	slices.SortFunc(members, func(a, b member) int { return bytes.Compare(a.name, b.name) })
	for k := 1; k < len(members); k++ {
		if bytes.Equal(members[k-1].name, members[k].name) {
			return false
		}
	}
	values := slices.Clone(c.out[base:])
	c.out = append(c.out[:base], '{')
	for k, m := range members {
		if k > 0 {
			c.out = append(c.out, ',')
		}
		c.out = append(c.out, '"')
		c.out = append(c.out, m.name...)
		c.out = append(c.out, '"', ':')
		c.out = append(c.out, values[m.start-base:m.end-base]...)
	}
	c.out = append(c.out, '}')
	return true
}
