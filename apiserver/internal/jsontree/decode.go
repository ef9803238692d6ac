package jsontree

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Decode decodes a JSON object into a JSON tree exactly as the full
// decoder (sigs.k8s.io/json's UnmarshalCaseSensitivePreserveInts, which
// apimachinery's util/json uses: integers kept as int64) does, several
// times faster. It handles the common documents only: ok is false, and
// nothing is decided, for anything it does not decode itself — invalid
// JSON (whose error the full decoder gives), strings with invalid UTF-8 or
// UTF-16 surrogate escapes, numbers out of float64's range, deep nesting.
// Only JSON white space may surround the object. A repeated key keeps its
// last value, as with the full decoder.
func Decode(b []byte) (m map[string]any, ok bool) {
	return decode(b, false)
}

// DecodeStrict is Decode refusing (ok false) an object that repeats a key
// anywhere in the document.
func DecodeStrict(b []byte) (m map[string]any, ok bool) {
	return decode(b, true)
}

func decode(b []byte, strict bool) (map[string]any, bool) {
	d := decoder{b: b, strict: strict}
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return nil, false
	}
	m, ok := d.object(0)
	if !ok || d.dup {
		return nil, false
	}
	d.ws()
	return m, d.i == len(d.b)
}

// maxDepth bounds the nesting Decode decodes itself (the full
// decoder's own limit is far deeper, and gives its error past it).
const maxDepth = 200

type decoder struct {
	b []byte
	i int
	// strict: record in dup whether an object repeats a key.
	strict, dup bool
}

// ws skips JSON white space.
func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// value decodes the value at d.i (white space skipped).
func (d *decoder) value(depth int) (any, bool) {
	if d.i >= len(d.b) {
		return nil, false
	}
	switch c := d.b[d.i]; {
	case c == '{':
		m, ok := d.object(depth + 1)
		return m, ok
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		s, ok := d.string()
		return s, ok
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	}
	return nil, false
}

func (d *decoder) literal(lit string) bool {
	if len(d.b)-d.i < len(lit) || string(d.b[d.i:d.i+len(lit)]) != lit {
		return false
	}
	d.i += len(lit)
	return true
}

// object decodes the object starting at d.i ('{'); a repeated key keeps
// its last value, as the full decoder.
func (d *decoder) object(depth int) (map[string]any, bool) {
	if depth > maxDepth {
		return nil, false
	}
	d.i++ // '{'
	m := map[string]any{}
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return m, true
	}
	for {
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return nil, false
		}
		key, ok := d.key()
		if !ok {
			return nil, false
		}
		d.ws()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return nil, false
		}
		d.i++
		d.ws()
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		if d.strict {
			if _, ok := m[key]; ok {
				d.dup = true
			}
		}
		m[key] = v
		if end, ok := d.next('}'); !ok {
			return nil, false
		} else if end {
			return m, true
		}
	}
}

func (d *decoder) array(depth int) (any, bool) {
	if depth > maxDepth {
		return nil, false
	}
	d.i++ // '['
	a := []any{}
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		if end, ok := d.next(']'); !ok {
			return nil, false
		} else if end {
			return a, true
		}
	}
}

// next reads what follows a member of an object or an element of an
// array: a comma (end false: another one follows) or the closing byte
// (end true), with the white space around them; anything else is not ok.
func (d *decoder) next(closing byte) (end, ok bool) {
	d.ws()
	if d.i >= len(d.b) {
		return false, false
	}
	switch d.b[d.i] {
	case ',':
		d.i++
		d.ws()
		return false, true
	case closing:
		d.i++
		return true, true
	}
	return false, false
}

// commonKeys are object keys decoded without allocating.
var commonKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{"apiVersion", "kind", "metadata", "name", "namespace", "uid", "resourceVersion",
		"generation", "creationTimestamp", "deletionTimestamp", "labels", "annotations", "ownerReferences",
		"finalizers", "managedFields", "spec", "status", "data", "binaryData", "type", "conditions",
		"generateName", "deletionGracePeriodSeconds", "immutable", "items", "selector", "template", "containers",
		"image", "value", "key", "controller", "blockOwnerDeletion", "reason", "message", "lastTransitionTime",
		"observedGeneration", "replicas", "ports", "port", "protocol", "app"} {
		m[k] = k
	}
	return m
}()

