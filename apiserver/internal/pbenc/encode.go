package pbenc

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxDepth bounds the nesting of the objects and arrays Append reads.
const maxDepth = 100

// Append appends to b the protobuf message (no envelope) of data, the JSON
// encoding of a value of m's struct: the message the type's generated code
// marshals the value that encoding/json decodes from data into. ok is false
// when Append cannot tell that message — data is not a JSON object of that
// shape (a field the type has not, a value of another JSON type, an integer
// out of its field's range, a malformed time or quantity), or anything it
// does not read (a key with an escape, nesting deeper than 100): the caller
// encodes another way, which decides; b's contents past its length are
// then undefined.
//
// The message holds the same fields as the generated code's, in the order
// of data's keys, which need not be the order of their numbers, and
// without the fields data leaves out (omitempty), which the generated
// code writes with their zero values: both decode to the same value.
func (m *Message) Append(b, data []byte) (out []byte, ok bool) {
	e := encoder{data: data}
	i := e.ws(0)
	b, i, ok = e.object(b, m, i, 0)
	if !ok || e.ws(i) != len(data) {
		return nil, false
	}
	return b, true
}

// encoder reads one JSON document.
type encoder struct {
	data []byte
}

// ws returns the index of the first byte at or after i that is not JSON
// white space.
func (e *encoder) ws(i int) int {
	for i < len(e.data) {
		switch e.data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// object appends the message of the JSON object at i, returning the index
// after it.
func (e *encoder) object(b []byte, m *Message, i, depth int) ([]byte, int, bool) {
	if depth > maxDepth || i >= len(e.data) || e.data[i] != '{' {
		return nil, 0, false
	}
	var inlines [][]byte
	if len(m.inlines) > 0 {
		inlines = make([][]byte, len(m.inlines))
	}
	// The fields seen: a repeated key would decode differently (JSON
	// replaces a list, protobuf appends to it).
	var seenBuf [32]*field
	seen := seenBuf[:0]
	i = e.ws(i + 1)
	if i < len(e.data) && e.data[i] == '}' {
		i++
	} else {
		for {
			key, j, ok := e.plainString(i)
			if !ok {
				return nil, 0, false
			}
			if j = e.ws(j); j >= len(e.data) || e.data[j] != ':' {
				return nil, 0, false
			}
			i = e.ws(j + 1)
			f, known := m.fields[string(key)]
			if !known || slices.Contains(seen, f) {
				return nil, 0, false
			}
			seen = append(seen, f)
			switch {
			case f.skip:
				if e.isNull(i) {
					i += 4
				} else {
					_, i, ok = e.stringValue(i)
				}
			case f.inline >= 0:
				inlines[f.inline], i, ok = e.field(inlines[f.inline], f, i, depth+1)
			default:
				b, i, ok = e.field(b, f, i, depth+1)
			}
			if !ok {
				return nil, 0, false
			}
			if i = e.ws(i); i >= len(e.data) {
				return nil, 0, false
			}
			if e.data[i] == '}' {
				i++
				break
			}
			if e.data[i] != ',' {
				return nil, 0, false
			}
			i = e.ws(i + 1)
		}
	}
	for n, in := range m.inlines {
		// The generated code writes an embedded struct even when empty.
		b = append(b, in.tag...)
		b = appendUvarint(b, uint64(len(inlines[n])))
		b = append(b, inlines[n]...)
	}
	return b, i, true
}

// field appends the field f whose JSON value is at i.
func (e *encoder) field(b []byte, f *field, i, depth int) ([]byte, int, bool) {
	if i >= len(e.data) {
		return nil, 0, false
	}
	if e.isNull(i) {
		// Left as it is by encoding/json: zero, as an absent field.
		return b, i + 4, true
	}
	switch {
	case f.mapValue != nil:
		return e.mapField(b, f, i, depth)
	case f.repeated:
		if e.data[i] != '[' || depth > maxDepth {
			return nil, 0, false
		}
		i = e.ws(i + 1)
		if i < len(e.data) && e.data[i] == ']' {
			return b, i + 1, true
		}
		for {
			if e.isNull(i) {
				return nil, 0, false // a nil element: not encoded alike
			}
			var ok bool
			if b, i, ok = e.value(b, f.tag, &f.value, i, depth+1); !ok {
				return nil, 0, false
			}
			if i = e.ws(i); i >= len(e.data) {
				return nil, 0, false
			}
			if e.data[i] == ']' {
				return b, i + 1, true
			}
			if e.data[i] != ',' {
				return nil, 0, false
			}
			i = e.ws(i + 1)
		}
	}
	return e.value(b, f.tag, &f.value, i, depth)
}

// mapField appends the entries of the JSON object at i, a Go map: one
// message {1: key, 2: value} each.
func (e *encoder) mapField(b []byte, f *field, i, depth int) ([]byte, int, bool) {
	if e.data[i] != '{' || depth > maxDepth {
		return nil, 0, false
	}
	valueTag := []byte{2<<3 | wireBytes}
	switch f.mapValue.kind {
	case kBool, kInt, kUint:
		valueTag[0] = 2<<3 | wireVarint
	case kFloat64:
		valueTag[0] = 2<<3 | wireFixed64
	case kFloat32:
		valueTag[0] = 2<<3 | wireFixed32
	}
	i = e.ws(i + 1)
	if i < len(e.data) && e.data[i] == '}' {
		return b, i + 1, true
	}
	for {
		key, j, ok := e.stringValue(i)
		if !ok {
			return nil, 0, false
		}
		if j = e.ws(j); j >= len(e.data) || e.data[j] != ':' {
			return nil, 0, false
		}
		i = e.ws(j + 1)
		if e.isNull(i) {
			return nil, 0, false
		}
		b = append(b, f.tag...)
		start := len(b)
		b = append(b, 0)
		b = append(b, 1<<3|wireBytes)
		b = appendUvarint(b, uint64(len(key)))
		b = append(b, key...)
		if b, i, ok = e.value(b, valueTag, f.mapValue, i, depth+1); !ok {
			return nil, 0, false
		}
		b = fixLength(b, start)
		if i = e.ws(i); i >= len(e.data) {
			return nil, 0, false
		}
		if e.data[i] == '}' {
			return b, i + 1, true
		}
		if e.data[i] != ',' {
			return nil, 0, false
		}
		i = e.ws(i + 1)
	}
}

// value appends one value of v, with tag, from the JSON value at i (not
// null).
func (e *encoder) value(b, tag []byte, v *value, i, depth int) ([]byte, int, bool) {
	if i >= len(e.data) {
		return nil, 0, false
	}
	switch v.kind {
	case kString:
		s, j, ok := e.stringValue(i)
		if !ok {
			return nil, 0, false
		}
		return appendBytesField(b, tag, s), j, true
	case kBytes:
		s, j, ok := e.stringValue(i)
		if !ok {
			return nil, 0, false
		}
		// As encoding/json decodes a []byte.
		dec := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
		n, err := base64.StdEncoding.Decode(dec, s)
		if err != nil {
			return nil, 0, false
		}
		return appendBytesField(b, tag, dec[:n]), j, true
	case kBool:
		switch {
		case e.literal(i, "true"):
			return append(append(b, tag...), 1), i + 4, true
		case e.literal(i, "false"):
			return append(append(b, tag...), 0), i + 5, true
		}
		return nil, 0, false
	case kInt, kUint, kFloat64, kFloat32:
		num, j, integer, ok := e.number(i)
		if !ok {
			return nil, 0, false
		}
		b = append(b, tag...)
		switch v.kind {
		case kInt:
			n, ok := parseInt(num, v.bits)
			if !integer || !ok {
				return nil, 0, false
			}
			return appendUvarint(b, uint64(n)), j, true
		case kUint:
			n, ok := parseUint(num, v.bits)
			if !integer || !ok {
				return nil, 0, false
			}
			return appendUvarint(b, n), j, true
		case kFloat64:
			f, err := strconv.ParseFloat(string(num), 64)
			if err != nil {
				return nil, 0, false
			}
			return binary.LittleEndian.AppendUint64(b, math.Float64bits(f)), j, true
		default:
			f, err := strconv.ParseFloat(string(num), 32)
			if err != nil {
				return nil, 0, false
			}
			return binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(f))), j, true
		}
	case kMessage:
		b = append(b, tag...)
		start := len(b)
		b = append(b, 0)
		b, j, ok := e.object(b, v.msg, i, depth)
		if !ok {
			return nil, 0, false
		}
		return fixLength(b, start), j, true
	case kTime, kMicroTime:
		s, j, ok := e.stringValue(i)
		if !ok {
			return nil, 0, false
		}
		layout := time.RFC3339
		if v.kind == kMicroTime {
			layout = metav1.RFC3339Micro
		}
		t, err := time.Parse(layout, string(s))
		if err != nil {
			return nil, 0, false
		}
		b = append(b, tag...)
		start := len(b)
		b = append(b, 0)
		if t.IsZero() {
			return b, j, true
		}
		// metav1.Time keeps seconds; MicroTime microseconds.
		b = append(b, 1<<3|wireVarint)
		b = appendUvarint(b, uint64(t.Unix()))
		b = append(b, 2<<3|wireVarint)
		if v.kind == kMicroTime {
			b = appendUvarint(b, uint64(int64(time.Duration(t.Nanosecond()).Truncate(time.Microsecond))))
		} else {
			b = append(b, 0)
		}
		return fixLength(b, start), j, true
	case kDuration:
		s, j, ok := e.stringValue(i)
		if !ok {
			return nil, 0, false
		}
		d, err := time.ParseDuration(string(s))
		if err != nil {
			return nil, 0, false
		}
		b = append(b, tag...)
		start := len(b)
		b = append(b, 0, 1<<3|wireVarint)
		return fixLength(appendUvarint(b, uint64(int64(d))), start), j, true
	case kQuantity:
		// As Quantity's UnmarshalJSON: a string's bytes as they are
		// (no escapes), or a number.
		var text []byte
		j := i
		if e.data[i] == '"' {
			end, escaped, ok := e.scanString(i)
			if !ok || escaped {
				return nil, 0, false
			}
			text, j = e.data[i+1:end-1], end
		} else {
			num, end, _, ok := e.number(i)
			if !ok {
				return nil, 0, false
			}
			text, j = num, end
		}
		q, err := resource.ParseQuantity(strings.TrimSpace(string(text)))
		if err != nil {
			return nil, 0, false
		}
		b = append(b, tag...)
		start := len(b)
		b = append(b, 0)
		b = appendBytesField(b, []byte{1<<3 | wireBytes}, q.String())
		return fixLength(b, start), j, true
	case kIntOrString:
		b = append(b, tag...)
		start := len(b)
		b = append(b, 0)
		var j int
		if e.data[i] == '"' {
			s, end, ok := e.stringValue(i)
			if !ok {
				return nil, 0, false
			}
			b = append(b, 1<<3|wireVarint, 1, 2<<3|wireVarint, 0)
			b, j = appendBytesField(b, []byte{3<<3 | wireBytes}, s), end
		} else {
			num, end, integer, ok := e.number(i)
			if !ok {
				return nil, 0, false
			}
			n, ok := parseInt(num, 32)
			if !integer || !ok {
				return nil, 0, false
			}
			b = append(b, 1<<3|wireVarint, 0, 2<<3|wireVarint)
			b = appendUvarint(b, uint64(n))
			b, j = append(b, 3<<3|wireBytes, 0), end
		}
		return fixLength(b, start), j, true
	case kRaw:
		j, ok := e.skip(i, depth)
		if !ok {
			return nil, 0, false
		}
		b = append(b, tag...)
		start := len(b)
		b = append(b, 0)
		b = appendBytesField(b, []byte{1<<3 | wireBytes}, e.data[i:j])
		return fixLength(b, start), j, true
	}
	return nil, 0, false
}

