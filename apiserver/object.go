package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Objects are handled as JSON maps (map[string]any with int64 and float64
// numbers, as apimachinery's unstructured). These helpers read and write them
// without panicking on unexpected shapes.

// get returns the value at path, or nil.
func get(o any, path ...string) any {
	for _, p := range path {
		m, ok := o.(map[string]any)
		if !ok {
			return nil
		}
		o = m[p]
	}
	return o
}

// str returns the string at path, or "".
func str(o any, path ...string) string {
	s, _ := get(o, path...).(string)
	return s
}

// integer returns the number at path as an int64, or 0.
func integer(o any, path ...string) int64 {
	switch v := get(o, path...).(type) {
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

// length returns the length of the map or list at path.
func length(o any, path ...string) int {
	switch v := get(o, path...).(type) {
	case map[string]any:
		return len(v)
	case []any:
		return len(v)
	}
	return 0
}

// setPath sets the value at path, creating maps on the way (and replacing
// values that are not maps).
func setPath(o map[string]any, v any, path ...string) {
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

func defaultInt(m map[string]any, key string, v int64) {
	if _, ok := m[key]; !ok {
		m[key] = v
	}
}

// meta returns the metadata map of o, creating it if needed.
func meta(o map[string]any) map[string]any {
	m, ok := o["metadata"].(map[string]any)
	if !ok {
		m = map[string]any{}
		o["metadata"] = m
	}
	return m
}

// age formats the time since an RFC 3339 timestamp as kubectl does.
func age(ts string, now time.Time) string {
	t, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// decodeMap decodes a JSON object, numbers as int64 or float64.
func decodeMap(b []byte) (map[string]any, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return nil, fmt.Errorf("expected a JSON object")
	}
	if m, ok := fastDecode(b); ok {
		return m, nil
	}
	var m map[string]any
	if err := utiljson.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("expected a JSON object, got null")
	}
	return m, nil
}

// fromMap converts a JSON map into a Go value.
func fromMap(m map[string]any, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}

// toMap converts a Go value into a JSON map by encoding it.
func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeMap(b)
}

func formatRV(rv int64) string { return strconv.FormatInt(rv, 10) }

// parseRV parses a resourceVersion; "" is 0.
func parseRV(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err == nil && v > math.MaxInt64 {
		err = fmt.Errorf("strconv.ParseUint: parsing %q: value out of range", s)
	}
	if err != nil {
		// kube-apiserver's versioner's wording.
		return 0, field.Invalid(field.NewPath("resourceVersion"), s, err.Error())
	}
	return int64(v), nil
}

// jsonEqual is reflect.DeepEqual for JSON trees (maps, slices, strings,
// int64, float64, bool, nil as decodeMap makes them), several times faster;
// any other type is compared by reflect.DeepEqual. As DeepEqual, a nil map
// or slice differs from an empty one.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || (x == nil) != (y == nil) || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
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
			if !jsonEqual(x[i], y[i]) {
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
