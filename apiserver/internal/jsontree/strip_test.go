package jsontree

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestStripTypeMeta(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"apiVersion":"v1","data":{"kind":"x"},"kind":"ConfigMap","metadata":{"name":"a"}}`, `{"data":{"kind":"x"},"metadata":{"name":"a"}}`},
		{`{"apiVersion":"v1","kind":"ConfigMap"}`, `{}`},
		{`{"a":"\"kind\":","kind":"K"}`, `{"a":"\"kind\":"}`},
		{`{"a":["apiVersion",{"kind":1}],"apiVersion":"apps/v1","z":1}`, `{"a":["apiVersion",{"kind":1}],"z":1}`},
		{`{"a\\":1,"kind":"K","b":"\\"}`, `{"a\\":1,"b":"\\"}`},
		{`{}`, `{}`},
	} {
		got := string(StripTypeMeta([]byte(tc.in)))
		if got != tc.want || !json.Valid([]byte(got)) {
			t.Errorf("StripTypeMeta(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// FuzzStripTypeMeta: on an object as encoding/json writes it, StripTypeMeta
// gives what encoding/json writes of the object without its top-level
// apiVersion and kind, whatever the strings, escapes and nesting around
// them (nested apiVersion and kind members stay).
func FuzzStripTypeMeta(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"kind":"x"}},"data":{"apiVersion":"\"kind\":"}}`,
		`{"a":["apiVersion",{"kind":1}],"apiVersion":"apps/v1","z":1}`,
		`{"a\\":1,"kind":"K","b":"\\","c":"<&>\u2028"}`,
		`{"kind":{"kind":{"apiVersion":[]}},"apiVersion":null}`,
		`{"Kind":"K","apiversion":"v","kind ":1}`,
		`{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := fullDecode(data)
		if err != nil || m == nil {
			return
		}
		b, err := json.Marshal(m)
		if err != nil {
			return
		}
		delete(m, "apiVersion")
		delete(m, "kind")
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := StripTypeMeta(b); !bytes.Equal(got, want) {
			t.Fatalf("StripTypeMeta(%s) =\n%s\nwant\n%s", b, got, want)
		}
	})
}
