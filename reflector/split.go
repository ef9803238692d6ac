package reflector

import "bytes"

// listSplitter cuts a list response into its parts while it is read, chunk
// by chunk, without joining the chunks: each item's bytes are handed to item
// as soon as the item is complete (in order), as a slice of the chunk that
// holds it — only a token cut by a chunk boundary is copied. It checks the
// grammar of the list object and of its items array; the values themselves
// are checked by their decoding. Anything else — not an object, a key with
// an escape, a repeated field (items twice, too), trailing bytes, malformed
// JSON the pass notices — leaves it in splitBad, and the caller lets
// apimachinery's decoding answer.
type listSplitter struct {
	item  func([]byte)
	state splitState
	parts listParts
	// key is the current top-level key (raw, without quotes); seen the keys
	// met so far.
	key  []byte
	seen map[string]bool
	// carry is an incomplete token at the end of the bytes fed so far.
	carry []byte
	// window is how much of the next chunk is first joined to a carried
	// token to complete it (doubled until the token completes). Default
	// (0): defaultCarryWindow.
	window int
}

type splitState uint8

const (
	splitStart      splitState = iota // before the list object: '{'
	splitFirstKey                     // after '{': a key or '}'
	splitKey                          // after ',': a key
	splitColon                        // after a key: ':'
	splitValue                        // after ':': the key's value
	splitAfterValue                   // ',' or '}'
	splitFirstItem                    // after "items":[ — an item or ']'
	splitItem                         // after ',' in items: an item
	splitAfterItem                    // ',' or ']'
	splitEnd                          // after the list object: whitespace only
	splitBad
)

// listParts are the parts of a list response decodeTypedList decodes
// besides its items: the bytes of its kind and metadata values (nil when
// absent); rest is the list's other fields as one JSON object, for a check
// of their grammar (small: kind, apiVersion, metadata).
type listParts struct {
	kind, metadata []byte
	rest           []byte
}

// feed takes the next bytes of the response; final says no more follow
// (c may then be empty). After the final feed, done reports the outcome.
func (s *listSplitter) feed(c []byte, final bool) {
	if s.state == splitBad {
		return
	}
	if len(s.carry) > 0 {
		// Complete the token cut by the boundary on a copy of it and of
		// as little of c as it takes; then go on in c itself.
		carried := len(s.carry)
		window := s.window
		if window <= 0 {
			window = defaultCarryWindow
		}
		for w := min(len(c), window); ; w = min(len(c), 2*w) {
			joined := append(s.carry[:carried:carried], c[:w]...)
			last := final && w == len(c)
			n := s.step(joined, last, carried)
			if s.state == splitBad {
				return
			}
			if n > carried {
				c = c[n-carried:]
				s.carry = nil
				break
			}
			if w == len(c) { // still cut (step failed it if this was the end)
				s.carry = nil
				if n < len(joined) {
					s.carry = joined[n:]
				}
				return
			}
		}
	}
	n := s.step(c, final, len(c)+1)
	if s.state == splitBad || n == len(c) {
		return
	}
	if final {
		s.state = splitBad // an incomplete token at the very end
		return
	}
	s.carry = append([]byte(nil), c[n:]...)
}

// done reports whether the response was one complete list object.
func (s *listSplitter) done() bool { return s.state == splitEnd && len(s.carry) == 0 }

// step consumes the complete tokens of b from its start and returns the
// index after the last one: at a token cut by the end of b (unless final),
// or as soon as it has passed stopAt.
func (s *listSplitter) step(b []byte, final bool, stopAt int) int {
	i := 0
	for {
		i = skipSpace(b, i)
		if i > stopAt || i >= len(b) {
			return i
		}
		c := b[i]
		switch s.state {
		case splitStart:
			if c != '{' {
				s.state = splitBad
				return i
			}
			s.parts.rest = append(s.parts.rest[:0], '{')
			s.state = splitFirstKey
			i++
		case splitFirstKey, splitKey:
			if c == '}' && s.state == splitFirstKey {
				s.parts.rest = append(s.parts.rest, '}')
				s.state = splitEnd
				i++
				continue
			}
			if c != '"' {
				s.state = splitBad
				return i
			}
			end := skipJSONString(b, i)
			if end < 0 {
				return s.cut(i, final)
			}
			key := b[i+1 : end-1]
			if bytes.IndexByte(key, '\\') >= 0 || s.seen[string(key)] {
				s.state = splitBad
				return i
			}
			if s.seen == nil {
				s.seen = map[string]bool{}
			}
			s.seen[string(key)] = true
			s.key = append(s.key[:0], key...)
			s.state = splitColon
			i = end
		case splitColon:
			if c != ':' {
				s.state = splitBad
				return i
			}
			s.state = splitValue
			i++
		case splitValue:
			if string(s.key) == "items" && c == '[' {
				s.state = splitFirstItem
				i++
				continue
			}
			end, complete := scanValue(b, i, final)
			if end < 0 {
				s.state = splitBad
				return i
			}
			if !complete {
				return s.cut(i, final)
			}
			v := b[i:end]
			switch string(s.key) {
			case "items":
				if string(v) != "null" {
					s.state = splitBad
					return i
				}
			case "kind":
				s.parts.kind = v
			case "metadata":
				s.parts.metadata = v
			}
			if string(s.key) != "items" {
				if len(s.parts.rest) > 1 {
					s.parts.rest = append(s.parts.rest, ',')
				}
				s.parts.rest = append(s.parts.rest, '"')
				s.parts.rest = append(s.parts.rest, s.key...)
				s.parts.rest = append(s.parts.rest, '"', ':')
				s.parts.rest = append(s.parts.rest, v...)
			}
			s.state = splitAfterValue
			i = end
		case splitAfterValue:
			switch c {
			case ',':
				s.state = splitKey
			case '}':
				s.parts.rest = append(s.parts.rest, '}')
				s.state = splitEnd
			default:
				s.state = splitBad
				return i
			}
			i++
		case splitFirstItem, splitItem:
			if c == ']' && s.state == splitFirstItem {
				s.state = splitAfterValue
				i++
				continue
			}
			end, complete := scanValue(b, i, final)
			if end < 0 {
				s.state = splitBad
				return i
			}
			if !complete {
				return s.cut(i, final)
			}
			s.item(b[i:end])
			s.state = splitAfterItem
			i = end
		case splitAfterItem:
			switch c {
			case ',':
				s.state = splitItem
			case ']':
				s.state = splitAfterValue
			default:
				s.state = splitBad
				return i
			}
			i++
		case splitEnd:
			s.state = splitBad // trailing bytes
			return i
		default:
			return i
		}
	}
}

// cut handles a token at b[i:] that the end of the bytes cuts: it waits for
// more, or at the very end, fails.
func (s *listSplitter) cut(i int, final bool) int {
	if final {
		s.state = splitBad
	}
	return i
}

// scanValue returns the index after the value starting at b[i] and whether
// it is complete in b; -1 if no value starts there. A number or literal
// reaching the end of b is complete only when final.
func scanValue(b []byte, i int, final bool) (end int, complete bool) {
	switch b[i] {
	case '"', '{', '[':
		if end := skipJSON(b, i); end >= 0 {
			return end, true
		}
		return i, false // cut by the end of b
	}
	end = skipJSON(b, i)
	if end < 0 {
		return -1, false // a delimiter where a value should be
	}
	return end, end < len(b) || final
}
