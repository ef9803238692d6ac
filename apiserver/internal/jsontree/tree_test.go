package jsontree

import (
	"reflect"
	"testing"

	"go.uber.org/goleak"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestGetAndSet(t *testing.T) {
	o := map[string]any{"a": map[string]any{"s": "x", "i": int64(3), "f": 2.9, "l": []any{1, 2}, "m": map[string]any{"k": 1}}, "b": "not a map"}
	for _, tc := range []struct {
		path []string
		get  any
		str  string
		num  int64
		len  int
	}{
		{[]string{"a", "s"}, "x", "x", 0, 0},
		{[]string{"a", "i"}, int64(3), "", 3, 0},
		{[]string{"a", "f"}, 2.9, "", 2, 0},
		{[]string{"a", "l"}, []any{1, 2}, "", 0, 2},
		{[]string{"a", "m"}, map[string]any{"k": 1}, "", 0, 1},
		{[]string{"a", "missing"}, nil, "", 0, 0},
		{[]string{"b", "c"}, nil, "", 0, 0},
		{[]string{"a", "s", "deeper"}, nil, "", 0, 0},
	} {
		if got := Get(o, tc.path...); !reflect.DeepEqual(got, tc.get) {
			t.Errorf("Get(%v) = %#v, want %#v", tc.path, got, tc.get)
		}
		if got := Str(o, tc.path...); got != tc.str {
			t.Errorf("Str(%v) = %q, want %q", tc.path, got, tc.str)
		}
		if got := Int(o, tc.path...); got != tc.num {
			t.Errorf("Int(%v) = %d, want %d", tc.path, got, tc.num)
		}
		if got := Len(o, tc.path...); got != tc.len {
			t.Errorf("Len(%v) = %d, want %d", tc.path, got, tc.len)
		}
	}
	if got := Get(o); !reflect.DeepEqual(got, o) {
		t.Errorf("Get with no path = %v, want the tree", got)
	}
	Set(o, "v", "b", "c", "d") // replaces the string b
	Set(o, int64(1), "a", "i")
	want := map[string]any{"a": map[string]any{"s": "x", "i": int64(1), "f": 2.9, "l": []any{1, 2}, "m": map[string]any{"k": 1}}, "b": map[string]any{"c": map[string]any{"d": "v"}}}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("after Set: %#v, want %#v", o, want)
	}
}

func TestCanonical(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want bool
	}{
		{map[string]any{"a": []any{int64(1), "s", true, nil, map[string]any{}}, "b": []any{}}, true},
		{map[string]any{"f": 1.5}, false},
		{map[string]any{"f": float64(3)}, false},
		{map[string]any{"i": 3}, false},
		{map[string]any{"m": map[string]any(nil)}, false},
		{map[string]any{"l": []any(nil)}, false},
		{map[string]any{"s": "a\xffb"}, false},
		{map[string]any{"k\xff": "v"}, false},
		{map[string]any{"l": []string{"a"}}, false},
		{map[string]any(nil), false},
	} {
		if got := Canonical(tc.v); got != tc.want {
			t.Errorf("Canonical(%#v) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

// FuzzEqual: Equal agrees with reflect.DeepEqual on the JSON trees
// the full decoder makes, including a nil map or slice against an empty one and
// values of other types.
func FuzzEqual(f *testing.F) {
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
		x, err := fullDecode([]byte(a))
		if err != nil {
			return
		}
		y, err := fullDecode([]byte(b))
		if err != nil {
			return
		}
		for _, p := range [][2]any{{x, y}, {x, x}, {y, y}, {x, reshape(x)}} {
			if got, want := Equal(p[0], p[1]), reflect.DeepEqual(p[0], p[1]); got != want {
				t.Fatalf("Equal(%v, %v) = %v, reflect.DeepEqual says %v", p[0], p[1], got, want)
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

func TestEqual(t *testing.T) {
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
		if got := Equal(tc.a, tc.b); got != tc.want || got != reflect.DeepEqual(tc.a, tc.b) {
			t.Errorf("Equal(%#v, %#v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// checkMergePatch checks MergePatch against json-patch.v4's MergePatch.
func checkMergePatch(t *testing.T, doc, patch []byte) {
	t.Helper()
	d, ok := Decode(doc)
	if !ok {
		return
	}
	p, ok := Decode(patch)
	if !ok {
		return
	}
	out, err := jsonpatch.MergePatch(doc, patch)
	if err != nil {
		t.Fatalf("MergePatch(%s, %s): %v, Decode decoded both", doc, patch, err)
	}
	want, err := fullDecode(out)
	if err != nil {
		t.Fatal(err)
	}
	MergePatch(d, p)
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("MergePatch(%s, %s) =\n%#v\nMergePatch gives\n%#v", doc, patch, d, want)
	}
}

var mergeCases = []struct{ doc, patch string }{
	{`{"a":1,"b":{"c":2,"d":[1,{"e":null}]},"f":"x"}`, `{"a":null,"b":{"c":null,"g":{"h":null,"i":1}},"j":[{"k":null},null],"f":{"l":null,"m":2}}`},
	{`{"a":{"b":1}}`, `{"a":[{"c":null}]}`},
	{`{"a":[1]}`, `{"a":{"b":null,"c":{"d":null}}}`},
	{`{"a":null}`, `{"a":{"b":null}}`},
	{`{"a":"s"}`, `{"a":{"b":{"c":null},"d":[{"e":null}]}}`},
	{`{}`, `{}`},
	{`{"a":1}`, `{"a":1,"a":null}`},
}

func TestMergePatch(t *testing.T) {
	for _, tc := range mergeCases {
		checkMergePatch(t, []byte(tc.doc), []byte(tc.patch))
	}
}

func FuzzMergePatch(f *testing.F) {
	for _, tc := range mergeCases {
		f.Add([]byte(tc.doc), []byte(tc.patch))
	}
	f.Fuzz(func(t *testing.T, doc, patch []byte) {
		checkMergePatch(t, doc, patch)
	})
}
