package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBoundedAnswers checks that a field name of 1 MB gets a small
// answer: warnings cut as kube-apiserver cuts them, error texts bounded
// (kube-apiserver answers 1 to 4 MB).
func TestBoundedAnswers(t *testing.T) {
	s := newTestServer(t, Options{Token: "t"})
	const cms = "/api/v1/namespaces/default/configmaps"
	name := strings.Repeat("n", 1<<20)
	if rec := serveOnce(t, s, "POST", cms, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`); rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct {
		method, path, ctype, body string
		code                      int
		prefix, suffix            string // of the Status message
	}{
		{"POST", cms, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"` + name + `":1}`, http.StatusCreated, "", ""},
		{"POST", cms + "?fieldValidation=Strict", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"},"` + name + `":1}`, http.StatusBadRequest,
			`ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "nnn`, `nnn"`},
		{"POST", cms, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"` + name + `":"v"}}`, http.StatusUnprocessableEntity,
			`ConfigMap "c" is invalid: data[nnn`, `must be no more than 253 characters`},
		{"PATCH", cms + "/cm", "application/merge-patch+json", `{"data":{"` + name + `":1}}`, http.StatusUnprocessableEntity, ` "" is invalid: patch: Invalid value: "{`, `of type string`},
		{"PATCH", cms + "/cm", "application/strategic-merge-patch+json", `{"data":{"` + name + `":1}}`, http.StatusUnprocessableEntity, ` "" is invalid: patch: Invalid value: "map[data:map[nnn`, `cannot convert int64 to string`},
		{"GET", cms + "/" + strings.Repeat("x", 100_000), "", "", http.StatusNotFound, `configmaps "xxx`, `xxx" not found`},
	} {
		t.Run(fmt.Sprintf("%s %.60s", tc.method, tc.body), func(t *testing.T) {
			rec := serveOnce(t, s, tc.method, tc.path, tc.ctype, tc.body)
			if rec.Code != tc.code {
				t.Fatalf("%d %.300s, want %d", rec.Code, rec.Body, tc.code)
			}
			size := rec.Body.Len()
			for _, w := range rec.Header().Values("Warning") {
				size += len(w)
			}
			if size > 64<<10 {
				t.Errorf("the answer has %d bytes (body and warnings)", size)
			}
			if tc.prefix == "" {
				return
			}
			var st metav1.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(st.Message, tc.prefix) || !strings.HasSuffix(st.Message, tc.suffix) || !strings.Contains(st.Message, " bytes left out) ... ") {
				t.Errorf("message %.200s…%s, want %q…%q", st.Message, st.Message[max(0, len(st.Message)-100):], tc.prefix, tc.suffix)
			}
		})
	}
}

func TestBoundText(t *testing.T) {
	for _, s := range []string{"", "short", strings.Repeat("é", maxStatusText/2), strings.Repeat("é", maxStatusText), strings.Repeat("a€", maxStatusText), "x" + strings.Repeat("\xff", 2*maxStatusText)} {
		got := boundText(s)
		switch {
		case len(s) <= maxStatusText && got != s:
			t.Errorf("boundText of %d bytes changed it", len(s))
		case len(s) > maxStatusText && (len(got) > maxStatusText+64 || utf8.ValidString(s) && !utf8.ValidString(got) ||
			!strings.HasPrefix(s, got[:strings.Index(got, " ... (")]) || !strings.HasSuffix(s, got[strings.Index(got, ") ... ")+6:])):
			t.Errorf("boundText of %d bytes: %d bytes, %q…", len(s), len(got), got[:40])
		}
	}
}

// TestWarningHeaders checks the warning headers against kube-apiserver's
// warning recorder's rules.
func TestWarningHeaders(t *testing.T) {
	rep := func(n int, s string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%02d", i) + strings.Repeat(s, 298)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		texts []string
		want  []string // each header's text, unquoted
	}{
		{"small", []string{"a", "", `b "c" \d`}, []string{"a", `b "c" \d`}},
		{"control characters and invalid UTF-8 dropped", []string{"a\tb", "a\xffb", "ok"}, []string{"ok"}},
		{"one long", []string{strings.Repeat("é", 5000)}, []string{strings.Repeat("é", 256)}},
		{"up to the total", rep(13, "x"), rep(13, "x")},
		// The 14th passes the total: all are cut to 256 runes, and after
		// 16 the total is reached.
		{"past the total", rep(20, "x"), func() []string {
			var out []string
			for _, s := range rep(16, "x") {
				out = append(out, s[:256])
			}
			return out
		}()},
	} {
		got := warningHeaders(tc.texts)
		var texts []string
		for _, h := range got {
			rest, ok := strings.CutPrefix(h, `299 - "`)
			if !ok || !strings.HasSuffix(rest, `"`) {
				t.Fatalf("%s: header %q", tc.name, h)
			}
			texts = append(texts, strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(strings.TrimSuffix(rest, `"`)))
		}
		if strings.Join(texts, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: %d headers %.100q, want %d %.100q", tc.name, len(texts), texts, len(tc.want), tc.want)
		}
	}
}
