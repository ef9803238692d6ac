package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
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

// TestConcurrentWritesShareNoState writes the same objects from several
// goroutines at once — updates, merge patches, status updates, an update
// that takes fields from the stored state (a Service's cluster IPs) — so
// that the race detector sees any write to the stored state the writers
// share (the decoded form of the current object), and checks the result.
func TestConcurrentWritesShareNoState(t *testing.T) {
	s, err := New(Options{Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, ctype, body string) (int, string) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer t")
		req.Header.Set("Content-Type", ctype)
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	const ns = "/api/v1/namespaces/default/"
	for _, c := range []struct{ path, body string }{
		{ns + "configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{"a":"b"}},"data":{"k":"v"}}`},
		{ns + "services", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc"},"spec":{"ports":[{"port":80}]}}`},
		{ns + "pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}`},
	} {
		if code, body := do("POST", c.path, "application/json", c.body); code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", c.path, code, body)
		}
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 25 {
				for _, r := range []struct{ method, path, ctype, body string }{
					{"PUT", ns + "configmaps/cm", "application/json", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{"a":"b","w":"%d"}},"data":{"k":"%d"}}`, w, i)},
					{"PATCH", ns + "configmaps/cm", "application/merge-patch+json", fmt.Sprintf(`{"metadata":{"annotations":{"w%d":"%d"}}}`, w, i)},
					{"PUT", ns + "services/svc", "application/json", fmt.Sprintf(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc","labels":{"i":"%d"}},"spec":{"ports":[{"port":80}]}}`, i)},
					{"PATCH", ns + "pods/p/status", "application/merge-patch+json", fmt.Sprintf(`{"status":{"message":"%d-%d"}}`, w, i)},
					{"PATCH", ns + "pods/p", "application/merge-patch+json", fmt.Sprintf(`{"metadata":{"labels":{"w%d":"%d"}}}`, w, i)},
				} {
					if code, body := do(r.method, r.path, r.ctype, r.body); code != http.StatusOK {
						t.Errorf("%s %s: %d %s", r.method, r.path, code, body)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	code, body := do("GET", ns+"services/svc", "", "")
	var svc corev1.Service
	if err := json.Unmarshal([]byte(body), &svc); code != http.StatusOK || err != nil {
		t.Fatalf("GET service: %d %v %s", code, err, body)
	}
	if svc.Spec.ClusterIP == "" || len(svc.Spec.ClusterIPs) != 1 || svc.Spec.ClusterIPs[0] != svc.Spec.ClusterIP {
		t.Fatalf("service lost its cluster IPs: %+v", svc.Spec)
	}
	code, body = do("GET", ns+"pods/p", "", "")
	var pod corev1.Pod
	if err := json.Unmarshal([]byte(body), &pod); code != http.StatusOK || err != nil {
		t.Fatalf("GET pod: %d %v %s", code, err, body)
	}
	if len(pod.Labels) != 4 || pod.Status.Message == "" {
		t.Fatalf("pod: labels %v, status message %q: want the four writers' labels and a message", pod.Labels, pod.Status.Message)
	}
}

// FuzzEncodeStored: an object encoded with a gap for its resourceVersion,
// the revision filled in, is byte for byte what json.Marshal makes of it.
func FuzzEncodeStored(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","labels":{"resourceVersion":"x"}},"data":{"<&>":"\u2028"}}`,
		`{"metadata":{}}`,
		`{"metadata":{"uid":"u","selfLink":"s","annotations":{"a":"1"}},"spec":{"metadata":{"resourceVersion":"9"}},"aaa":[1,2.5,null,true]}`,
		`{"metadata":{"resourceVersion":"7","zzz":{"k":1e300}},"Metadata":1}`,
	} {
		f.Add(s, int64(12345))
	}
	f.Fuzz(func(t *testing.T, data string, rev int64) {
		obj, err := decodeMap([]byte(data))
		if err != nil {
			return
		}
		m, ok := obj["metadata"].(map[string]any)
		if !ok {
			return
		}
		rv := formatRV(rev)
		m["resourceVersion"] = rv
		want, wantErr := json.Marshal(obj)
		delete(m, "resourceVersion")
		pre, off, err := encodeStored(obj)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%s: encodeStored error %v, json.Marshal error %v", data, err, wantErr)
		}
		if err != nil {
			return
		}
		got := string(pre[:off]) + `"resourceVersion":"` + rv + `"` + string(pre[off:])
		if got != string(want) {
			t.Fatalf("%s:\n got %s\nwant %s", data, got, want)
		}
	})
}
