package jsonpatch

import (
	"bytes"
	"strings"
	"testing"

	v4 "gopkg.in/evanphx/json-patch.v4"
)

func v4Merge(doc, patch []byte) (out []byte, err error, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	out, err = v4.MergePatch(doc, patch)
	return out, err, false
}

// checkMergePatch checks MergePatch against v4's.
func checkMergePatch(t *testing.T, doc, patch []byte) {
	t.Helper()
	got, err := MergePatch(doc, patch)
	want, wantErr, panicked := v4Merge(doc, patch)
	switch {
	case panicked:
		t.Fatalf("v4.MergePatch(%s, %s) panics", doc, patch)
	case errText(err) != errText(wantErr):
		t.Fatalf("MergePatch(%s, %s): %s, %v; v4: %s, %v", doc, patch, got, err, want, wantErr)
	case !bytes.Equal(got, want):
		t.Fatalf("MergePatch(%s, %s) =\n%s\nv4:\n%s", doc, patch, got, want)
	}
}

var mergeCases = []struct{ doc, patch string }{
	{`{"a":1,"b":{"c":2,"d":[1,{"e":null}]},"f":"x"}`, `{"a":null,"b":{"c":null,"g":{"h":null,"i":1}},"j":[{"k":null},null],"f":{"l":null,"m":2}}`},
	{`{"a":{"b":1}}`, `{"a":[{"c":null}]}`},
	{`{"a":[1]}`, `{"a":{"b":null,"c":{"d":null}}}`},
	{`{"a":null}`, `{"a":{"b":null}}`},
	{`{"a":"s"}`, `{"a":{"b":{"c":null},"d":[{"e":null}]}}`},
	{`{}`, `{}`},
	{`{"z":{"y":1,"x":2},"a":1}`, `{"a":1,"a":null}`},
	{`{"z":{"y":1,"x":2,"y":3},"a":1}`, `{"z":{"w":1.0}}`},
	{`{"a":{"b":"<&>"}}`, ` { "c" : [ 1 , "\u2028" ] } `},
	{`[1]`, `{"a":null,"b":1}`},
	{`{"a":1}`, `[{"a":null},null]`},
	{`{"a":1}`, `1`},
	{`{"a":1}`, `null`},
	{`null`, `{}`},
	{`{"a":1`, `{}`},
	{`{"a":1}`, `{"a"`},
	{`{"a":1}`, ``},
	{`"s"`, `"t"`},
	{`{"\u00e9":{"\ud800":1}}`, `{"é":{"\ufffd":2}}`},
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
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

// TestMergePatchDeep checks patches as deep as encoding/json decodes
// (10,000 levels; v4 needs seconds for them, MergePatch milliseconds).
func TestMergePatchDeep(t *testing.T) {
	for _, depth := range []int{2000, 9999, 10001} {
		patch := strings.Repeat(`{"a":`, depth) + `null` + strings.Repeat(`}`, depth)
		got, err := MergePatch([]byte(`{"a":{"b":1}}`), []byte(patch))
		if depth > 10000 {
			if err != ErrBadJSONPatch {
				t.Errorf("depth %d: %v, want %v", depth, err, ErrBadJSONPatch)
			}
			continue
		}
		want := `{"a":{"a":` + strings.Repeat(`{"a":`, depth-3) + `{}` + strings.Repeat(`}`, depth-3) + `,"b":1}}`
		if err != nil || string(got) != want {
			t.Errorf("depth %d: %.100s…, %v", depth, got, err)
		}
	}
	depth := 500 // deep enough to compare with v4, which takes the depth squared
	checkMergePatch(t, []byte(`{"a":{"b":1}}`), []byte(strings.Repeat(`{"a":`, depth)+`null`+strings.Repeat(`}`, depth)))
}

func BenchmarkMergePatchDeep(b *testing.B) {
	const depth = 3000
	doc := []byte(`{"a":{"b":1}}`)
	patch := []byte(strings.Repeat(`{"a":`, depth) + `1` + strings.Repeat(`}`, depth))
	b.Run("jsonpatch", func(b *testing.B) {
		for b.Loop() {
			if _, err := MergePatch(doc, patch); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("v4", func(b *testing.B) {
		for b.Loop() {
			if _, err := v4.MergePatch(doc, patch); err != nil {
				b.Fatal(err)
			}
		}
	})
}
