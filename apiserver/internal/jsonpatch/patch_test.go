package jsonpatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"
	v4 "gopkg.in/evanphx/json-patch.v4"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// decodeOps decodes a patch as v4 does.
func decodeOps(t testing.TB, patch string) []Operation {
	t.Helper()
	p, err := v4.DecodePatch([]byte(patch))
	if err != nil {
		t.Fatalf("DecodePatch(%s): %v", patch, err)
	}
	return opsOf(p)
}

func opsOf(p v4.Patch) []Operation {
	ops := make([]Operation, len(p))
	for i, op := range p {
		ops[i] = op
	}
	return ops
}

// v4Apply is v4's Patch.Apply, a panic reported as panicked.
func v4Apply(p v4.Patch, doc []byte) (out []byte, err error, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	out, err = p.Apply(doc)
	return out, err, false
}

// checkApply checks Apply against v4 (on patches whose copies stay under
// a limit: v4's own is process-wide, and left unset here).
func checkApply(t *testing.T, doc, patch []byte) {
	t.Helper()
	p, err := v4.DecodePatch(patch)
	if err != nil || len(p) > 64 {
		return
	}
	got, err := Apply(doc, opsOf(p), 1<<16)
	if errors.Is(err, ErrCopyLimit) {
		return
	}
	want, wantErr, panicked := v4Apply(p, doc)
	switch {
	case panicked:
		// v4 panics where Apply answers (see Apply's doc).
	case (err == nil) != (wantErr == nil):
		t.Fatalf("Apply(%s, %s): %s, %v; v4: %s, %v", doc, patch, got, err, want, wantErr)
	case err == nil && !bytes.Equal(got, want):
		t.Fatalf("Apply(%s, %s) =\n%s\nv4:\n%s", doc, patch, got, want)
	}
}