// isNull reports whether the JSON value at i is null.
func (e *encoder) isNull(i int) bool { return e.literal(i, "null") }

func (e *encoder) literal(i int, lit string) bool {
	return i+len(lit) <= len(e.data) && string(e.data[i:i+len(lit)]) == lit
}

// plainString returns the contents of the JSON string at i when they need
// no decoding (no escape, valid UTF-8), and the index after it.
func (e *encoder) plainString(i int) ([]byte, int, bool) {
	end, escaped, ok := e.scanString(i)
	if !ok || escaped {
		return nil, 0, false
	}
	s := e.data[i+1 : end-1]
	return s, end, utf8.Valid(s)
}

// stringValue returns the contents of the JSON string at i as
// encoding/json decodes them, and the index after it.
func (e *encoder) stringValue(i int) ([]byte, int, bool) {
	end, escaped, ok := e.scanString(i)
	if !ok {
		return nil, 0, false
	}
	s := e.data[i+1 : end-1]
	if !escaped && utf8.Valid(s) {
		return s, end, true
	}
	var dec string
	if err := json.Unmarshal(e.data[i:end], &dec); err != nil {
		return nil, 0, false
	}
	return []byte(dec), end, true
}

// scanString returns the index after the JSON string at i, and whether it
// has escapes; ok is false for no string, or one with a control character.
func (e *encoder) scanString(i int) (end int, escaped, ok bool) {
	if i >= len(e.data) || e.data[i] != '"' {
		return 0, false, false
	}
	for j := i + 1; j < len(e.data); j++ {
		switch c := e.data[j]; {
		case c == '"':
			return j + 1, escaped, true
		case c == '\\':
			escaped = true
			j++
		case c < 0x20:
			return 0, false, false
		}
	}
	return 0, false, false
}

