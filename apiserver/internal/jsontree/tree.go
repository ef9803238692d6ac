package jsontree

import (
	"encoding/json"
	"reflect"
	"unicode/utf8"
)

// Get returns the value at path, or nil.
func Get(o any, path ...string) any {
	for _, p := range path {
		m, ok := o.(map[string]any)
		if !ok {
			return nil
		}
		o = m[p]
	}
	return o
}

// Str returns the string at path, or "".
func Str(o any, path ...string) string {
	s, _ := Get(o, path...).(string)
	return s
}

// Int returns the number at path as an int64, or 0.
func Int(o any, path ...string) int64 {
	switch v := Get(o, path...).(type) {
	case int64:
		return v
	case float64:
		return int64(v)
	case json.Number:
		n, _ := v.Int64()
		return n
	}
	return 0
}

// Len returns the length of the map or list at path.
func Len(o any, path ...string) int {
	switch v := Get(o, path...).(type) {
	case map[string]any:
		return len(v)
	case []any:
		return len(v)
	}
	return 0
}

// Set sets the value at path, creating maps on the way (and replacing
// values that are not maps).
func Set(o map[string]any, v any, path ...string) {
	for _, p := range path[:len(path)-1] {
		next, ok := o[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			o[p] = next
		}
		o = next
	}
	o[path[len(path)-1]] = v
}

// Equal is reflect.DeepEqual for JSON trees (maps, slices, strings,
// int64, float64, bool, nil as Decode makes them), several times faster;
// any other type is compared by reflect.DeepEqual. As DeepEqual, a nil map
// or slice differs from an empty one, and int64(1) from float64(1).
func Equal(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || (x == nil) != (y == nil) || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !Equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || (x == nil) != (y == nil) || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case string:
		y, ok := b.(string)
		return ok && x == y
	case int64, float64, bool:
		return a == b
	case nil:
		return b == nil
	}
	return reflect.DeepEqual(a, b)
}

// Canonical reports whether decoding the JSON encoding of v gives v
// back, value for value (as reflect.DeepEqual, Equal and the encoding
// see them): a tree of non-nil maps and slices, valid UTF-8 strings,
// int64, bool and nil. Floats are not (an integral one comes back as an
// int64), nor any other Go type.
func Canonical(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return false
		}
		for k, e := range x {
			if !utf8.ValidString(k) || !Canonical(e) {
				return false
			}
		}
		return true
	case []any:
		if x == nil {
			return false
		}
		for _, e := range x {
			if !Canonical(e) {
				return false
			}
		}
		return true
	case string:
		return utf8.ValidString(x)
	case int64, bool, nil:
		return true
	}
	return false
}

// MergePatch merges the JSON merge patch patch into doc, as
// gopkg.in/evanphx/json-patch.v4's MergePatch does (RFC 7386: null
// deletes, objects merge, anything else replaces; nulls inside new objects
// are pruned, but not inside a value replacing an object). It takes
// patch's values: patch must not be used afterwards.
func MergePatch(doc, patch map[string]any) {
	for key, v := range patch {
		if v == nil {
			delete(doc, key)
			continue
		}
		if cur, ok := doc[key]; ok && cur != nil {
			doc[key] = mergeValue(cur, v)
		} else {
			doc[key] = pruneNulls(v)
		}
	}
}

func mergeValue(cur, patch any) any {
	cm, ok := cur.(map[string]any)
	if !ok {
		return pruneNulls(patch)
	}
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	MergePatch(cm, pm)
	return cm
}

// pruneNulls drops the null members of the objects in v (null elements of
// lists stay).
func pruneNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for key, e := range x {
			if e == nil {
				delete(x, key)
			} else {
				x[key] = pruneNulls(e)
			}
		}
	case []any:
		for i, e := range x {
			if e != nil {
				x[i] = pruneNulls(e)
			}
		}
	}
	return v
}
