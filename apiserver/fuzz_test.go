package apiserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestParseResourcePath(t *testing.T) {
	for _, tc := range []struct {
		path string
		ok   bool
		want requestInfo
	}{
		{"/api/v1/pods", true, requestInfo{gv: gvOf("", "v1"), resource: "pods"}},
		{"/api/v1/namespaces", true, requestInfo{gv: gvOf("", "v1"), resource: "namespaces"}},
		{"/api/v1/namespaces/ns", true, requestInfo{gv: gvOf("", "v1"), resource: "namespaces", name: "ns"}},
		{"/api/v1/namespaces/ns/status", true, requestInfo{gv: gvOf("", "v1"), resource: "namespaces", name: "ns", subresource: "status"}},
		{"/api/v1/namespaces/ns/pods", true, requestInfo{gv: gvOf("", "v1"), resource: "pods", namespace: "ns"}},
		{"/api/v1/namespaces/ns/pods/p/status", true, requestInfo{gv: gvOf("", "v1"), resource: "pods", namespace: "ns", name: "p", subresource: "status"}},
		{"/apis/apps/v1/namespaces/ns/deployments/d/scale", true, requestInfo{gv: gvOf("apps", "v1"), resource: "deployments", namespace: "ns", name: "d", subresource: "scale"}},
		{"/api/v1/watch/namespaces/ns/pods", true, requestInfo{gv: gvOf("", "v1"), resource: "pods", namespace: "ns", watchPath: true}},
		{"/apis/example.com/v1/widgets/w", true, requestInfo{gv: gvOf("example.com", "v1"), resource: "widgets", name: "w"}},
		{"/api/v1/namespaces/ns/pods/p/status/extra", false, requestInfo{}},
		{"/api/v1/watch", false, requestInfo{}},
		{"/apis/apps", false, requestInfo{}},
		{"/other/v1/pods", false, requestInfo{}},
	} {
		got, ok := parseResourcePath(tc.path)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%s: got %+v %v, want %+v %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

func gvOf(g, v string) schema.GroupVersion { return schema.GroupVersion{Group: g, Version: v} }

// FuzzRouting sends arbitrary paths and methods: the server answers every one
// with a status below 500 and, for errors, a Status body.
func FuzzRouting(f *testing.F) {
	for _, p := range []string{"/api/v1/pods", "/apis/apps/v1/namespaces/default/deployments/x/scale", "/api/v1/namespaces/default/configmaps/a/status", "/apis", "/api/v1/watch/pods", "/openapi/v3/apis/apps/v1", "//api//v1", "/api/v1/namespaces/%2F/pods"} {
		f.Add("GET", p, "watch=false")
	}
	f.Add("DELETE", "/api/v1/namespaces/default/configmaps", "labelSelector=a%20in%20(")
	f.Add("PATCH", "/api/v1/namespaces/kube-system", "")
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, method, path, query string) {
		if !strings.HasPrefix(path, "/") || strings.Contains(query, "watch") || strings.Contains(path, "/watch") {
			return // watches block; they are tested elsewhere
		}
		switch method {
		case "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD":
		default:
			method = "GET"
		}
		req := httptest.NewRequest(method, "http://x/", strings.NewReader(`{}`))
		req.URL.Path, req.URL.RawQuery = path, query
		req.Header.Set("Authorization", "Bearer t")
		req.Header.Set("Content-Type", "application/merge-patch+json")
		checkResponse(t, s, req)
	})
}

