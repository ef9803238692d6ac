package apiserver

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
	"kloop.dev/kloop/apiserver/storage"
)

// The usual body of a built-in kind is already in the form its Go type
// gives back: the round trip decodeTypedPlain makes (strict decoding into
// the type, encoding, decoding into a JSON tree) returns the same tree.
// fastTyped recognizes such bodies from the JSON tree alone, with a
// description of the type (typedSchema), and takes the tree as it is. It
// answers only when the round trip is sure to give that tree: no unknown
// or repeated field, every value of its field's Go type and in the form
// that type encodes it (no null, no empty value that omitempty would drop,
// canonical timestamps and base64), and a kind whose type has no defaults.
// Anything else goes the long way, which decides.

// fastTyped decodes body as decodeTypedPlain would, when it can tell the
// result from the body's JSON tree (see above); ok is false otherwise.
func (k *kind) fastTyped(body []byte) (obj map[string]any, ok bool) {
	s := k.typedSchema()
	if s == nil {
		return nil, false
	}
	obj, ok = jsontree.DecodeStrict(body)
	if !ok || !k.typedTree(s, obj) {
		return nil, false
	}
	return obj, true
}

// typedTree reports whether the JSON tree obj (with no repeated key) round
// trips through k's Go type (schema s) unchanged once its zero fields are
// added, and adds them.
func (k *kind) typedTree(s *typedSchema, obj map[string]any) bool {
	if av, _ := obj["apiVersion"].(string); av != k.apiVersion() {
		return false
	}
	if kd, _ := obj["kind"].(string); kd != k.kind {
		return false
	}
	return s.check(obj)
}

// fastMergePatch applies a JSON merge patch to cur, an object of k, as
// servePatch's long way does (gopkg.in/evanphx/json-patch.v4's MergePatch
// of cur's served bytes, then decodeBody), when it can tell the result from
// the JSON trees alone: k served as stored, the patch a JSON object
// jsontree.Decode decodes, and the result of the form fastTyped takes. ok is
// false otherwise.
func (s *Server) fastMergePatch(k *kind, cur *storage.Object, patch []byte) (obj map[string]any, ok bool) {
	sch := k.typedSchema()
	if sch == nil || !k.servesAsIs(cur) {
		return nil, false
	}
	// jsontree.Decode skips JSON white space only: other bytes around the
	// object (form feed, Unicode spaces) make the long way's "invalid JSON
	// patch".
	p, ok := jsontree.Decode(patch)
	if !ok {
		return nil, false
	}
	if m, ok := s.decoded.get(cur); ok {
		obj = runtime.DeepCopyJSON(m)
	} else if obj, ok = jsontree.Decode(cur.Data); !ok {
		return nil, false
	}
	jsontree.MergePatch(obj, p)
	if !k.typedTree(sch, obj) {
		return nil, false
	}
	return obj, true
}

// typedSchema returns the description of k's Go type for fastTyped, nil
// when fastTyped cannot serve k (no Go type, defaults, or a type shape it
// does not know).
func (k *kind) typedSchema() *typedSchema {
	k.schemaOnce.Do(func() {
		if k.newTyped == nil || k.review != nil {
			return
		}
		typed := k.newTyped()
		if defaultTyped(typed) {
			return // defaults change the tree
		}
		t := reflect.TypeOf(typed)
		if t.Kind() != reflect.Pointer {
			return
		}
		s, err := newTypedSchema(t.Elem(), map[reflect.Type]*typedSchema{})
		if err == nil {
			k.schema = s
		}
	})
	return k.schema
}

// schemaKind is how a typedSchema checks a value.
type schemaKind int

const (
	schemaOpaque schemaKind = iota // any value present: not handled
	schemaString
	schemaBool
	schemaInt // signed integer of bits bits
	schemaUint
	schemaBytes // []byte: base64
	schemaTime  // metav1.Time, metav1.MicroTime: a UTC timestamp in layout
	schemaPointer
	schemaMap // map with string keys
	schemaSlice
	schemaStruct
)

// typedSchema describes how values of one Go type decode from JSON and
// encode back.
type typedSchema struct {
	kind   schemaKind
	bits   int          // schemaInt, schemaUint
	layout string       // schemaTime
	elem   *typedSchema // schemaPointer, schemaMap, schemaSlice
	// fields of a struct by JSON name (embedded structs' fields included).
	fields map[string]*schemaField
	// zero is the JSON tree a zero value of the struct encodes to: an
	// absent field encodes as zero[name], or not at all when zero has no
	// such key.
	zero map[string]any
}

type schemaField struct {
	s *typedSchema
	// omit: the field is left out when empty (omitempty) or zero
	// (omitzero), so such values do not round trip.
	omit bool
	// omitZero: omitzero, which also leaves out zero structs.
	omitZero bool
}