var applyCases = []struct{ doc, patch string }{
	{`{"a":1}`, `[{"op":"add","path":"/b","value":{"z":1,"y":[1, 2 ,{"c" : "<&>"}]}}]`},
	{`{"b":{"z":1,"a":2},"a":[3,2,1]}`, `[]`},
	{`{"b":{"z":1,"a":2,"a":5},"a":[3,2,1]}`, `[{"op":"add","path":"/b/c","value":1.50}]`},
	{`{"a":[1,2,3]}`, `[{"op":"add","path":"/a/-1","value":0},{"op":"add","path":"/a/-","value":9},{"op":"add","path":"/a/0","value":-1}]`},
	{`{"a":[1,2,3]}`, `[{"op":"add","path":"/a/5","value":0}]`},
	{`{"a":[1,2,3]}`, `[{"op":"remove","path":"/a/-1"},{"op":"remove","path":"/a/0"}]`},
	{`{"a":[1,2,3]}`, `[{"op":"remove","path":"/a/3"}]`},
	{`{"a":[1,2,3]}`, `[{"op":"replace","path":"/a/1","value":"x"},{"op":"replace","path":"/a/-3","value":"y"}]`},
	{`{"a":{}}`, `[{"op":"replace","path":"/a/missing","value":"x"}]`},
	{`{"a":{"b":1}}`, `[{"op":"remove","path":"/a/c"}]`},
	{`{"a":{"b":{"c":1}}}`, `[{"op":"move","from":"/a/b","path":"/d"},{"op":"move","from":"/d","path":"/d/e"}]`},
	{`{"a":{"b":{"c":1}}}`, `[{"op":"copy","from":"/a","path":"/a/b/x"},{"op":"copy","from":"/a/b","path":"/z"}]`},
	{`{"a":{"b":[1,{"c":"\u0041"}]}}`, `[{"op":"test","path":"/a","value":{"b":[1,{"c":"\u0041"}]}},{"op":"add","path":"/t","value":true}]`},
	{`{"a":{"b":[1,{"c":"\u0041"}]}}`, `[{"op":"test","path":"/a","value":{"b":[1,{"c":"A"}]}}]`},
	{`{"a":1.0}`, `[{"op":"test","path":"/a","value":1}]`},
	{`{"a":null}`, `[{"op":"test","path":"/a","value":null},{"op":"test","path":"/missing"},{"op":"test","path":"/a"}]`},
	{`{"a":null}`, `[{"op":"test","path":"/a","value":0}]`},
	{`{"a":"x"}`, `[{"op":"test","path":"/a"}]`},
	{`{"a":{"k":"v"}}`, `[{"op":"test","path":"","value":{"a":{"k":"v"}}}]`},
	{`{"a":1}`, `[{"op":"replace","path":"","value":[1,{"b":2}]},{"op":"add","path":"/-","value":3}]`},
	{`{"a":1}`, `[{"op":"replace","path":"","value":"s"}]`},
	{`{"a":1}`, `[{"op":"add","path":"a/b","value":2}]`},
	{`{"a":1}`, `[{"op":"add","path":"","value":2}]`},
	{`{"a/b":1,"c~d":2}`, `[{"op":"move","from":"/a~1b","path":"/c~0d"},{"op":"copy","from":"/c~0d","path":"/~01"}]`},
	{`{"a":1}`, `[{"op":"frob","path":"/a"}]`},
	{`{"a":1}`, `[{"path":"/a"}]`},
	{`{"a":1}`, `[{"op":"add","path":1,"value":2}]`},
	{`{"a":1}`, `[{"op":"add","path":null,"value":2}]`},
	{`{"a":1}`, `[{"op":"add","path":"/b"}]`},
	{`{"a":1}`, `[{"op":"add","path":"/b","value":null},{"op":"add","path":"/b/c","value":1}]`},
	{`{"a":"s"}`, `[{"op":"add","path":"/a/b","value":1}]`},
	{`{"a":[[1],{"b":[]}]}`, `[{"op":"add","path":"/a/0/0","value":0},{"op":"add","path":"/a/1/b/-","value":{"x":null}}]`},
	{`{"a":[1]}`, `[{"op":"add","path":"/a/01","value":0},{"op":"add","path":"/a/+0","value":0}]`},
	{`{"\u00e9":1,"b\ud800":2,"<":3}`, `[{"op":"add","path":"/z","value":"\u2028"}]`},
	{"{\"a\":\"\u2028\xff\"}", `[{"op":"copy","from":"/a","path":"/b"}]`},
	{`[1,2]`, `[{"op":"add","path":"/0","value":0}]`},
	{` [1,2]`, `[]`},
	{`null`, `[]`},
	{`{"a":{"b":1}}`, `[{"op":"test","path":"/a","value":{"b":1,"c":2}}]`},
	{`{"a":[1,2]}`, `[{"op":"test","path":"/a","value":[1,2]},{"op":"test","path":"/a/1","value":2}]`},
	{`{"a":[1,2]}`, `[{"op":"test","path":"/a","value":{"0":1}}]`},
	{`{"a":{"0":1}}`, `[{"op":"test","path":"/a","value":[1]}]`},
}

func TestApply(t *testing.T) {
	for _, tc := range applyCases {
		checkApply(t, []byte(tc.doc), []byte(tc.patch))
	}
}

func FuzzApply(f *testing.F) {
	for _, tc := range applyCases {
		f.Add([]byte(tc.doc), []byte(tc.patch))
	}
	f.Fuzz(func(t *testing.T, doc, patch []byte) {
		checkApply(t, doc, patch)
	})
}