// number returns the JSON number at i (its text), the index after it, and
// whether it is written as an integer (no fraction, no exponent).
func (e *encoder) number(i int) (num []byte, end int, integer, ok bool) {
	d := e.data
	j := i
	if j < len(d) && d[j] == '-' {
		j++
	}
	switch {
	case j < len(d) && d[j] == '0':
		j++
	case j < len(d) && d[j] >= '1' && d[j] <= '9':
		for j < len(d) && d[j] >= '0' && d[j] <= '9' {
			j++
		}
	default:
		return nil, 0, false, false
	}
	integer = true
	if j < len(d) && d[j] == '.' {
		integer = false
		j++
		k := j
		for j < len(d) && d[j] >= '0' && d[j] <= '9' {
			j++
		}
		if j == k {
			return nil, 0, false, false
		}
	}
	if j < len(d) && (d[j] == 'e' || d[j] == 'E') {
		integer = false
		j++
		if j < len(d) && (d[j] == '+' || d[j] == '-') {
			j++
		}
		k := j
		for j < len(d) && d[j] >= '0' && d[j] <= '9' {
			j++
		}
		if j == k {
			return nil, 0, false, false
		}
	}
	return d[i:j], j, integer, true
}

// parseInt is strconv.ParseInt(string(num), 10, bits) for the text of a
// JSON integer, without allocating.
func parseInt(num []byte, bits int) (int64, bool) {
	neg := len(num) > 0 && num[0] == '-'
	if neg {
		num = num[1:]
	}
	u, ok := parseUint(num, 64)
	if !ok {
		return 0, false
	}
	limit := uint64(1) << (bits - 1)
	if !neg && u >= limit || neg && u > limit {
		return 0, false
	}
	if neg {
		return -int64(u), true
	}
	return int64(u), true
}

