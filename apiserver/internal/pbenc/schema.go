package pbenc

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// kind is how a field's value goes from JSON to protobuf.
type kind uint8

const (
	kString      kind = iota + 1 // JSON string: length-delimited bytes
	kBytes                       // JSON base64 string ([]byte): length-delimited bytes
	kBool                        // JSON true/false: varint
	kInt                         // JSON integer, signed, of bits bits: varint (two's complement)
	kUint                        // JSON integer, unsigned, of bits bits: varint
	kFloat64                     // JSON number: fixed64
	kFloat32                     // JSON number: fixed32
	kMessage                     // JSON object: a message of msg
	kTime                        // metav1.Time: RFC 3339 string: Timestamp (seconds)
	kMicroTime                   // metav1.MicroTime: RFC 3339 micro string: Timestamp (seconds, nanos)
	kDuration                    // metav1.Duration: Go duration string: message {1: nanoseconds}
	kQuantity                    // resource.Quantity: string: message {1: string}
	kIntOrString                 // intstr.IntOrString: number or string: message {1: type, 2: intVal, 3: strVal}
	kRaw                         // runtime.RawExtension, metav1.FieldsV1: any JSON value: message {1: its JSON}
)

// wire types of protobuf tags.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// value describes a JSON value of one Go type and how it encodes.
type value struct {
	kind kind
	bits int      // kInt, kUint
	msg  *Message // kMessage
}

// field is one protobuf field of a message.
type field struct {
	tag []byte // the field's key (number and wire type), as a varint
	value
	// repeated: a Go slice (not []byte) of value, one field per element;
	// mapValue: a Go map with string keys, one entry message per key
	// ({1: key, 2: value}).
	repeated bool
	mapValue *value
	// skip: a JSON string that is not part of the message (TypeMeta's
	// apiVersion and kind).
	skip bool
	// inline is the index of the message's inline field whose message
	// holds this field (a Go struct embedded with json ",inline" and a
	// protobuf tag: its JSON fields are the message's, its protobuf
	// fields are nested); -1 for a field of the message itself.
	inline int
}

// Message describes how the JSON object of a Go struct with generated
// protobuf code encodes as its protobuf message. It is immutable, and safe
// for concurrent use.
type Message struct {
	// fields by JSON name.
	fields map[string]*field
	// inlines are the message's inline fields (see field.inline).
	inlines []*field
}

var (
	timeType        = reflect.TypeFor[metav1.Time]()
	microTimeType   = reflect.TypeFor[metav1.MicroTime]()
	durationType    = reflect.TypeFor[metav1.Duration]()
	quantityType    = reflect.TypeFor[resource.Quantity]()
	intOrStringType = reflect.TypeFor[intstr.IntOrString]()
	rawType         = reflect.TypeFor[runtime.RawExtension]()
	fieldsV1Type    = reflect.TypeFor[metav1.FieldsV1]()
	typeMetaType    = reflect.TypeFor[metav1.TypeMeta]()

	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	protoMarshaler  = reflect.TypeFor[interface{ Marshal() ([]byte, error) }]()
)

// For describes the struct type t (or the struct a pointer type points
// to). It fails for a type holding anything it does not encode exactly:
// interface values, a type with JSON methods of its own other than the
// few it knows (times, quantities, int-or-strings, raw extensions), a
// field without a protobuf tag, a map whose keys are not strings, a slice
// of slices, a named slice or map with protobuf code of its own. It walks
// the whole type: callers keep what it returns.
func For(t reflect.Type) (*Message, error) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return newMessage(t, map[reflect.Type]*Message{})
}