// FuzzDecode creates and patches objects from arbitrary bodies.
func FuzzDecode(f *testing.F) {
	for _, b := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}}}}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"p-","labels":{"a":"b"},"finalizers":["x/y"]},"spec":{"containers":[{"name":"c","image":"i"}]}}`,
		`{"metadata":{"name":1}}`, `null`, `[]`, `{"apiVersion":"v1","kind":"ConfigMap","metadata":null}`,
	} {
		f.Add(b, "/api/v1/namespaces/default/configmaps", "application/json")
	}
	// The kinds of the table, with what their strategies parse: a
	// DaemonSet's template generation, an HPA v1's annotations, a CSR's
	// PEM request, a CronJob's schedule.
	for _, c := range []struct{ body, path string }{
		{`{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"d","annotations":{"deprecated.daemonset.template.generation":"x"}},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`, "/apis/apps/v1/namespaces/default/daemonsets"},
		{`{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"s"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}},"volumeClaimTemplates":[{"metadata":{"name":"d"}}]}}`, "/apis/apps/v1/namespaces/default/statefulsets"},
		{`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i"}]}}}}`, "/apis/batch/v1/namespaces/default/jobs"},
		{`{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"c"},"spec":{"schedule":"*/5 * * * *","timeZone":"Etc/UTC","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i"}]}}}}}}`, "/apis/batch/v1/namespaces/default/cronjobs"},
		{`{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"h","annotations":{"autoscaling.alpha.kubernetes.io/metrics":"[{\"type\":\"Pods\",\"pods\":{\"metricName\":\"q\",\"targetAverageValue\":\"1\"}}]","autoscaling.alpha.kubernetes.io/behavior":"{\"ScaleUp\":{}}"}},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"d"},"maxReplicas":3}}`, "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"},
		{`{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"c"},"spec":{"request":"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K","signerName":"example.com/s","usages":["client auth"]}}`, "/apis/certificates.k8s.io/v1/certificatesigningrequests"},
	} {
		f.Add(c.body, c.path, "application/json")
	}
	f.Add(`[{"op":"add","path":"/data/x","value":"1"}]`, "/api/v1/namespaces/kube-system", "application/json-patch+json")
	f.Add(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"fs.f.io"},"spec":{"group":"f.io","scope":"Namespaced","names":{"plural":"fs","kind":"F"},"conversion":{"strategy":"Webhook"},"versions":[{"name":"v1","served":true,"storage":true,"additionalPrinterColumns":[{"name":"A","type":"date","jsonPath":".spec.a"}],"selectableFields":[{"jsonPath":".spec.a"}],"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-validations":[{"rule":"self.a != ''"}],"properties":{"a":{"type":"string","default":"x"}}}}}}}]}}`, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json")
	f.Add(`{"spec":{"finalizers":null}}`, "/api/v1/namespaces/default", "application/strategic-merge-patch+json")
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body, path, contentType string) {
		if !strings.HasPrefix(path, "/") || strings.Contains(path, "watch") {
			return
		}
		for _, method := range []string{"POST", "PUT", "PATCH"} {
			req := httptest.NewRequest(method, "http://x/", strings.NewReader(body))
			req.URL.Path = path
			req.Header.Set("Authorization", "Bearer t")
			req.Header.Set("Content-Type", contentType)
			checkResponse(t, s, req)
		}
	})
}

func fuzzServer(f *testing.F) *Server {
	s := newTestServer(f, Options{Token: "t"})
	return s
}

// kubeServerError reports whether a 500's body is one of kube-apiserver's
// answers to a namespace that cannot be a path segment (router.go: checkKey,
// checkCreateNamespace).
func kubeServerError(body string) bool {
	return strings.Contains(body, `"message":"invalid key: `) || strings.Contains(body, `"message":"Internal error occurred: invalid resource name `)
}

func checkResponse(t *testing.T, s *Server, req *http.Request) {
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code >= 500 && !kubeServerError(rec.Body.String()) {
		t.Fatalf("%s %s: %d %s", req.Method, req.URL, rec.Code, rec.Body)
	}
	if rec.Code == http.StatusNotFound && rec.Body.String() == "404 page not found\n" {
		// Outside the served group versions kube-apiserver answers with its
		// HTTP mux's plain-text 404, and so does the server (notFound).
		if gv, ok := groupVersionOf(req.URL.Path); !ok || !s.reg.servesGroupVersion(gv) {
			return
		}
	}
	if rec.Code >= 400 && req.Method != "HEAD" {
		var st metav1.Status
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Kind != "Status" || int(st.Code) != rec.Code {
			t.Fatalf("%s %s: %d with a body that is not its Status: %s", req.Method, req.URL, rec.Code, rec.Body)
		}
	}
}