// parseUint is strconv.ParseUint(string(num), 10, bits) for the text of a
// JSON integer, without allocating.
func parseUint(num []byte, bits int) (uint64, bool) {
	if len(num) == 0 || num[0] == '-' {
		return 0, false
	}
	var u uint64
	for _, c := range num {
		d := uint64(c - '0')
		if u > (math.MaxUint64-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	if bits < 64 && u >= uint64(1)<<bits {
		return 0, false
	}
	return u, true
}

// skip returns the index after the JSON value at i.
func (e *encoder) skip(i, depth int) (int, bool) {
	if i >= len(e.data) || depth > maxDepth {
		return 0, false
	}
	switch c := e.data[i]; {
	case c == '"':
		end, _, ok := e.scanString(i)
		if ok {
			// The value must decode (valid escapes).
			if _, _, ok = e.stringValue(i); !ok {
				return 0, false
			}
		}
		return end, ok
	case c == '{' || c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		i = e.ws(i + 1)
		if i < len(e.data) && e.data[i] == closing {
			return i + 1, true
		}
		for {
			if c == '{' {
				j, ok := e.skip(i, depth+1)
				if !ok || e.data[i] != '"' {
					return 0, false
				}
				if j = e.ws(j); j >= len(e.data) || e.data[j] != ':' {
					return 0, false
				}
				i = e.ws(j + 1)
			}
			j, ok := e.skip(i, depth+1)
			if !ok {
				return 0, false
			}
			if i = e.ws(j); i >= len(e.data) {
				return 0, false
			}
			if e.data[i] == closing {
				return i + 1, true
			}
			if e.data[i] != ',' {
				return 0, false
			}
			i = e.ws(i + 1)
		}
	case e.literal(i, "true"):
		return i + 4, true
	case e.literal(i, "false"):
		return i + 5, true
	case e.literal(i, "null"):
		return i + 4, true
	}
	_, end, _, ok := e.number(i)
	return end, ok
}

// fixLength writes the length of what follows b[start] (a one-byte
// placeholder) as its varint, moving it if the length takes more bytes.
func fixLength(b []byte, start int) []byte {
	n := len(b) - start - 1
	if n < 0x80 {
		b[start] = byte(n)
		return b
	}
	l := uvarintLen(uint64(n))
	b = slices.Grow(b, l-1)[:len(b)+l-1]
	copy(b[start+l:], b[start+1:start+1+n])
	binary.PutUvarint(b[start:], uint64(n))
	return b
}

func appendBytesField[T string | []byte](b, tag []byte, v T) []byte {
	b = append(b, tag...)
	b = appendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func appendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// AppendMember appends to b the message of the member name of data, a
// JSON object of any type (a custom resource's too), encoded as a value of
// m's struct: what Append does for data[name], the other members being
// skipped (they must be valid JSON). A member absent or null appends an
// empty message. ok is false as for Append, or when data is not a JSON
// object, or has the member twice.
func (m *Message) AppendMember(b, data []byte, name string) (out []byte, ok bool) {
	e := encoder{data: data}
	i := e.ws(0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	found := false
	i = e.ws(i + 1)
	if i < len(data) && data[i] == '}' {
		i++
	} else {
		for {
			key, j, ok := e.stringValue(i)
			if !ok {
				return nil, false
			}
			if j = e.ws(j); j >= len(data) || data[j] != ':' {
				return nil, false
			}
			i = e.ws(j + 1)
			switch {
			case string(key) != name:
				i, ok = e.skip(i, 1)
			case found:
				return nil, false
			case e.isNull(i):
				found, i = true, i+4
			default:
				found = true
				b, i, ok = e.object(b, m, i, 1)
			}
			if !ok {
				return nil, false
			}
			if i = e.ws(i); i >= len(data) {
				return nil, false
			}
			if data[i] == '}' {
				i++
				break
			}
			if data[i] != ',' {
				return nil, false
			}
			i = e.ws(i + 1)
		}
	}
	if e.ws(i) != len(data) {
		return nil, false
	}
	return b, true
}
