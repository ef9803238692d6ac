package informer

import (
	"reflect"
	"sync"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// maxInterned is the longest string interned outside metadata: short
// strings (images, node names, env values, container names, ports' names,
// IPs of a node) repeat across objects; long ones (hashes, IDs, documents)
// rarely do.
const maxInterned = 64

// interner replaces the short strings of objects by canonical copies. Its
// plans (per struct type, the fields that can hold strings) are computed
// once per type.
type interner struct {
	// plans maps reflect.Type to *plan; written once per type.
	plans sync.Map
}

// plan lists the fields of a struct type worth visiting.
type plan struct {
	fields []int
}

var (
	objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()
	typeMetaType   = reflect.TypeFor[metav1.TypeMeta]()
)

// internObject interns obj's metadata (see internMeta) and, for typed and
// unstructured objects, every other string of at most maxInterned bytes
// (and every map key of an unstructured object).
func (in *interner) internObject(obj Object) {
	internMeta(obj)
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		internJSONMap(o.Object, false)
	case *metav1.PartialObjectMetadata:
	default:
		v := reflect.ValueOf(obj)
		if v.Kind() == reflect.Pointer && !v.IsNil() {
			in.walk(v.Elem())
		}
	}
}

// walk interns the strings reachable from v (addressable).
func (in *interner) walk(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); s != "" && len(s) <= maxInterned && v.CanSet() {
			v.SetString(unique.Make(s).Value())
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			in.walk(v.Elem())
		}
	case reflect.Struct:
		p := in.plan(v.Type())
		for _, i := range p.fields {
			in.walk(v.Field(i))
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // []byte
		}
		if n := v.Len(); v.Cap() > n && v.CanSet() {
			// A decoder grows slices by doubling: keep only what is used
			// (a quarter of a decoded Pod's slice memory is spare capacity).
			exact := reflect.MakeSlice(v.Type(), n, n)
			reflect.Copy(exact, v)
			v.Set(exact)
		}
		for i := range v.Len() {
			in.walk(v.Index(i))
		}
	case reflect.Array:
		for i := range v.Len() {
			in.walk(v.Index(i))
		}
	case reflect.Map:
		if m, ok := v.Interface().(map[string]string); ok {
			internStringMap(m)
			return
		}
		t := v.Type()
		if t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String {
			// Re-assigning an equal key stores the new key string: no
			// allocation, the map keeps its size.
			it := v.MapRange()
			for it.Next() {
				k, e := it.Key(), it.Value()
				nk := reflect.New(t.Key()).Elem()
				nk.SetString(intern(k.String()))
				ne := reflect.New(t.Elem()).Elem()
				s := e.String()
				if len(s) <= maxInterned {
					s = intern(s)
				}
				ne.SetString(s)
				v.SetMapIndex(nk, ne)
			}
		}
	}
}

// plan returns the fields of struct type t that can hold strings: exported,
// not ObjectMeta (interned apart) nor TypeMeta (constants).
func (in *interner) plan(t reflect.Type) *plan {
	if p, ok := in.plans.Load(t); ok {
		return p.(*plan)
	}
	p := &plan{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Type == objectMetaType || f.Type == typeMetaType || !mayHoldString(f.Type, 0) {
			continue
		}
		p.fields = append(p.fields, i)
	}
	in.plans.Store(t, p)
	return p
}

// mayHoldString reports whether a value of type t can contain a string
// the walk would intern.
func mayHoldString(t reflect.Type, depth int) bool {
	if depth > 8 {
		return true // deep or recursive types: look at run time
	}
	switch t.Kind() {
	case reflect.String, reflect.Interface:
		return true
	case reflect.Pointer, reflect.Array:
		return mayHoldString(t.Elem(), depth+1)
	case reflect.Slice:
		return t.Elem().Kind() != reflect.Uint8 && mayHoldString(t.Elem(), depth+1)
	case reflect.Map:
		return t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if f.IsExported() && f.Type != objectMetaType && f.Type != typeMetaType && mayHoldString(f.Type, depth+1) {
				return true
			}
		}
	}
	return false
}

// internStringMap interns the keys and short values of m in place:
// re-assigning an equal key stores the new key string, so the map neither
// grows nor allocates.
func internStringMap(m map[string]string) {
	for k, v := range m {
		if len(v) <= maxInterned {
			v = intern(v)
		}
		m[intern(k)] = v
	}
}

// uniqueMetaFields are the metadata fields unique to each object: not worth
// interning.
var uniqueMetaFields = map[string]bool{"name": true, "uid": true, "resourceVersion": true, "creationTimestamp": true, "deletionTimestamp": true, "selfLink": true}

// internJSONMap interns the keys and short string values of an unstructured
// object, in place, except the unique fields of its metadata (isMeta).
func internJSONMap(m map[string]any, isMeta bool) {
	for k, v := range m {
		switch x := v.(type) {
		case string:
			if len(x) <= maxInterned && !(isMeta && uniqueMetaFields[k]) {
				v = intern(x)
			}
		case map[string]any:
			internJSONMap(x, k == "metadata")
		case []any:
			v = internJSONSlice(x)
		}
		m[intern(k)] = v
	}
}

// internJSONSlice interns s's strings in place and returns s without
// spare capacity.
func internJSONSlice(s []any) []any {
	if cap(s) > len(s) {
		s = append(make([]any, 0, len(s)), s...)
	}
	for i, v := range s {
		switch x := v.(type) {
		case string:
			if len(x) <= maxInterned {
				s[i] = intern(x)
			}
		case map[string]any:
			internJSONMap(x, false)
		case []any:
			s[i] = internJSONSlice(x)
		}
	}
	return s
}
