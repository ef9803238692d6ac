package admission_test

import (
	"encoding/json"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"kloop.dev/kloop/webhook/admission"
)

var patchCases = []struct{ name, from, to, patch string }{
	{"equal", `{"a":1,"b":[1,2],"c":{"d":null}}`, `{"c":{"d":null},"b":[1,2],"a":1}`, `[]`},
	{"add, remove, replace, sorted", `{"b":1,"c":2}`, `{"a":0,"b":3}`,
		`[{"op":"add","path":"/a","value":0},{"op":"replace","path":"/b","value":3},{"op":"remove","path":"/c"}]`},
	{"escaped keys", `{}`, `{"a/b":{"~c":true}}`, `[{"op":"add","path":"/a~1b","value":{"~c":true}}]`},
	{"array grows", `{"l":[1]}`, `{"l":[1,2,3]}`, `[{"op":"add","path":"/l/1","value":2},{"op":"add","path":"/l/2","value":3}]`},
	{"array shrinks from the end", `{"l":[1,2,3]}`, `{"l":[1]}`, `[{"op":"remove","path":"/l/2"},{"op":"remove","path":"/l/1"}]`},
	{"element changed", `{"l":[{"x":1},{"x":2}]}`, `{"l":[{"x":1},{"x":5,"y":6}]}`,
		`[{"op":"replace","path":"/l/1/x","value":5},{"op":"add","path":"/l/1/y","value":6}]`},
	{"type changes", `{"a":{"b":1},"c":[1],"d":"s"}`, `{"a":[1],"c":{"x":1},"d":null}`,
		`[{"op":"replace","path":"/a","value":[1]},{"op":"replace","path":"/c","value":{"x":1}},{"op":"replace","path":"/d","value":null}]`},
	{"numbers by text", `{"a":1,"b":12345678901234567890}`, `{"a":1.0,"b":12345678901234567891}`,
		`[{"op":"replace","path":"/a","value":1.0},{"op":"replace","path":"/b","value":12345678901234567891}]`},
	{"root replaced", `[1]`, `{"a":1}`, `[{"op":"replace","path":"","value":{"a":1}}]`},
}

func TestCreatePatch(t *testing.T) {
	for _, tc := range patchCases {
		t.Run(tc.name, func(t *testing.T) {
			ops, err := admission.CreatePatch([]byte(tc.from), []byte(tc.to))
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(ops)
			if err != nil {
				t.Fatal(err)
			}
			if len(ops) == 0 {
				got = []byte("[]")
			}
			if string(got) != tc.patch {
				t.Fatalf("patch\n%s\nwant\n%s", got, tc.patch)
			}
			checkApplies(t, []byte(tc.from), []byte(tc.to), got)
		})
	}
	for _, bad := range [][2]string{{`{`, `{}`}, {`{}`, `{} {}`}} {
		if _, err := admission.CreatePatch([]byte(bad[0]), []byte(bad[1])); err == nil {
			t.Errorf("CreatePatch(%q, %q): no error", bad[0], bad[1])
		}
	}
}

// checkApplies checks that patch turns from into to, with json-patch (the
// library kube-apiserver applies admission patches with).
func checkApplies(t *testing.T, from, to, patch []byte) {
	t.Helper()
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatalf("decoding %s: %v", patch, err)
	}
	if len(p) == 0 {
		if !jsonEqual(t, from, to) {
			t.Fatal("empty patch for different documents")
		}
		return
	}
	got, err := p.Apply(from)
	if err != nil {
		t.Fatalf("applying %s to %s: %v", patch, from, err)
	}
	if !jsonEqual(t, got, to) {
		t.Fatalf("patched %s\nwant %s\npatch %s", got, to, patch)
	}
}

func FuzzCreatePatch(f *testing.F) {
	for _, tc := range patchCases {
		if tc.name != "root replaced" && tc.name != "numbers by text" {
			f.Add(tc.from, tc.to)
		}
	}
	f.Fuzz(func(t *testing.T, from, to string) {
		var a, b map[string]any
		if json.Unmarshal([]byte(from), &a) != nil || json.Unmarshal([]byte(to), &b) != nil || a == nil || b == nil {
			return // objects only, as admission patches are
		}
		// Normalise the numbers so that jsonEqual's float64 comparison
		// and the patch's text comparison agree.
		from1, _ := json.Marshal(a)
		to1, _ := json.Marshal(b)
		ops, err := admission.CreatePatch(from1, to1)
		if err != nil {
			t.Fatal(err)
		}
		patch, err := json.Marshal(ops)
		if err != nil {
			t.Fatal(err)
		}
		if len(ops) == 0 {
			patch = []byte("[]")
		}
		checkApplies(t, from1, to1, patch)
	})
}

func FuzzDecodeReview(f *testing.F) {
	f.Add(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"a","operation":"CREATE","object":{"a":1}}}`)
	f.Add(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"a","dryRun":true,"oldObject":null}}`)
	f.Add(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`)
	f.Fuzz(func(t *testing.T, body string) {
		req, version, err := admission.DecodeReview([]byte(body))
		if err != nil {
			return
		}
		if version != admission.ReviewV1 && version != admission.ReviewV1beta1 {
			t.Fatalf("version %q accepted", version)
		}
		if _, err := json.Marshal(req); err != nil {
			t.Fatalf("a decoded request does not encode: %v", err)
		}
	})
}
