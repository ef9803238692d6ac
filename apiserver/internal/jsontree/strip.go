package jsontree

import "bytes"

// StripTypeMeta removes the top-level "apiVersion" and "kind" members of a
// compact JSON object (as encoding/json writes it) without decoding it.
func StripTypeMeta(b []byte) []byte {
	out := make([]byte, 0, len(b))
	depth, inString, escaped := 0, false, false
	memberStart := -1 // index in b of the current top-level member's first byte
	skip := false     // the current top-level member is dropped
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			if !skip {
				out = append(out, c)
			}
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if depth == 1 && (c == ',' || c == '}') {
			if skip {
				skip = false
				if c == '}' {
					// Drop the comma that preceded the dropped last member.
					if n := len(out); n > 1 && out[n-1] == ',' {
						out = out[:n-1]
					}
				}
				if c == ',' {
					memberStart = i + 1
					continue
				}
			}
		}
		if depth == 1 && i == memberStart && c == '"' {
			if bytes.HasPrefix(b[i:], []byte(`"apiVersion":`)) || bytes.HasPrefix(b[i:], []byte(`"kind":`)) {
				skip = true
			}
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth == 1 {
				memberStart = i + 1
			}
		case '}', ']':
			depth--
		case ',':
			if depth == 1 {
				memberStart = i + 1
			}
		}
		if !skip {
			out = append(out, c)
		}
	}
	return out
}