// TestApplyPanicsOfV4 checks what Apply answers where v4 panics.
func TestApplyPanicsOfV4(t *testing.T) {
	for _, tc := range []struct {
		doc, patch string
		want       string // "" for an error
	}{
		{`{"a":["x",null]}`, `[{"op":"test","path":"/a","value":["x",null]}]`, `{"a":["x",null]}`},
		{`{"a":["x",null]}`, `[{"op":"test","path":"/a","value":[null,null]}]`, ""},
		{`{"a":["x",null]}`, `[{"op":"test","path":"/a","value":["x","y"]}]`, ""},
		{`{"a":1}`, `[{"op":"replace","path":""}]`, ""},
		{`{"a":1}`, `[{"op":"test","path":""}]`, ""},
		{`{"a":1}`, `[{"op":"add","path":"/n","value":null},{"op":"copy","from":"/n","path":"/m"},{"op":"add","path":"/m/x","value":1}]`, ""},
	} {
		p, err := v4.DecodePatch([]byte(tc.patch))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, panicked := v4Apply(p, []byte(tc.doc)); !panicked {
			t.Errorf("%s on %s: v4 does not panic", tc.patch, tc.doc)
		}
		got, err := Apply([]byte(tc.doc), opsOf(p), 0)
		if tc.want == "" && err == nil || tc.want != "" && string(got) != tc.want {
			t.Errorf("Apply(%s, %s) = %s, %v; want %q", tc.doc, tc.patch, got, err, tc.want)
		}
	}
}

// TestApplyCopyLimit checks the bound on copies, and that the doubling
// patch of issue 17 (an add and 24 copies, 2 KB) stops at it.
func TestApplyCopyLimit(t *testing.T) {
	doc := []byte(`{"a":"` + strings.Repeat("x", 98) + `"}`) // "a" is 100 bytes
	for _, tc := range []struct {
		copies int
		limit  int64
		ok     bool
	}{
		{3, 300, true}, {4, 399, false}, {4, 400, true}, {1000, 0, true},
	} {
		var ops []string
		for range tc.copies {
			ops = append(ops, `{"op":"copy","from":"/a","path":"/b"}`)
		}
		_, err := Apply(doc, decodeOps(t, "["+strings.Join(ops, ",")+"]"), tc.limit)
		if ok := err == nil; ok != tc.ok || (!ok && !errors.Is(err, ErrCopyLimit)) {
			t.Errorf("%d copies of 100 bytes, limit %d: %v, want ok %v", tc.copies, tc.limit, err, tc.ok)
		}
	}
	ops := []string{`{"op":"add","path":"/l","value":["` + strings.Repeat("a", 100) + `"]}`}
	for range 24 {
		ops = append(ops, `{"op":"copy","from":"/l","path":"/l/-"}`)
	}
	patch := "[" + strings.Join(ops, ",") + "]"
	if _, err := Apply([]byte(`{}`), decodeOps(t, patch), 3<<20); !errors.Is(err, ErrCopyLimit) {
		t.Errorf("the doubling patch (%d bytes): %v, want ErrCopyLimit", len(patch), err)
	}
}

// TestApplyDeep checks a deep patch against v4 (whose time grows with the
// depth squared; Apply's linearly).
func TestApplyDeep(t *testing.T) {
	const depth = 500
	value := strings.Repeat(`{"a":`, depth) + `1` + strings.Repeat(`}`, depth)
	path := strings.Repeat("/a", depth)
	patch := fmt.Sprintf(`[{"op":"add","path":"/v","value":%s},{"op":"replace","path":"/v%s","value":2},{"op":"test","path":"/v","value":%s}]`,
		value, path, strings.Replace(value, "1", "2", 1))
	checkApply(t, []byte(`{"x":1}`), []byte(patch))
}

// TestAppendCompact checks appendCompact against json.Marshal of a
// json.RawMessage.
func TestAppendCompact(t *testing.T) {
	for _, s := range []string{`{ "a" : [ 1 , "<b>&\u2028\"" , {} ] }`, "\"\u2028\u2029\xe2\x80\"", `"\\"`, `"a\"<"`, ` 1 `, `"\xff"`} {
		checkCompact(t, []byte(s))
	}
}

func FuzzAppendCompact(f *testing.F) {
	f.Add([]byte(`{ "a" : [ 1 , "<b>&\u2028\"" , {} ] }`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkCompact(t, b)
	})
}

func checkCompact(t *testing.T, b []byte) {
	t.Helper()
	if !json.Valid(b) {
		return
	}
	want, err := json.Marshal(json.RawMessage(b))
	if err != nil {
		t.Fatal(err)
	}
	if got := appendCompact(nil, b); !bytes.Equal(got, want) {
		t.Fatalf("appendCompact(%q) = %q, want %q", b, got, want)
	}
}
