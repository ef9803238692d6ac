package typed

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"kloop.dev/kloop/apiserver/internal/jsontree"
)

// shape is how a Schema checks a value.
type shape int

const (
	opaque shape = iota // any value present: not handled
	stringShape
	boolShape
	intShape // signed integer of bits bits
	uintShape
	bytesShape // []byte: base64
	timeShape  // metav1.Time, metav1.MicroTime: a UTC timestamp in layout
	pointerShape
	mapShape // map with string keys
	sliceShape
	structShape
	rawShape // metav1.FieldsV1: any JSON value but null, kept as it is
)

// Schema describes how values of one Go type decode from JSON and encode
// back, for Check. It is immutable, and safe for concurrent use.
type Schema struct {
	shape  shape
	bits   int     // intShape, uintShape
	layout string  // timeShape
	elem   *Schema // pointerShape, mapShape, sliceShape
	// fields of a struct by JSON name (embedded structs' fields included).
	fields map[string]*field
	// zero is the JSON tree a zero value of the struct encodes to: an
	// absent field encodes as zero[name], or not at all when zero has no
	// such key.
	zero map[string]any
}

// field is one JSON field of a struct.
type field struct {
	s *Schema
	// omit: the field is left out when empty (omitempty) or zero
	// (omitzero), so such values do not round trip.
	omit bool
	// omitZero: omitzero, which also leaves out zero structs.
	omitZero bool
}

var (
	timeType            = reflect.TypeFor[metav1.Time]()
	fieldsV1Type        = reflect.TypeFor[metav1.FieldsV1]()
	microTimeType       = reflect.TypeFor[metav1.MicroTime]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	jsonMarshalerType   = reflect.TypeFor[json.Marshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	textMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()
)

// customJSON reports whether t (or *t) decodes or encodes itself.
func customJSON(t reflect.Type) bool {
	for _, i := range []reflect.Type{jsonUnmarshalerType, jsonMarshalerType, textUnmarshalerType, textMarshalerType} {
		if t.Implements(i) || reflect.PointerTo(t).Implements(i) {
			return true
		}
	}
	return false
}

// New describes the Go type t, usually a struct (Check takes objects of
// struct schemas). It fails on what it does not describe: a struct that
// names a JSON field twice, embeds a non-struct type or one that encodes
// itself, or has a field with the string option.
func New(t reflect.Type) (*Schema, error) {
	return newSchema(t, map[reflect.Type]*Schema{})
}

// newSchema describes t; seen breaks cycles of recursive types.
func newSchema(t reflect.Type, seen map[reflect.Type]*Schema) (*Schema, error) {
	if s, ok := seen[t]; ok {
		return s, nil
	}
	s := &Schema{}
	seen[t] = s
	switch {
	case t == timeType:
		s.shape, s.layout = timeShape, time.RFC3339
		return s, nil
	case t == microTimeType:
		s.shape, s.layout = timeShape, metav1.RFC3339Micro
		return s, nil
	case t == fieldsV1Type:
		// Its JSON methods keep the value's bytes: any value round trips
		// (managedFields' field sets).
		s.shape = rawShape
		return s, nil
	case t.Kind() != reflect.Pointer && customJSON(t):
		// A pointer's own methods come from its element type's, handled
		// there (null, which does not call them, is not handled at all).
		s.shape = opaque
		return s, nil
	}
	switch t.Kind() {
	case reflect.String:
		s.shape = stringShape
	case reflect.Bool:
		s.shape = boolShape
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s.shape, s.bits = intShape, t.Bits()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s.shape, s.bits = uintShape, t.Bits()
	case reflect.Pointer, reflect.Map, reflect.Slice:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			if customJSON(t.Elem()) {
				return s, nil // opaque
			}
			s.shape = bytesShape
			return s, nil
		}
		if t.Kind() == reflect.Map && t.Key().Kind() != reflect.String {
			return s, nil // opaque
		}
		if t.Kind() == reflect.Map && customJSON(t.Key()) {
			return s, nil
		}
		elem, err := newSchema(t.Elem(), seen)
		if err != nil {
			return nil, err
		}
		s.elem = elem
		s.shape = map[reflect.Kind]shape{reflect.Pointer: pointerShape, reflect.Map: mapShape, reflect.Slice: sliceShape}[t.Kind()]
	case reflect.Struct:
		s.shape = structShape
		s.fields = map[string]*field{}
		if err := s.addFields(t, seen); err != nil {
			return nil, err
		}
		b, err := json.Marshal(reflect.New(t).Interface())
		if err != nil {
			return nil, fmt.Errorf("encoding a zero %s: %w", t, err)
		}
		if s.zero, err = decodeZero(b); err != nil {
			return nil, fmt.Errorf("decoding a zero %s: %w", t, err)
		}
	default: // floats, interfaces, arrays, ...: opaque
	}
	return s, nil
}

