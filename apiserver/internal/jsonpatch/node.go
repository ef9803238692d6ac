package jsonpatch

import (
	"encoding/json"
	"slices"
	"unicode/utf8"

	"kloop.dev/kloop/apiserver/internal/jsontree"
)

// A node is one JSON value of a document being patched, in v4's lazy
// form: it starts as its text (raw) and is parsed into an object or an
// array only when an operation reaches into it, one level at a time. What
// was parsed matters to the result: v4 encodes a parsed object with its
// keys sorted and its repeated keys merged, a value still in text form as
// that text (compacted).
//
// Unlike v4, parsing a level does not scan the nested values again: the
// first parse of a text indexes all its containers (see index), and each
// level then skips its nested containers in one step. The work is linear
// in the size of the texts, where v4's grows with their size times their
// depth.
//
// A JSON null inside an object or an array is a nil *node (as in v4); a
// node whose raw is nil is the null of an operation's "value": null.
type node struct {
	raw  []byte // the value's text (never written); nil: see above
	kind kind
	obj  map[string]*node // kind objKind; nil for the text null
	ary  []*node          // kind aryKind; nil for the text null
	// idx indexes the text raw is part of, and ent is raw's entry in it
	// (raw a container): set when raw came from parsing its parent, or
	// when raw was first parsed.
	idx *index
	ent int
	// notObj, notAry record that raw is not an object (array), so that
	// equal, which tries both, does not scan it again.
	notObj, notAry bool
}

type kind uint8

const (
	rawKind kind = iota // raw, not parsed
	objKind
	aryKind
)

// index is the structure of one JSON text: an entry per container (object
// or array), in the order they open. For entry e, size[e] is the length of
// the container's text and next[e] the entry that follows all of its own
// nested entries.
type index struct {
	size, next []int
}

// newIndex indexes b, a valid JSON text.
func newIndex(b []byte) *index {
	x := &index{}
	var open []int // entries of the containers open at i
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			open = append(open, len(x.size))
			x.size = append(x.size, i) // its start, until it closes
			x.next = append(x.next, 0)
		case '}', ']':
			e := open[len(open)-1]
			open = open[:len(open)-1]
			x.size[e], x.next[e] = i+1-x.size[e], len(x.size)
		case '"':
			i = stringEnd(b, i) - 1
		}
	}
	return x
}

// stringEnd returns the offset just past the string starting at b[i] ('"').
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// scalarEnd returns the offset just past the number or literal at b[i].
func scalarEnd(b []byte, i int) int {
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// isNull reports whether raw is the text null.
func isNull(raw []byte) bool { return string(raw) == "null" }

// members calls f with each member of the object or element of the array
// whose text is n.raw (a container), in order: key is the member's key
// token (nil for array elements), val its value's node (nil for null).
func (n *node) members(f func(key []byte, val *node)) {
	if n.idx == nil {
		n.idx, n.ent = newIndex(n.raw), 0
	}
	b, x := n.raw, n.idx
	sub := n.ent + 1 // the entry of the next nested container
	i := skipSpace(b, 1)
	for i < len(b) && b[i] != '}' && b[i] != ']' {
		var key []byte
		if b[0] == '{' {
			j := stringEnd(b, i)
			key = b[i:j]
			i = skipSpace(b, j)
			i = skipSpace(b, i+1) // ':'
		}
		var val *node
		switch c := b[i]; c {
		case '{', '[':
			j := i + x.size[sub]
			val = &node{raw: b[i:j:j], idx: x, ent: sub}
			sub = x.next[sub]
			i = j
		case '"':
			j := stringEnd(b, i)
			val = &node{raw: b[i:j:j]}
			i = j
		default:
			j := scalarEnd(b, i)
			if !isNull(b[i:j]) {
				val = &node{raw: b[i:j:j]}
			}
			i = j
		}
		f(key, val)
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
}

// toObj makes n a parsed object if its text is one (or null, which v4
// parses as an object with no members): v4's intoDoc and tryDoc.
func (n *node) toObj() bool {
	switch {
	case n.kind == objKind:
		return true
	case n.raw == nil || n.notObj:
		return false
	case isNull(n.raw):
		n.kind, n.obj, n.ary = objKind, nil, nil
		return true
	case n.raw[0] != '{':
		n.notObj = true
		return false
	}
	obj := map[string]*node{}
	n.members(func(key []byte, val *node) { obj[decodeKey(key)] = val })
	n.kind, n.obj, n.ary = objKind, obj, nil
	return true
}

// toAry makes n a parsed array if its text is one (or null): v4's intoAry
// and tryAry.
func (n *node) toAry() bool {
	switch {
	case n.kind == aryKind:
		return true
	case n.raw == nil || n.notAry:
		return false
	case isNull(n.raw):
		n.kind, n.obj, n.ary = aryKind, nil, nil
		return true
	case n.raw[0] != '[':
		n.notAry = true
		return false
	}
	ary := []*node{}
	n.members(func(_ []byte, val *node) { ary = append(ary, val) })
	n.kind, n.obj, n.ary = aryKind, nil, ary
	return true
}

// decodeKey decodes an object key token as encoding/json does (invalid
// UTF-8 and lone surrogates become U+FFFD).
func decodeKey(tok []byte) string {
	s := tok[1 : len(tok)-1]
	plain := true
	for _, c := range s {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(s)
	}
	var k string
	if err := json.Unmarshal(tok, &k); err != nil {
		return string(s) // cannot happen: tok is a valid string token
	}
	return k
}

// appendJSON appends n's encoding as v4 gives it (json.Marshal of its
// lazy nodes): parsed objects with sorted keys, texts compacted, and
// HTML characters escaped throughout.
func appendJSON(b []byte, n *node) []byte {
	switch {
	case n == nil:
		return append(b, "null"...)
	case n.kind == objKind:
		if n.obj == nil {
			return append(b, "null"...)
		}
		keys := make([]string, 0, len(n.obj))
		for k := range n.obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsontree.AppendString(b, k)
			b = append(b, ':')
			b = appendJSON(b, n.obj[k])
		}
		return append(b, '}')
	case n.kind == aryKind:
		if n.ary == nil {
			return append(b, "null"...)
		}
		b = append(b, '[')
		for i, e := range n.ary {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, e)
		}
		return append(b, ']')
	case n.raw == nil:
		return append(b, "null"...)
	}
	return appendCompact(b, n.raw)
}

const hexDigits = "0123456789abcdef"

// appendCompact appends the valid JSON text src without its white space
// and with <, >, &, U+2028 and U+2029 escaped: json.Marshal of a
// json.RawMessage.
func appendCompact(b, src []byte) []byte {
	inString := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			continue
		case c == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8:
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[src[i+2]&0xF])
			i += 2
			continue
		case inString:
			switch c {
			case '\\':
				b = append(b, c, src[i+1])
				i++
				continue
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		b = append(b, c)
	}
	return b
}
