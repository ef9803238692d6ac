package reflector

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"

	jsoniter "github.com/json-iterator/go"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"
	kjson "sigs.k8s.io/json"
)

// decoder is the streaming JSON decoder the list and watch decoders use:
// encoding/json's (with UseNumber) for unstructured objects, the
// case-sensitive one of sigs.k8s.io/json for typed objects.
type decoder interface {
	Decode(v any) error
	Token() (json.Token, error)
	More() bool
}

// newDecoder returns the decoder for r.
func newDecoder(r io.Reader, isUnstructured bool) decoder {
	if isUnstructured {
		dec := json.NewDecoder(r)
		dec.UseNumber()
		return dec
	}
	return kjson.NewDecoderCaseSensitivePreserveInts(r)
}

// The decoders below read the JSON the API server sends without building
// an intermediate tree: the list's items and each watch event's object are
// decoded straight into the caller's objects, in one pass over the stream.
// For *unstructured.Unstructured, numbers are then converted to int64 (or
// float64 when not integral) as apimachinery's decoding makes them.
// Typed objects are decoded by sigs.k8s.io/json's case-sensitive decoder,
// the one apimachinery's JSON serializer uses: keys match json tags
// exactly (encoding/json would also accept "Metadata" or "SPEC"), and it is
// faster than encoding/json for that reason.

// decodeList decodes a list response:
// {"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"..","continue":".."},"items":[...]}.
func decodeList[T Object](r io.Reader, newObj func() T, isUnstructured bool, gv schema.GroupVersion) (*List[T], error) {
	if !isUnstructured {
		return decodeTypedList(r, newObj)
	}
	return decodeStdList(r, newObj, isUnstructured, gv)
}

// decodeStdList is decodeList with encoding/json (unstructured objects) or
// sigs.k8s.io/json (typed objects).
func decodeStdList[T Object](r io.Reader, newObj func() T, isUnstructured bool, gv schema.GroupVersion) (*List[T], error) {
	dec := newDecoder(bufio.NewReaderSize(r, 32<<10), isUnstructured)
	if err := expectDelim(dec, '{'); err != nil {
		return nil, fmt.Errorf("decoding list: %w", err)
	}
	list := &List[T]{}
	var kind, apiVersion string
	for dec.More() {
		k, err := objectKey(dec)
		if err != nil {
			return nil, fmt.Errorf("decoding list: %w", err)
		}
		switch k {
		case "kind":
			err = dec.Decode(&kind)
		case "apiVersion":
			err = dec.Decode(&apiVersion)
		case "metadata":
			var m metav1.ListMeta
			if err = dec.Decode(&m); err == nil {
				list.ResourceVersion, list.Continue = m.ResourceVersion, m.Continue
			}
		case "items":
			list.Items, err = decodeItems(dec, newObj, isUnstructured)
		default:
			err = skipValue(dec)
		}
		if err != nil {
			return nil, fmt.Errorf("decoding list field %q: %w", k, err)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, fmt.Errorf("decoding list: %w", err)
	}
	if kind == "Status" {
		return nil, errors.New("decoding list: the server sent a Status instead of a list")
	}
	if isUnstructured {
		// Items of built-in lists carry no kind or apiVersion: take them
		// from the list.
		itemKind := strings.TrimSuffix(kind, "List")
		if apiVersion == "" {
			apiVersion = gv.String()
		}
		for _, it := range list.Items {
			u := any(it).(*unstructured.Unstructured)
			if u.GetKind() == "" && itemKind != "" {
				u.SetKind(itemKind)
			}
			if u.GetAPIVersion() == "" {
				u.SetAPIVersion(apiVersion)
			}
		}
	}
	return list, nil
}

func decodeItems[T Object](dec decoder, newObj func() T, isUnstructured bool) ([]T, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, nil // "items": null
	}
	if d, ok := t.(json.Delim); !ok || d != '[' {
		return nil, fmt.Errorf("want an array, got %v", t)
	}
	var items []T
	for dec.More() {
		obj := newObj()
		if err := decodeObject(dec, obj, isUnstructured); err != nil {
			return nil, fmt.Errorf("item %d: %w", len(items), err)
		}
		items = append(items, obj)
	}
	if err := expectDelim(dec, ']'); err != nil {
		return nil, err
	}
	return items, nil
}