// addFields adds the JSON fields of struct type t, as encoding/json names
// them (embedded structs without a name are flattened).
func (s *Schema) addFields(t reflect.Type, seen map[reflect.Type]*Schema) error {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() != reflect.Struct || customJSON(ft) {
				return fmt.Errorf("embedded %s not supported", ft)
			}
			if err := s.addFields(ft, seen); err != nil {
				return err
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := s.fields[name]; dup {
			return fmt.Errorf("field %q named twice", name)
		}
		omit, omitZero := false, false
		for o := range strings.SplitSeq(opts, ",") {
			switch o {
			case "omitempty":
				omit = true
			case "omitzero":
				omit, omitZero = true, true
			case "string":
				return fmt.Errorf("field %q: option string not supported", name)
			}
		}
		fs, err := newSchema(f.Type, seen)
		if err != nil {
			return err
		}
		s.fields[name] = &field{s: fs, omit: omit, omitZero: omitZero}
	}
	return nil
}

// Check reports whether the JSON tree obj, an object of this struct
// schema, round trips through the Go type unchanged once the zero fields
// are added — strictly decoded into the type, encoded with encoding/json
// and decoded into a JSON tree again, it would come back as obj with
// those fields — and adds them to obj (which must be the caller's own
// tree, as jsontree.Decode returns it). It is false, and obj's fields may
// have been added, when it cannot tell.
func (s *Schema) Check(obj map[string]any) bool {
	for name, v := range obj {
		f, ok := s.fields[name]
		if !ok || (f.omitZero && f.s.shape == structShape) || !f.s.checkValue(v, f.omit) {
			return false
		}
	}
	for name, z := range s.zero {
		if _, ok := obj[name]; !ok {
			obj[name] = runtime.DeepCopyJSONValue(z)
		}
	}
	return true
}

// checkValue reports whether v decodes into this schema's type and encodes
// back as v (omit: a field left out when empty or zero).
func (s *Schema) checkValue(v any, omit bool) bool {
	if v == nil {
		return false // null: zero values encode otherwise, or are left out
	}
	switch s.shape {
	case stringShape:
		x, ok := v.(string)
		return ok && !(omit && x == "")
	case boolShape:
		x, ok := v.(bool)
		return ok && !(omit && !x)
	case intShape:
		x, ok := v.(int64)
		if !ok || (omit && x == 0) {
			return false
		}
		lim := int64(1) << (s.bits - 1)
		return s.bits == 64 || (x >= -lim && x < lim)
	case uintShape:
		x, ok := v.(int64)
		if !ok || x < 0 || (omit && x == 0) {
			return false
		}
		return s.bits == 64 || uint64(x) < uint64(1)<<s.bits
	case bytesShape:
		x, ok := v.(string)
		if !ok || (omit && x == "") {
			return false
		}
		b, err := base64.StdEncoding.DecodeString(x)
		return err == nil && base64.StdEncoding.EncodeToString(b) == x
	case rawShape:
		return true // not null (above)
	case timeShape:
		x, ok := v.(string)
		if !ok {
			return false
		}
		t, err := time.Parse(s.layout, x)
		return err == nil && !t.IsZero() && t.UTC().Format(s.layout) == x
	case pointerShape:
		return s.elem.checkValue(v, false)
	case mapShape:
		m, ok := v.(map[string]any)
		if !ok || (omit && len(m) == 0) {
			return false
		}
		for _, e := range m {
			if !s.elem.checkValue(e, false) {
				return false
			}
		}
		return true
	case sliceShape:
		l, ok := v.([]any)
		if !ok || (omit && len(l) == 0) {
			return false
		}
		for _, e := range l {
			if !s.elem.checkValue(e, false) {
				return false
			}
		}
		return true
	case structShape:
		// A struct is never empty for omitempty ({} is its zero value,
		// encoded whole); omitzero structs are not handled (see check).
		m, ok := v.(map[string]any)
		return ok && s.Check(m)
	}
	return false
}

// decodeZero decodes the encoding of a zero struct, which is always of the
// common form jsontree.Decode decodes (as the server's decoder would).
func decodeZero(b []byte) (map[string]any, error) {
	m, ok := jsontree.Decode(b)
	if !ok {
		return nil, fmt.Errorf("not decoded: %s", b)
	}
	return m, nil
}
