package apiserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestTableKinds checks every row of the table of built-in kinds: client-go's
// scheme knows its kind, the server serves it, and its columns and cells
// agree in number.
func TestTableKinds(t *testing.T) {
	s := newTestServer(t, Options{})
	for _, d := range tableKinds() {
		t.Run(d.gv.WithResource(d.resource).String(), func(t *testing.T) {
			k := d.build().ready()
			if k == nil {
				t.Fatalf("%s is not in client-go's scheme", d.gv.WithKind(d.kind))
			}
			if s.reg.get(k.gvr) == nil {
				t.Fatalf("%s is not served", k.gvr)
			}
			if k.cells != nil {
				obj := map[string]any{"apiVersion": k.apiVersion(), "kind": k.kind, "metadata": map[string]any{"name": "x", "creationTimestamp": "2026-01-01T00:00:00Z"}}
				if n, want := len(k.cells(obj, s.opts.Now())), len(k.columns); n != want {
					t.Errorf("%d cells for %d columns", n, want)
				}
			}
		})
	}
}

// kindCase is one write of a table-driven test of a kind's defaults and
// validation, sent to a server through its handler.
type kindCase struct {
	name   string
	method string // POST by default
	path   string
	body   string
	code   int
	// want are substrings of the answer (the object written, or the
	// Status of a refusal).
	want []string
}

func runKindCases(t *testing.T, cases []kindCase) {
	t.Helper()
	s := newTestServer(t, Options{Token: "t"})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			ctype := "application/json"
			if method == http.MethodPatch {
				ctype = "application/merge-patch+json"
			}
			rec := serveOnce(t, s, method, tc.path, ctype, tc.body)
			if rec.Code != tc.code {
				t.Fatalf("%s %s: code %d, want %d: %s", method, tc.path, rec.Code, tc.code, rec.Body)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, rec.Body.Bytes()); err != nil {
				t.Fatalf("answer is not JSON: %v: %s", err, rec.Body)
			}
			for _, w := range tc.want {
				if !strings.Contains(compact.String(), w) {
					t.Errorf("answer lacks %s:\n%s", w, compact.String())
				}
			}
		})
	}
}

// TestTypedAdapters checks that an object that does not convert into its
// kind's Go type gets a validation error, not a panic.
func TestTypedAdapters(t *testing.T) {
	type T struct {
		N int `json:"n"`
	}
	v := typedValidation(func(*T) field.ErrorList { return nil })
	if errs := v(map[string]any{"n": "not a number"}); len(errs) != 1 {
		t.Errorf("errors = %v, want one", errs)
	}
	f := typedFunc(func(t *T) bool { t.N++; return true })
	obj := map[string]any{"n": int64(1)}
	f(obj)
	if obj["n"] != int64(2) {
		t.Errorf("typedFunc result = %v", obj)
	}
}
