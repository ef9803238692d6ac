package apiserver

import (
	"net/http"
	"strings"
	"testing"
)

// TestMergePatchWhiteSpace checks that a merge patch surrounded by bytes
// that are not JSON white space (form feed, vertical tab, Unicode spaces)
// is refused as invalid JSON whichever way the patch is applied, and that
// JSON white space is accepted.
func TestMergePatchWhiteSpace(t *testing.T) {
	s := newTestServer(t, Options{Token: "t"})
	const cms = "/api/v1/namespaces/default/configmaps"
	if rec := serveOnce(t, s, "POST", cms, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"k":"v"}}`); rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct {
		name, pre, post string
		want            int
	}{
		{"json white space", " \t\r\n", "\n\r\t ", http.StatusOK},
		{"form feed", "\f", "", http.StatusBadRequest},
		{"vertical tab", "", "\v", http.StatusBadRequest},
		{"no-break space", "\u00a0", "", http.StatusBadRequest},
		{"next line", "", "\u0085", http.StatusBadRequest},
		{"line separator", "\u2028", "\u2029", http.StatusBadRequest},
		{"ideographic space", "\u3000", "", http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := serveOnce(t, s, "PATCH", cms+"/cm", "application/merge-patch+json", tc.pre+`{"data":{"k":"`+tc.name+`"}}`+tc.post)
			if rec.Code != tc.want {
				t.Fatalf("PATCH %q: %d %s, want %d", tc.pre+"{...}"+tc.post, rec.Code, rec.Body, tc.want)
			}
			if tc.want == http.StatusBadRequest && !strings.Contains(rec.Body.String(), "invalid JSON patch") {
				t.Errorf("PATCH %q: %s, want the invalid JSON patch error", tc.pre+"{...}"+tc.post, rec.Body)
			}
		})
	}
}
