package apiserver

import (
	"reflect"
	"testing"
)

// FuzzJSONEqual: jsonEqual agrees with reflect.DeepEqual on the JSON trees
// decodeMap makes, including a nil map or slice against an empty one and
// values of other types.
func FuzzJSONEqual(f *testing.F) {
	for _, s := range [][2]string{
		{`{"a":1,"b":[1,"x",null,true,1.5,{"c":{}}]}`, `{"a":1,"b":[1,"x",null,true,1.5,{"c":{}}]}`},
		{`{"a":1}`, `{"a":1.0}`},
		{`{"a":1}`, `{"a":1.5}`},
		{`{"a":[]}`, `{"a":{}}`},
		{`{"a":null}`, `{}`},
		{`{"a":"1"}`, `{"a":1}`},
		{`{"a":{"b":[{"c":false}]}}`, `{"a":{"b":[{"c":true}]}}`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		x, err := decodeMap([]byte(a))
		if err != nil {
			return
		}
		y, err := decodeMap([]byte(b))
		if err != nil {
			return
		}
		for _, p := range [][2]any{{x, y}, {x, x}, {y, y}, {x, reshape(x)}} {
			if got, want := jsonEqual(p[0], p[1]), reflect.DeepEqual(p[0], p[1]); got != want {
				t.Fatalf("jsonEqual(%v, %v) = %v, reflect.DeepEqual says %v", p[0], p[1], got, want)
			}
		}
	})
}

// reshape returns a copy of v with each empty map and slice made nil and
// each int64 made an int: equal to v for neither function.
func reshape(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return map[string]any(nil)
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = reshape(e)
		}
		return out
	case []any:
		if len(x) == 0 {
			return []any(nil)
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = reshape(e)
		}
		return out
	case int64:
		return int(x)
	}
	return v
}

func TestJSONEqual(t *testing.T) {
	for _, tc := range []struct {
		a, b any
		want bool
	}{
		{nil, nil, true},
		{map[string]any{}, map[string]any(nil), false},
		{[]any{}, []any(nil), false},
		{map[string]any{"a": int64(1)}, map[string]any{"a": 1.0}, false},
		{map[string]any{"a": []string{"x"}}, map[string]any{"a": []string{"x"}}, true},
		{map[string]any{"a": map[string]any{"b": "c"}}, map[string]any{"a": map[string]any{"b": "c"}}, true},
		{map[string]any{"a": nil}, map[string]any{"b": nil}, false},
		{"x", []byte("x"), false},
	} {
		if got := jsonEqual(tc.a, tc.b); got != tc.want || got != reflect.DeepEqual(tc.a, tc.b) {
			t.Errorf("jsonEqual(%#v, %#v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
