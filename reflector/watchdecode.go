package reflector

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"

	"k8s.io/apimachinery/pkg/watch"
	kjson "sigs.k8s.io/json"
)

// The fast path of a typed watch stream. The stream is cut into events by a
// bracket- and string-aware scan of the bytes as they arrive (frame), each
// event's envelope — {"type":"…","object":{…}} — is read by hand, and the
// object is decoded by json-iterator, as the items of a typed list are
// (decodeTypedList); an object json-iterator could read differently
// (listCheck) is decoded by apimachinery's decoder instead (decodeItem).
// Whatever else this path does not know for certain — an escape in a key or
// in the type, a repeated or missing object, an ERROR or unknown event, a
// null object, an object that does not decode, a malformed or cut event —
// is not decoded here: the stream, from that event on, goes to the standard
// streaming decoder, so events and errors stay apimachinery's
// (FuzzTypedWatchMatchesStd).

const (
	// watchBufSize is the size of a watch's read buffer; it grows for an
	// event that does not fit.
	watchBufSize = 32 << 10
	// watchBufKeep is the largest buffer kept once the event that needed
	// it was decoded.
	watchBufKeep = 1 << 20
)

// fastWatch holds the state of the fast path of an eventDecoder.
type fastWatch struct {
	r   io.Reader
	buf []byte
	// buf[start:end] are read and not decoded yet; the event being framed
	// starts at start, and its bytes up to start+scan.off were scanned.
	start, end int
	scan       frameScan
	// readErr is the error of the last read (io.EOF at the end): the
	// reader is not read again once it returned an error.
	readErr error
}

// fastTypeOf reports whether objects made by newObj can take the fast path:
// typed objects (pointers to structs) that hold no interface value (whose
// numbers json-iterator would make float64 where apimachinery makes int64).
func fastTypeOf[T Object](newObj func() T) bool {
	t := reflect.TypeOf(newObj())
	return t != nil && t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct &&
		!holdsInterface(t.Elem(), map[reflect.Type]bool{})
}

// frameScan is the progress of the scan for the end of the event at the
// start of the buffer.
type frameScan struct {
	off      int // bytes of the event scanned
	depth    int // open brackets
	inString bool
}

// nextFast decodes the next event on the fast path. ok is false when the
// fast path cannot decode it; nothing of the event was consumed then.
func (d *eventDecoder[T]) nextFast() (ev Event[T], ok bool, err error) {
	f := d.fast
	raw, err := f.frame()
	if err != nil {
		if err == io.EOF {
			return ev, true, io.EOF
		}
		if errors.Is(err, errNotFast) {
			return ev, false, nil
		}
		return ev, true, fmt.Errorf("decoding watch event: %w", err)
	}
	typ, obj, good := envelope(raw)
	if !good || !isObjectEvent(watch.EventType(typ)) || bytes.Equal(obj, []byte("null")) {
		return ev, false, nil
	}
	if o, ok := decodeItem(obj, d.newObj, d.dropMF); ok {
		f.consume(len(raw))
		return Event[T]{Type: watch.EventType(typ), Object: o}, true, nil
	}
	return ev, false, nil // malformed, or a value of the wrong type: the streaming decoder's error
}

// decodeItem decodes one object of a typed list or watch (raw, a complete
// JSON value, not null): with json-iterator, or, when json-iterator could
// read it differently (listCheck: a \u escape — kube-apiserver's encoder
// writes <, > and & that way —, invalid UTF-8, a long integer), with
// apimachinery's decoder. ok is false when the object does not decode
// (the caller lets the standard path report it).
//
// dropMF: metadata.managedFields is skipped (typedJSONDropMF); on
// apimachinery's path it is decoded, and the caller clears it.
//
// A panic of a value's own UnmarshalJSON (IntOrString's indexes its input)
// is a failure too: the standard path then reports the object's error.
func decodeItem[T Object](raw []byte, newObj func() T, dropMF bool) (o T, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	o = newObj()
	var chk listCheck
	if chk.scan(raw); chk.risky {
		return o, kjson.UnmarshalCaseSensitivePreserveInts(raw, o) == nil
	}
	if dropMF {
		return o, typedJSONDropMF.Unmarshal(raw, o) == nil
	}
	return o, typedJSON.Unmarshal(raw, o) == nil
}

// errNotFast: the bytes at the start of the buffer are not an event the
// fast path frames.
var errNotFast = errors.New("not a plain watch event")