// decodeObject decodes the next value of dec into obj.
func decodeObject[T Object](dec decoder, obj T, isUnstructured bool) error {
	if isUnstructured {
		// The decoder was made with UseNumber: numbers become int64 or
		// float64 as in apimachinery's decoding, in one pass over the
		// stream and one over the map.
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return err
		}
		if m == nil {
			return errors.New("null object")
		}
		if err := utiljson.ConvertMapNumbers(m, 0); err != nil {
			return err
		}
		any(obj).(*unstructured.Unstructured).Object = m
		return nil
	}
	return dec.Decode(obj)
}

// eventDecoder decodes a watch stream: a sequence of
// {"type":"ADDED","object":{...}} documents.
type eventDecoder[T Object] struct {
	dec            decoder
	newObj         func() T
	isUnstructured bool
}

func newEventDecoder[T Object](r io.Reader, newObj func() T, isUnstructured bool) *eventDecoder[T] {
	dec := newDecoder(bufio.NewReaderSize(r, 32<<10), isUnstructured)
	return &eventDecoder[T]{dec: dec, newObj: newObj, isUnstructured: isUnstructured}
}

// next returns the next event, io.EOF at the clean end of the stream.
func (d *eventDecoder[T]) next() (Event[T], error) {
	var ev Event[T]
	t, err := d.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return ev, io.EOF
		}
		return ev, fmt.Errorf("decoding watch event: %w", err)
	}
	if dl, ok := t.(json.Delim); !ok || dl != '{' {
		return ev, fmt.Errorf("decoding watch event: want an object, got %v", t)
	}
	ev, err = d.event()
	if errors.Is(err, io.EOF) {
		// The stream ended inside an event: it was cut, not closed.
		err = fmt.Errorf("decoding watch event: %w", io.ErrUnexpectedEOF)
	}
	return ev, err
}

// event decodes the rest of an event after its opening brace.
func (d *eventDecoder[T]) event() (Event[T], error) {
	var ev Event[T]
	var raw json.RawMessage // the object when it comes before the type
	haveObject := false
	for d.dec.More() {
		k, err := objectKey(d.dec)
		if err != nil {
			return ev, fmt.Errorf("decoding watch event: %w", err)
		}
		switch k {
		case "type":
			var s string
			if err := d.dec.Decode(&s); err != nil {
				return ev, fmt.Errorf("decoding watch event type: %w", err)
			}
			ev.Type = watch.EventType(s)
		case "object":
			if haveObject {
				return ev, errors.New("decoding watch event: two objects")
			}
			haveObject = true
			if isObjectEvent(ev.Type) {
				// The usual order: type first, so decode in one pass.
				ev.Object = d.newObj()
				if err := decodeObject(d.dec, ev.Object, d.isUnstructured); err != nil {
					return ev, fmt.Errorf("decoding %s watch event object: %w", ev.Type, err)
				}
				continue
			}
			if err := d.dec.Decode(&raw); err != nil {
				return ev, fmt.Errorf("decoding watch event object: %w", err)
			}
		default:
			if err := skipValue(d.dec); err != nil {
				return ev, fmt.Errorf("decoding watch event: %w", err)
			}
		}
	}
	if err := expectDelim(d.dec, '}'); err != nil {
		return ev, fmt.Errorf("decoding watch event: %w", err)
	}
	if !haveObject {
		return ev, fmt.Errorf("decoding %q watch event: no object", ev.Type)
	}
	switch {
	case ev.Type == watch.Error:
		st := &metav1.Status{}
		if err := json.Unmarshal(raw, st); err != nil {
			return ev, fmt.Errorf("decoding ERROR watch event status: %w", err)
		}
		ev.Status = st
	case !isObjectEvent(ev.Type):
		return ev, fmt.Errorf("decoding watch event: unknown type %q", ev.Type)
	case raw != nil:
		// The object came before the type.
		ev.Object = d.newObj()
		od := newDecoder(bytes.NewReader(raw), d.isUnstructured)
		if err := decodeObject(od, ev.Object, d.isUnstructured); err != nil {
			return ev, fmt.Errorf("decoding %s watch event object: %w", ev.Type, err)
		}
	}
	return ev, nil
}

func isObjectEvent(t watch.EventType) bool {
	switch t {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		return true
	}
	return false
}

func objectKey(dec decoder) (string, error) {
	t, err := dec.Token()
	if err != nil {
		return "", err
	}
	k, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("want an object key, got %v", t)
	}
	return k, nil
}

func expectDelim(dec decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %v, got %v", want, t)
	}
	return nil
}

// skipValue consumes the next value of dec.
func skipValue(dec decoder) error {
	var v json.RawMessage
	return dec.Decode(&v)
}

// typedJSON is json-iterator configured to match keys case-sensitively, as
// apimachinery does. It only caches per-type decoders (as encoding/json
// does internally); nothing about it changes after creation.
var typedJSON = jsoniter.Config{CaseSensitive: true}.Froze()