// newMessage describes struct type t; seen holds the messages being made
// (recursive types).
func newMessage(t reflect.Type, seen map[reflect.Type]*Message) (*Message, error) {
	if m, ok := seen[t]; ok {
		return m, nil
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%v is not a struct", t)
	}
	m := &Message{fields: map[string]*field{}}
	seen[t] = m
	for i := range t.NumField() {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" && opts == "" || !sf.IsExported() && !sf.Anonymous {
			continue
		}
		inline := sf.Anonymous && name == "" || strings.Contains(","+opts+",", ",inline,")
		pb := sf.Tag.Get("protobuf")
		if inline && sf.Type == typeMetaType {
			for _, jn := range []string{"apiVersion", "kind"} {
				m.fields[jn] = &field{value: value{kind: kString}, skip: true, inline: -1}
			}
			continue
		}
		if pb == "" {
			return nil, fmt.Errorf("%v.%s has no protobuf tag", t, sf.Name)
		}
		f, err := newField(sf.Type, pb, seen)
		if err != nil {
			return nil, fmt.Errorf("%v.%s: %w", t, sf.Name, err)
		}
		f.inline = -1
		if inline {
			if f.kind != kMessage || f.repeated || f.mapValue != nil {
				return nil, fmt.Errorf("%v.%s: an inline field that is not a struct", t, sf.Name)
			}
			if len(f.msg.inlines) > 0 {
				return nil, fmt.Errorf("%v.%s: inline fields nested in an inline field", t, sf.Name)
			}
			m.inlines = append(m.inlines, f)
			for jn, inner := range f.msg.fields {
				if _, dup := m.fields[jn]; dup {
					return nil, fmt.Errorf("%v: JSON field %q twice", t, jn)
				}
				if inner.skip {
					m.fields[jn] = inner
					continue
				}
				in := *inner
				in.inline = len(m.inlines) - 1
				m.fields[jn] = &in
			}
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if _, dup := m.fields[name]; dup {
			return nil, fmt.Errorf("%v: JSON field %q twice", t, name)
		}
		m.fields[name] = f
	}
	return m, nil
}

// newField describes a field of Go type t with protobuf tag pb.
func newField(t reflect.Type, pb string, seen map[reflect.Type]*Message) (*field, error) {
	parts := strings.Split(pb, ",")
	if len(parts) < 2 {
		return nil, fmt.Errorf("protobuf tag %q", pb)
	}
	num, err := strconv.Atoi(parts[1])
	if err != nil || num <= 0 {
		return nil, fmt.Errorf("protobuf tag %q", pb)
	}
	f := &field{}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		if t.Name() != "" && t.Implements(protoMarshaler) {
			return nil, fmt.Errorf("%v has protobuf code of its own", t)
		}
		f.repeated = true
		t = t.Elem()
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8 {
			return nil, fmt.Errorf("a slice of slices")
		}
	case t.Kind() == reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("a map with %v keys", t.Key())
		}
		if t.Name() != "" && t.Implements(protoMarshaler) {
			return nil, fmt.Errorf("%v has protobuf code of its own", t)
		}
		vt := t.Elem()
		if vt.Kind() == reflect.Pointer {
			vt = vt.Elem()
		}
		if vt.Kind() == reflect.Slice && vt.Elem().Kind() != reflect.Uint8 || vt.Kind() == reflect.Map {
			return nil, fmt.Errorf("a map of %v", vt)
		}
		v, err := newValue(vt, seen)
		if err != nil {
			return nil, err
		}
		f.mapValue = &v
		f.tag = appendUvarint(nil, uint64(num)<<3|wireBytes)
		return f, nil
	}
	v, err := newValue(t, seen)
	if err != nil {
		return nil, err
	}
	f.value = v
	f.tag = appendUvarint(nil, uint64(num)<<3|uint64(v.wire()))
	return f, nil
}

// wire is the wire type of v's values. (The wire type in a struct's
// protobuf tag is not always the one its generated code writes: optional
// integers are tagged bytes and written as varints.)
func (v value) wire() int {
	switch v.kind {
	case kBool, kInt, kUint:
		return wireVarint
	case kFloat64:
		return wireFixed64
	case kFloat32:
		return wireFixed32
	}
	return wireBytes
}

// newValue describes a value of Go type t (not a pointer, slice or map,
// but []byte).
func newValue(t reflect.Type, seen map[reflect.Type]*Message) (value, error) {
	special := map[reflect.Type]kind{timeType: kTime, microTimeType: kMicroTime, durationType: kDuration, quantityType: kQuantity,
		intOrStringType: kIntOrString, rawType: kRaw, fieldsV1Type: kRaw}
	if k, ok := special[t]; ok {
		return value{kind: k}, nil
	}
	if t.Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return value{}, fmt.Errorf("%v decodes JSON itself", t)
	}
	switch t.Kind() {
	case reflect.String:
		return value{kind: kString}, nil
	case reflect.Slice: // []byte
		return value{kind: kBytes}, nil
	case reflect.Bool:
		return value{kind: kBool}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return value{kind: kInt, bits: t.Bits()}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return value{kind: kUint, bits: t.Bits()}, nil
	case reflect.Float64:
		return value{kind: kFloat64}, nil
	case reflect.Float32:
		return value{kind: kFloat32}, nil
	case reflect.Struct:
		msg, err := newMessage(t, seen)
		if err != nil {
			return value{}, err
		}
		return value{kind: kMessage, msg: msg}, nil
	}
	return value{}, fmt.Errorf("a value of kind %v", t.Kind())
}