// key decodes an object key.
func (d *decoder) key() (string, bool) {
	start := d.i + 1
	for j := start; j < len(d.b); j++ {
		c := d.b[j]
		if c == '"' {
			if k, ok := commonKeys[string(d.b[start:j])]; ok {
				d.i = j + 1
				return k, true
			}
			break
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
	}
	return d.string()
}

// string decodes the string at d.i ('"').
func (d *decoder) string() (string, bool) {
	start := d.i + 1
	ascii := true
	j := start
	for ; j < len(d.b); j++ {
		c := d.b[j]
		if c == '"' {
			break
		}
		if c == '\\' {
			return d.escapedString(start)
		}
		if c < 0x20 {
			return "", false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if j >= len(d.b) {
		return "", false
	}
	s := d.b[start:j]
	if !ascii && !utf8.Valid(s) {
		return "", false // the full decoder replaces invalid bytes
	}
	d.i = j + 1
	return string(s), true
}

// escapedString decodes a string with escapes, from start (after the quote).
func (d *decoder) escapedString(start int) (string, bool) {
	out := make([]byte, 0, 64)
	j := start
	for {
		if j >= len(d.b) {
			return "", false
		}
		c := d.b[j]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				return "", false
			}
			d.i = j + 1
			return string(out), true
		case c < 0x20:
			return "", false
		case c != '\\':
			out = append(out, c)
			j++
			continue
		}
		if j+1 >= len(d.b) {
			return "", false
		}
		switch e := d.b[j+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if j+6 > len(d.b) {
				return "", false
			}
			r, err := strconv.ParseUint(string(d.b[j+2:j+6]), 16, 32)
			if err != nil || utf16.IsSurrogate(rune(r)) {
				return "", false
			}
			out = utf8.AppendRune(out, rune(r))
			j += 6
			continue
		default:
			return "", false
		}
		j += 2
	}
}

// number decodes a number as the full decoder does: an int64 when it has
// no '.' and fits, else a float64.
func (d *decoder) number() (any, bool) {
	start := d.i
	j := start
	if d.b[j] == '-' {
		j++
	}
	switch {
	case j < len(d.b) && d.b[j] == '0':
		j++
	case j < len(d.b) && d.b[j] >= '1' && d.b[j] <= '9':
		for j < len(d.b) && d.b[j] >= '0' && d.b[j] <= '9' {
			j++
		}
	default:
		return nil, false
	}
	dot := false
	if j < len(d.b) && d.b[j] == '.' {
		dot = true
		j++
		if j >= len(d.b) || d.b[j] < '0' || d.b[j] > '9' {
			return nil, false
		}
		for j < len(d.b) && d.b[j] >= '0' && d.b[j] <= '9' {
			j++
		}
	}
	exp := false
	if j < len(d.b) && (d.b[j] == 'e' || d.b[j] == 'E') {
		exp = true
		j++
		if j < len(d.b) && (d.b[j] == '+' || d.b[j] == '-') {
			j++
		}
		if j >= len(d.b) || d.b[j] < '0' || d.b[j] > '9' {
			return nil, false
		}
		for j < len(d.b) && d.b[j] >= '0' && d.b[j] <= '9' {
			j++
		}
	}
	d.i = j
	if digits := d.b[start:j]; !dot && !exp && len(digits) <= 18 {
		// Fits an int64 whatever the digits: no need for ParseInt.
		neg := digits[0] == '-'
		if neg {
			digits = digits[1:]
		}
		var n int64
		for _, c := range digits {
			n = n*10 + int64(c-'0')
		}
		if neg {
			n = -n
		}
		return n, true
	}
	s := string(d.b[start:j])
	if !dot {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, true
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, false
	}
	return f, true
}