// frame returns the bytes of the next event (a JSON object), reading more
// as needed; io.EOF when the stream ended cleanly between events, errNotFast
// when what follows is not a complete JSON object.
func (f *fastWatch) frame() ([]byte, error) {
	for {
		// Whitespace between events is consumed here, as the standard
		// decoder does.
		for f.start < f.end && isSpace(f.buf[f.start]) {
			f.start++
		}
		if f.start < f.end {
			if f.buf[f.start] != '{' {
				return nil, errNotFast
			}
			if n, done, bad := f.scan.run(f.buf[f.start:f.end]); bad {
				return nil, errNotFast
			} else if done {
				return f.buf[f.start : f.start+n], nil
			}
		}
		if f.readErr != nil {
			if f.readErr == io.EOF && f.start == f.end {
				return nil, io.EOF
			}
			if f.readErr == io.EOF {
				return nil, errNotFast // cut inside an event: the standard decoder's error
			}
			return nil, f.readErr
		}
		f.fill()
	}
}

// fill reads more bytes into the buffer, making room first.
func (f *fastWatch) fill() {
	if f.buf == nil {
		f.buf = make([]byte, watchBufSize)
	}
	if f.end == len(f.buf) {
		n := f.end - f.start
		if n < len(f.buf)/2 {
			copy(f.buf, f.buf[f.start:f.end])
		} else {
			nb := make([]byte, 2*len(f.buf))
			copy(nb, f.buf[f.start:f.end])
			f.buf = nb
		}
		f.start, f.end = 0, n
	}
	n, err := f.r.Read(f.buf[f.end:])
	f.end += n
	if err != nil {
		f.readErr = err
	}
}

// consume drops the n bytes of the event just decoded.
func (f *fastWatch) consume(n int) {
	f.start += n
	f.scan = frameScan{}
	switch {
	case len(f.buf) > watchBufKeep && f.end-f.start <= watchBufSize/2:
		// A large event was decoded: back to a buffer of the usual size.
		nb := make([]byte, watchBufSize)
		f.start, f.end, f.buf = 0, copy(nb, f.buf[f.start:f.end]), nb
	case f.start == f.end:
		f.start, f.end = 0, 0
	}
}

// rest returns the bytes read and not decoded, then the rest of the stream:
// what the standard decoder reads when the fast path gives up.
func (f *fastWatch) rest() io.Reader {
	pending := bytes.NewReader(bytes.Clone(f.buf[f.start:f.end]))
	if f.readErr != nil {
		return io.MultiReader(pending, errReader{f.readErr})
	}
	return io.MultiReader(pending, f.r)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// run scans b, the buffered bytes of the event (an object: b[0] is '{'),
// from where the last call stopped. It returns the event's length when its
// closing bracket is in b; bad when the brackets do not match.
func (s *frameScan) run(b []byte) (n int, done, bad bool) {
	i := s.off
	for i < len(b) {
		if s.inString {
			j := bytes.IndexByte(b[i:], '"')
			if j < 0 {
				i = len(b)
				break
			}
			q := i + j
			k := q
			for b[k-1] == '\\' { // b[0] is '{': never past the start
				k--
			}
			i = q + 1
			if (q-k)%2 == 0 {
				s.inString = false
			}
			continue
		}
		switch b[i] {
		case '"':
			s.inString = true
		case '{', '[':
			s.depth++
		case '}', ']':
			s.depth--
			if s.depth == 0 {
				return i + 1, true, false
			}
			if s.depth < 0 {
				return 0, false, true
			}
		}
		i++
	}
	s.off = i
	return 0, false, false
}

// envelope reads a watch event {"type":"…","object":…} (any order, other
// keys skipped). good is false for anything else: a key or type with an
// escape, a type that is not a string, no object or two, malformed JSON
// around the values (the object's own grammar is its decoder's to check).
func envelope(b []byte) (typ string, obj []byte, good bool) {
	i := skipSpace(b, 1) // b[0] is '{'
	haveType := false
	if i < len(b) && b[i] == '}' {
		return "", nil, false
	}
	for {
		key, next, ok := plainString(b, i)
		if !ok {
			return "", nil, false
		}
		i = skipSpace(b, next)
		if i >= len(b) || b[i] != ':' {
			return "", nil, false
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return "", nil, false
		}
		switch string(key) {
		case "type":
			v, next, ok := plainString(b, i)
			if !ok || haveType {
				return "", nil, false
			}
			typ, haveType, i = string(v), true, next
		case "object":
			end := skipJSON(b, i)
			if end < 0 || obj != nil {
				return "", nil, false
			}
			obj, i = b[i:end], end
		default:
			end := skipJSON(b, i)
			if end < 0 || !json.Valid(b[i:end]) {
				return "", nil, false
			}
			i = end
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return "", nil, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
			continue
		case '}':
			if i+1 != len(b) || obj == nil || !haveType {
				return "", nil, false
			}
			return typ, obj, true
		default:
			return "", nil, false
		}
	}
}

// plainString reads the JSON string at b[i] when it has no escape and is
// valid UTF-8 (its bytes are then its value); it returns the index after it.
func plainString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	j := bytes.IndexByte(b[i+1:], '"')
	if j < 0 {
		return nil, 0, false
	}
	s = b[i+1 : i+1+j]
	for _, c := range s {
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return nil, 0, false
		}
	}
	return s, i + 2 + j, true
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }
