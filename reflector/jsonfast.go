package reflector

import (
	"bytes"
	"strings"
	"time"
	"unsafe"

	jsoniter "github.com/json-iterator/go"
	"github.com/modern-go/reflect2"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// typedJSON is json-iterator configured to match keys case-sensitively, as
// apimachinery does, with decoders of its own for the two value types every
// object is full of (metav1.Time, resource.Quantity): json-iterator would
// copy their bytes and call their UnmarshalJSON, which decodes them once
// more. They read the value in place and give what UnmarshalJSON gives; what
// they are unsure of is an error, and an error sends the object to
// apimachinery's decoding (FuzzTypedDecodeMatchesAPIMachinery). The config
// only caches per-type decoders (as encoding/json does internally); nothing
// about it changes after this initialization.
var typedJSON = func() jsoniter.API {
	api := jsoniter.Config{CaseSensitive: true}.Froze()
	api.RegisterExtension(&valueTypes{})
	return api
}()

// typedJSONDropMF is typedJSON that skips metadata.managedFields (see
// RESTOptions.DropManagedFields): the value is checked as JSON, not
// decoded, and the field stays nil.
var typedJSONDropMF = func() jsoniter.API {
	api := jsoniter.Config{CaseSensitive: true}.Froze()
	api.RegisterExtension(&valueTypes{dropManagedFields: true})
	return api
}()

type valueTypes struct {
	jsoniter.DummyExtension
	dropManagedFields bool
}

var (
	timeType     = reflect2.TypeOf(metav1.Time{})
	quantityType = reflect2.TypeOf(resource.Quantity{})
)

func (v *valueTypes) CreateDecoder(typ reflect2.Type) jsoniter.ValDecoder {
	switch typ {
	case timeType:
		return timeDecoder{}
	case quantityType:
		return quantityDecoder{}
	case managedFieldsType:
		if v.dropManagedFields {
			return skipDecoder{}
		}
	case stringMapType:
		return stringMapDecoder{}
	}
	return nil
}

var stringMapType = reflect2.TypeOf(map[string]string(nil))

// stringMapDecoder decodes a map[string]string (labels, annotations, a
// ConfigMap's data, node selectors, a CR's parameters) as json-iterator's
// own map decoder reads it — null is a nil map, {} an empty one, a later
// duplicate key wins — without its two allocations per entry (a key and a
// value temporary, on top of the strings themselves), and into a map made
// for its number of entries (collected first, on the stack for up to 16),
// not grown as it fills.
type stringMapDecoder struct{}

// stringPair is one entry of a map being decoded.
type stringPair struct{ k, v string }

func (stringMapDecoder) Decode(ptr unsafe.Pointer, iter *jsoniter.Iterator) {
	m := (*map[string]string)(ptr)
	switch iter.WhatIsNext() {
	case jsoniter.NilValue:
		iter.ReadNil()
		*m = nil
		return
	case jsoniter.ObjectValue:
	default:
		iter.ReportError("map[string]string", "not an object")
		return
	}
	var buf [16]stringPair
	pairs := buf[:0]
	iter.ReadMapCB(func(iter *jsoniter.Iterator, k string) bool {
		if k == "" && len(pairs) > 0 {
			// json-iterator reads a key after a comma with ReadString,
			// which takes null for "": {"a":"1",null:"2"} is not JSON,
			// and apimachinery refuses it. An empty key there (rare: no
			// label, annotation or data key may be empty) is left to
			// apimachinery's decoding, which decides.
			iter.ReportError("map[string]string", "empty key after the first")
			return false
		}
		pairs = append(pairs, stringPair{k, iter.ReadString()})
		return iter.Error == nil
	})
	if iter.Error != nil {
		return
	}
	if *m == nil {
		*m = make(map[string]string, len(pairs))
	}
	for _, p := range pairs {
		(*m)[p.k] = p.v
	}
}

var managedFieldsType = reflect2.TypeOf([]metav1.ManagedFieldsEntry(nil))

// skipDecoder skips a value (json-iterator's Skip checks its grammar),
// leaving the field as it is (nil in a new object).
type skipDecoder struct{}

func (skipDecoder) Decode(_ unsafe.Pointer, iter *jsoniter.Iterator) { iter.Skip() }

// plainSlice reads a string's bytes as they are in the input when it has no
// escape; ok is false (and an error reported) otherwise.
func plainSlice(iter *jsoniter.Iterator, what string) (b []byte, ok bool) {
	b = iter.ReadStringAsSlice() // up to the first quote, unescaped: see below
	if iter.Error != nil {
		return nil, false
	}
	if bytes.IndexByte(b, '\\') >= 0 {
		iter.ReportError(what, "escaped string")
		return nil, false
	}
	return b, true
}

// timeDecoder decodes a metav1.Time as its UnmarshalJSON does: null is the
// zero time, a string is an RFC 3339 time made local.
type timeDecoder struct{}

func (timeDecoder) Decode(ptr unsafe.Pointer, iter *jsoniter.Iterator) {
	t := (*metav1.Time)(ptr)
	switch iter.WhatIsNext() {
	case jsoniter.NilValue:
		iter.ReadNil()
		t.Time = time.Time{}
	case jsoniter.StringValue:
		b, ok := plainSlice(iter, "metav1.Time")
		if !ok {
			return
		}
		// The bytes are only read during the call (an error's text is
		// copied by ReportError).
		pt, err := time.Parse(time.RFC3339, unsafe.String(unsafe.SliceData(b), len(b)))
		if err != nil {
			iter.ReportError("metav1.Time", err.Error())
			return
		}
		t.Time = pt.Local()
	default:
		iter.ReportError("metav1.Time", "not a string")
	}
}

// quantityDecoder decodes a resource.Quantity as its UnmarshalJSON does: a
// string's bytes (not unescaped) or a number's text, space trimmed, parsed.
type quantityDecoder struct{}

func (quantityDecoder) Decode(ptr unsafe.Pointer, iter *jsoniter.Iterator) {
	q := (*resource.Quantity)(ptr)
	var s string
	switch iter.WhatIsNext() {
	case jsoniter.NilValue:
		iter.ReadNil()
		if err := q.UnmarshalJSON([]byte("null")); err != nil {
			iter.ReportError("resource.Quantity", err.Error())
		}
		return
	case jsoniter.StringValue:
		b, ok := plainSlice(iter, "resource.Quantity")
		if !ok {
			return
		}
		s = string(b)
	case jsoniter.NumberValue:
		s = string(iter.ReadNumber())
	default:
		iter.ReportError("resource.Quantity", "not a string or a number")
		return
	}
	parsed, err := resource.ParseQuantity(strings.TrimSpace(s))
	if err != nil {
		iter.ReportError("resource.Quantity", err.Error())
		return
	}
	*q = parsed
}
