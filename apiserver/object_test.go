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
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"kloop.dev/kloop/apiserver/internal/jsontree"
)

// TestConcurrentWritesShareNoState writes the same objects from several
// goroutines at once — updates, merge patches, status updates, an update
// that takes fields from the stored state (a Service's cluster IPs) — so
// that the race detector sees any write to the stored state the writers
// share (the decoded form of the current object), and checks the result.
func TestConcurrentWritesShareNoState(t *testing.T) {
	s := newTestServer(t, Options{Token: "t"})
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

// FuzzDecodeMap checks decodeMap, and the fast decoder it tries first
// (jsontree.Decode), against apimachinery's util/json, which decodes
// unstructured objects: when jsontree.Decode decodes a document, it gives
// util/json's tree, and decodeMap decodes every object util/json does, to
// the same tree.
func FuzzDecodeMap(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"<y>"}},"data":{"k":"v\u2028"}}`,
		`{"a":[1,2.5,-0,1e300,1e-7,"\u0000",true,null,{}],"b":"\"\\"}`,
		`{"n":12345678901234567890,"f":0.000001,"g":123456789012345678901234}`,
		`{"a":"\ud83d\ude00","b":"\xff","a":1}`,
		` {"a" : 1 , "b":[ ] ,"c":{ } } `,
		`{"a":1e400}`, `null`, `[1]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want map[string]any
		wantErr := utiljson.Unmarshal(data, &want)
		if got, ok := jsontree.Decode(data); ok {
			if wantErr != nil {
				t.Fatalf("jsontree.Decode(%q) = %v, util/json fails: %v", data, got, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("jsontree.Decode(%q) = %#v, util/json gives %#v", data, got, want)
			}
		}
		if wantErr != nil || want == nil {
			return
		}
		got, err := decodeMap(data)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeMap(%q) = %#v, %v; util/json gives %#v", data, got, err, want)
		}
	})
}