var (
	timeType            = reflect.TypeFor[metav1.Time]()
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

// newTypedSchema describes t; seen breaks cycles of recursive types.
func newTypedSchema(t reflect.Type, seen map[reflect.Type]*typedSchema) (*typedSchema, error) {
	if s, ok := seen[t]; ok {
		return s, nil
	}
	s := &typedSchema{}
	seen[t] = s
	switch {
	case t == timeType:
		s.kind, s.layout = schemaTime, time.RFC3339
		return s, nil
	case t == microTimeType:
		s.kind, s.layout = schemaTime, metav1.RFC3339Micro
		return s, nil
	case t.Kind() != reflect.Pointer && customJSON(t):
		// A pointer's own methods come from its element type's, handled
		// there (null, which does not call them, is not handled at all).
		s.kind = schemaOpaque
		return s, nil
	}
	switch t.Kind() {
	case reflect.String:
		s.kind = schemaString
	case reflect.Bool:
		s.kind = schemaBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s.kind, s.bits = schemaInt, t.Bits()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s.kind, s.bits = schemaUint, t.Bits()
	case reflect.Pointer, reflect.Map, reflect.Slice:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			if customJSON(t.Elem()) {
				return s, nil // opaque
			}
			s.kind = schemaBytes
			return s, nil
		}
		if t.Kind() == reflect.Map && t.Key().Kind() != reflect.String {
			return s, nil // opaque
		}
		if t.Kind() == reflect.Map && customJSON(t.Key()) {
			return s, nil
		}
		elem, err := newTypedSchema(t.Elem(), seen)
		if err != nil {
			return nil, err
		}
		s.elem = elem
		s.kind = map[reflect.Kind]schemaKind{reflect.Pointer: schemaPointer, reflect.Map: schemaMap, reflect.Slice: schemaSlice}[t.Kind()]
	case reflect.Struct:
		s.kind = schemaStruct
		s.fields = map[string]*schemaField{}
		if err := s.addFields(t, seen); err != nil {
			return nil, err
		}
		b, err := json.Marshal(reflect.New(t).Interface())
		if err != nil {
			return nil, fmt.Errorf("encoding a zero %s: %w", t, err)
		}
		if s.zero, err = decodeMap(b); err != nil {
			return nil, fmt.Errorf("decoding a zero %s: %w", t, err)
		}
	default: // floats, interfaces, arrays, ...: opaque
	}
	return s, nil
}

// addFields adds the JSON fields of struct type t, as encoding/json names
// them (embedded structs without a name are flattened).
func (s *typedSchema) addFields(t reflect.Type, seen map[reflect.Type]*typedSchema) error {
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
		fs, err := newTypedSchema(f.Type, seen)
		if err != nil {
			return err
		}
		s.fields[name] = &schemaField{s: fs, omit: omit, omitZero: omitZero}
	}
	return nil
}

// check reports whether the JSON tree obj, an object of this struct
// schema, round trips through the Go type unchanged once the zero fields
// are added; it adds them to obj (jsontree.Decode's own tree).
func (s *typedSchema) check(obj map[string]any) bool {
	for name, v := range obj {
		f, ok := s.fields[name]
		if !ok || (f.omitZero && f.s.kind == schemaStruct) || !f.s.checkValue(v, f.omit) {
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
func (s *typedSchema) checkValue(v any, omit bool) bool {
	if v == nil {
		return false // null: zero values encode otherwise, or are left out
	}
	switch s.kind {
	case schemaString:
		x, ok := v.(string)
		return ok && !(omit && x == "")
	case schemaBool:
		x, ok := v.(bool)
		return ok && !(omit && !x)
	case schemaInt:
		x, ok := v.(int64)
		if !ok || (omit && x == 0) {
			return false
		}
		lim := int64(1) << (s.bits - 1)
		return s.bits == 64 || (x >= -lim && x < lim)
	case schemaUint:
		x, ok := v.(int64)
		if !ok || x < 0 || (omit && x == 0) {
			return false
		}
		return s.bits == 64 || uint64(x) < uint64(1)<<s.bits
	case schemaBytes:
		x, ok := v.(string)
		if !ok || (omit && x == "") {
			return false
		}
		b, err := base64.StdEncoding.DecodeString(x)
		return err == nil && base64.StdEncoding.EncodeToString(b) == x
	case schemaTime:
		x, ok := v.(string)
		if !ok {
			return false
		}
		t, err := time.Parse(s.layout, x)
		return err == nil && !t.IsZero() && t.UTC().Format(s.layout) == x
	case schemaPointer:
		return s.elem.checkValue(v, false)
	case schemaMap:
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
	case schemaSlice:
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
	case schemaStruct:
		// A struct is never empty for omitempty ({} is its zero value,
		// encoded whole); omitzero structs are not handled (see check).
		m, ok := v.(map[string]any)
		return ok && s.check(m)
	}
	return false
}
