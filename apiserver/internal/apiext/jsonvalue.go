package apiext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
)

// decodeJSON decodes raw JSON into the value shapes apimachinery's
// unstructured decoder produces: map[string]any, []any, string, bool, nil,
// int64 for integral numbers that fit, float64 otherwise.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return normalizeNumbers(v), nil
}

func normalizeNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalizeNumbers(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = normalizeNumbers(e)
		}
		return t
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return i
		}
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return string(t)
		}
		return f
	}
	return v
}

// deepCopyJSON copies a JSON value tree. Unlike runtime.DeepCopyJSONValue it
// never panics: unknown leaf types are returned as they are.
func deepCopyJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = deepCopyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopyJSON(e)
		}
		return out
	}
	return v
}

// number reports v as a float64 and whether v is an integral JSON number.
// ok is false when v is not a number.
func number(v any) (f float64, integral bool, ok bool) {
	switch t := v.(type) {
	case int64:
		return float64(t), true, true
	case int:
		return float64(t), true, true
	case int32:
		return float64(t), true, true
	case uint64:
		return float64(t), true, true
	case float64:
		return t, false, true
	case float32:
		return float64(t), false, true
	case json.Number:
		if _, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			f, _ := strconv.ParseFloat(string(t), 64)
			return f, true, true
		}
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return 0, false, false
		}
		return f, false, true
	}
	return 0, false, false
}

// jsonType is the JSON-schema type name of a decoded value ("null" for nil,
// "" for values that are not JSON).
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	if _, integral, ok := number(v); ok {
		if integral {
			return "integer"
		}
		return "number"
	}
	return ""
}

// schemaEqual compares decoded JSON values as JSON Schema compares
// instances (enum, uniqueItems, list-map keys): numbers by their value, so
// int64(1) equals float64(1), and a nil map or list equals an empty one.
// It is not the embedded server's jsontree.Equal, which is
// reflect.DeepEqual's (types and nil-ness count) and decides whether a
// write changed an object.
func schemaEqual(a, b any) bool {
	fa, _, oka := number(a)
	fb, _, okb := number(b)
	if oka || okb {
		return oka && okb && fa == fb
	}
	switch ta := a.(type) {
	case map[string]any:
		tb, ok := b.(map[string]any)
		if !ok || len(ta) != len(tb) {
			return false
		}
		for k, va := range ta {
			vb, ok := tb[k]
			if !ok || !schemaEqual(va, vb) {
				return false
			}
		}
		return true
	case []any:
		tb, ok := b.([]any)
		if !ok || len(ta) != len(tb) {
			return false
		}
		for i := range ta {
			if !schemaEqual(ta[i], tb[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// isIntegral reports whether f has no fractional part and is finite.
func isIntegral(f float64) bool {
	return !math.IsInf(f, 0) && !math.IsNaN(f) && f == math.Trunc(f)
}
