package openapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
	kproto "k8s.io/kube-openapi/pkg/util/proto"
)

func serveHTTP(t *testing.T, h http.Handler) (*rest.Config, func()) {
	t.Helper()
	srv := httptest.NewServer(h)
	tr := &http.Transport{}
	cfg := &rest.Config{Host: srv.URL, Transport: tr}
	return cfg, func() {
		tr.CloseIdleConnections()
		srv.Close()
	}
}

func TestClientGoReadsDocuments(t *testing.T) {
	b := newBuilder(t)
	cfg, stop := serveHTTP(t, b)
	defer stop()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// v2 as kubectl fetches it: protobuf.
	doc, err := dc.OpenAPISchemaWithContext(context.Background())
	if err != nil {
		t.Fatalf("OpenAPISchema: %v", err)
	}
	models, err := kproto.NewOpenAPIData(doc)
	if err != nil {
		t.Fatal(err)
	}
	if lookupResource(models, cronGVK) == nil || lookupResource(models, podGVK) == nil {
		t.Fatal("v2 protobuf lacks models")
	}
	// v3 through client-go's openapi client and openapi3 root, as kubectl
	// explain and the field validation verifier do.
	oc := dc.OpenAPIV3()
	paths, err := oc.Paths()
	if err != nil {
		t.Fatalf("Paths: %v", err)
	}
	if _, ok := paths["apis/batch.tutorial.kubebuilder.io/v1"]; !ok {
		t.Fatalf("paths %v", paths)
	}
	raw, err := paths["api/v1"].Schema("application/json")
	if err != nil {
		t.Fatalf("Schema: %v", err)
	}
	if explainSchema(t, raw, podGVK, "pods") == nil {
		t.Fatal("explain cannot find Pod")
	}
	root := openapi3.NewRoot(oc)
	gvs, err := root.GroupVersions()
	if err != nil || len(gvs) != 7 {
		t.Fatalf("GroupVersions %v, %v", gvs, err)
	}
	for _, gv := range []schema.GroupVersion{cronGVK.GroupVersion(), podGVK.GroupVersion(), deployGVK.GroupVersion()} {
		spec, err := root.GVSpec(gv)
		if err != nil {
			t.Fatalf("GVSpec(%v): %v", gv, err)
		}
		if len(spec.Components.Schemas) == 0 || len(spec.Paths.Paths) == 0 {
			t.Fatalf("empty spec for %v", gv)
		}
	}
	if _, err := root.GVSpec(schema.GroupVersion{Group: "nope.io", Version: "v1"}); err == nil {
		t.Fatal("unknown group version found")
	}
}

func TestHandlerHTTP(t *testing.T) {
	b := newBuilder(t)
	key := "apis/apps/v1"
	d, _ := b.V3(key)
	tests := []struct {
		name, method, path, accept, ifNoneMatch string
		code                                    int
		contentType, location, cache            string
	}{
		{name: "v2 json", path: "/openapi/v2", code: 200, contentType: ContentTypeJSON},
		{name: "v2 proto", path: "/openapi/v2", accept: AcceptV2Proto + ",application/json", code: 200, contentType: ContentTypeV2Proto},
		{name: "v2 not modified", path: "/openapi/v2", ifNoneMatch: mustV2(t, b).ETag(), code: 304},
		{name: "v3 discovery", path: "/openapi/v3", code: 200, contentType: ContentTypeJSON},
		{name: "v3 doc current hash", path: "/openapi/v3/" + key + "?hash=" + d.Hash, code: 200, contentType: ContentTypeJSON, cache: "public, immutable"},
		{name: "v3 doc stale hash", path: "/openapi/v3/" + key + "?hash=ABC", code: 301, location: "/openapi/v3/" + key + "?hash=" + d.Hash},
		{name: "v3 doc no hash", path: "/openapi/v3/" + key, code: 200, cache: "no-cache, private", contentType: ContentTypeJSON},
		{name: "v3 proto", path: "/openapi/v3/" + key, accept: AcceptV3Proto, code: 200, contentType: ContentTypeV3Proto},
		{name: "v3 unknown", path: "/openapi/v3/apis/nope/v1", code: 404, contentType: ContentTypeJSON},
		{name: "v3 group-version form is not a path", path: "/openapi/v3/apps/v1", code: 404},
		{name: "other", path: "/openapi/v4", code: 404},
		{name: "post", method: "POST", path: "/openapi/v2", code: 405},
		{name: "head", method: "HEAD", path: "/openapi/v2", code: 200, contentType: ContentTypeJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.method
			if m == "" {
				m = "GET"
			}
			req := httptest.NewRequest(m, tt.path, nil)
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			if tt.ifNoneMatch != "" {
				req.Header.Set("If-None-Match", tt.ifNoneMatch)
			}
			rec := httptest.NewRecorder()
			b.ServeHTTP(rec, req)
			if rec.Code != tt.code {
				t.Fatalf("code %d, want %d: %s", rec.Code, tt.code, rec.Body.String())
			}
			if tt.contentType != "" && rec.Header().Get("Content-Type") != tt.contentType {
				t.Fatalf("content type %q", rec.Header().Get("Content-Type"))
			}
			if tt.location != "" && rec.Header().Get("Location") != tt.location {
				t.Fatalf("location %q", rec.Header().Get("Location"))
			}
			if tt.cache != "" && rec.Header().Get("Cache-Control") != tt.cache {
				t.Fatalf("cache-control %q", rec.Header().Get("Cache-Control"))
			}
			if tt.code == 200 && rec.Header().Get("ETag") == "" {
				t.Fatal("no ETag")
			}
			if tt.code >= 400 {
				var st map[string]any
				if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st["kind"] != "Status" || int(st["code"].(float64)) != tt.code {
					t.Fatalf("body is not a Status: %s", rec.Body.String())
				}
			}
			if m == "HEAD" && rec.Body.Len() != 0 {
				t.Fatal("HEAD with a body")
			}
		})
	}
}

