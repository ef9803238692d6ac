package reflector

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

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