// decodeTypedList decodes a list of typed objects with json-iterator
// (about 2.4 times faster than encoding/json or sigs.k8s.io/json on Pods),
// from the whole response (a page) in memory. A list json-iterator could
// read differently from apimachinery — see listCheck; or items of a type
// holding interface values — or that it refuses, is decoded by decodeStdList
// instead, so results and errors are apimachinery's
// (FuzzTypedDecodeMatchesAPIMachinery, FuzzTypedCRDecodeMatchesAPIMachinery).
func decodeTypedList[T Object](r io.Reader, newObj func() T) (*List[T], error) {
	// The page in memory, in chunks (one contiguous buffer grown by
	// doubling would touch three times as much fresh memory), checked as
	// it arrives.
	var chunks [][]byte
	var chk listCheck
	for size := 32 << 10; ; size = min(2*size, 1<<20) {
		c := make([]byte, size)
		n, err := io.ReadFull(r, c)
		if n > 0 {
			chunks = append(chunks, c[:n])
			chk.scan(c[:n])
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("decoding list: %w", err)
		}
	}
	body := func() io.Reader {
		rs := make([]io.Reader, len(chunks))
		for i, c := range chunks {
			rs[i] = bytes.NewReader(c)
		}
		return io.MultiReader(rs...)
	}
	std := func() (*List[T], error) {
		return decodeStdList(body(), newObj, false, schema.GroupVersion{})
	}
	if t := reflect.TypeOf(newObj()); t.Kind() != reflect.Pointer || holdsInterface(t.Elem(), map[reflect.Type]bool{}) {
		// json-iterator makes numbers in interface values float64 where
		// apimachinery makes integers int64.
		return std()
	}
	if chk.risky {
		return std()
	}
	it := jsoniter.Parse(typedJSON, body(), 32<<10)
	if it.WhatIsNext() != jsoniter.ObjectValue {
		return std()
	}
	list := &List[T]{}
	var kind string
	it.ReadObjectCB(func(it *jsoniter.Iterator, k string) bool {
		switch k {
		case "kind":
			kind = it.ReadString()
		case "metadata":
			var m metav1.ListMeta
			it.ReadVal(&m)
			list.ResourceVersion, list.Continue = m.ResourceVersion, m.Continue
		case "items":
			list.Items = nil
			if it.ReadNil() {
				return true
			}
			it.ReadArrayCB(func(it *jsoniter.Iterator) bool {
				obj := newObj()
				if !it.ReadNil() {
					it.ReadVal(obj)
				}
				list.Items = append(list.Items, obj)
				return it.Error == nil
			})
		default:
			it.Skip()
		}
		return it.Error == nil
	})
	if it.Error != nil {
		return std() // apimachinery's answer: an error, or what it makes of it
	}
	if kind == "Status" {
		return nil, errors.New("decoding list: the server sent a Status instead of a list")
	}
	return list, nil
}

// listCheck scans a list's bytes, in consecutive pieces, for what
// json-iterator could read differently from apimachinery: a \u escape,
// bytes that are not valid UTF-8 (encoding/json replaces invalid sequences
// by U+FFFD; a sequence cut between two pieces counts too, which only costs
// speed), and numbers (outside strings) with a run of 10 digits or more:
// json-iterator reads up to 9 digits exactly and checks the range of every
// integer type on them, but can let longer integers overflow an int32 or an
// int64 without an error.
type listCheck struct {
	risky            bool
	inString, escape bool
	run              int
}

func (c *listCheck) scan(b []byte) {
	if c.risky {
		return
	}
	if !utf8.Valid(b) {
		c.risky = true
		return
	}
	for _, ch := range b {
		switch {
		case c.escape:
			c.escape = false
			if ch == 'u' {
				c.risky = true
				return
			}
		case c.inString:
			if ch == '\\' {
				c.escape = true
			} else if ch == '"' {
				c.inString = false
			}
		case ch == '"':
			c.inString, c.run = true, 0
		case ch >= '0' && ch <= '9':
			if c.run++; c.run >= 10 {
				c.risky = true
				return
			}
		default:
			c.run = 0
		}
	}
}

// holdsInterface reports whether a value of type t can hold an interface
// value decoded from JSON (not below a type that decodes itself).
func holdsInterface(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return false
	}
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return holdsInterface(t.Elem(), seen)
	case reflect.Map:
		return holdsInterface(t.Key(), seen) || holdsInterface(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); (f.IsExported() || f.Anonymous) && holdsInterface(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