func TestRebuildOnlyOnChange(t *testing.T) {
	b := newBuilder(t)
	builds := b.Builds()
	v2 := mustV2(t, b).Hash
	apps, _ := b.V3("apps/v1")
	// The same set again (in another order) builds nothing.
	rs := testResources(t)
	for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
		rs[i], rs[j] = rs[j], rs[i]
	}
	if err := b.Set(rs); err != nil {
		t.Fatal(err)
	}
	if b.Builds() != builds || mustV2(t, b).Hash != v2 {
		t.Fatal("rebuilt for an unchanged set")
	}
	// A new CRD changes v2 and adds a group version; untouched group
	// versions keep their hash (clients keep their cached copies).
	widget := Resource{GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, Plural: "widgets"}
	if err := b.Set(append(rs, widget)); err != nil {
		t.Fatal(err)
	}
	if b.Builds() != builds+1 || mustV2(t, b).Hash == v2 {
		t.Fatal("not rebuilt after adding a CRD")
	}
	if d, ok := b.V3("example.com/v1"); !ok || !strings.Contains(string(d.JSON), "com.example.v1.Widget") {
		t.Fatal("new group version missing")
	}
	if d, _ := b.V3("apps/v1"); d != apps {
		t.Fatal("unrelated group version was rebuilt")
	}
	// Removing it removes the group version.
	if err := b.Set(rs); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.V3("example.com/v1"); ok {
		t.Fatal("removed group version still served")
	}
	if !strings.Contains(string(b.V3Discovery().JSON), "apis/apps/v1") || strings.Contains(string(b.V3Discovery().JSON), "example.com") {
		t.Fatalf("discovery %s", b.V3Discovery().JSON)
	}
}

func TestSetRejectsBadResources(t *testing.T) {
	pod := reflect.TypeFor[corev1.Pod]()
	tests := []struct {
		name string
		r    Resource
	}{
		{"no kind", Resource{GVK: schema.GroupVersionKind{Version: "v1"}, Plural: "x"}},
		{"no plural", Resource{GVK: podGVK}},
		{"both schema and type", Resource{GVK: podGVK, Plural: "pods", Type: pod, Schema: cronCRD(t).Spec.Versions[0].Schema.OpenAPIV3Schema}},
		{"type not struct", Resource{GVK: podGVK, Plural: "pods", Type: reflect.TypeFor[string]()}},
		{"bad verb", Resource{GVK: podGVK, Plural: "pods", Verbs: []string{"explode"}}},
		{"bad subresource", Resource{GVK: podGVK, Plural: "pods", Subresources: []string{"exec"}}},
	}
	b, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := mustV2(t, b).Hash
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := b.Set([]Resource{tt.r}); err == nil {
				t.Fatal("accepted")
			}
			if mustV2(t, b).Hash != before {
				t.Fatal("failed Set changed the documents")
			}
		})
	}
	if _, err := New(Options{Title: "a\nb"}); err == nil {
		t.Fatal("multi-line title accepted")
	}
}

func TestVerbsLimitOperations(t *testing.T) {
	b, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := Resource{GVK: podGVK, Plural: "pods", Namespaced: true, Type: reflect.TypeFor[corev1.Pod](), Verbs: []string{"get", "list"}}
	if err := b.Set([]Resource{r}); err != nil {
		t.Fatal(err)
	}
	d, _ := b.V3("v1")
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(d.JSON, &doc); err != nil {
		t.Fatal(err)
	}
	item := doc.Paths["/api/v1/namespaces/{namespace}/pods/{name}"]
	if _, ok := item["get"]; !ok {
		t.Fatal("get missing")
	}
	for _, m := range []string{"put", "patch", "delete"} {
		if _, ok := item[m]; ok {
			t.Fatalf("%s present without the verb", m)
		}
	}
	if _, ok := doc.Paths["/api/v1/pods"]["get"]; !ok {
		t.Fatal("all-namespaces list missing")
	}
}

// TestConcurrentSetAndServe: readers never see a half-built state while
// CRDs come and go (run with -race).
func TestConcurrentSetAndServe(t *testing.T) {
	b := newBuilder(t)
	base := testResources(t)
	widget := Resource{GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, Plural: "widgets"}
	done := make(chan struct{})
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(done)
		for i := range 20 {
			rs := base
			if i%2 == 0 {
				rs = append(append([]Resource{}, base...), widget)
			}
			if err := b.Set(rs); err != nil {
				errs <- err
				return
			}
		}
	})
	for _, path := range []string{"/openapi/v2", "/openapi/v3", "/openapi/v3/apis/apps/v1"} {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				rec := httptest.NewRecorder()
				b.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
				if rec.Code != http.StatusOK || !json.Valid(rec.Body.Bytes()) {
					errs <- fmt.Errorf("%s: %d", path, rec.Code)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
