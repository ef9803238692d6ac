package client

import (
	"net/url"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/informer"
)

// Object URLs carry names and namespaces escaped once: the server decodes
// back exactly the name (RBAC names may hold ';', ',', '?', ' '). Names that
// cannot be a path segment are a BadRequest, as in client-go.
func TestObjectURLs(t *testing.T) {
	cmGVK := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	crGVK := schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(cmGVK, meta.RESTScopeNamespace)
	mapper.Add(crGVK, meta.RESTScopeRoot)
	c, err := New(&rest.Config{Host: "https://h:6443/prefix"}, Options{Mapper: informer.StaticMapper(mapper)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		gvk          schema.GroupVersionKind
		ns, obj, sub string
		want         string // decoded path; "" for a BadRequest
	}{
		{"plain", cmGVK, "ns", "web-1", "", "/prefix/api/v1/namespaces/ns/configmaps/web-1"},
		{"collection", cmGVK, "ns", "", "", "/prefix/api/v1/namespaces/ns/configmaps"},
		{"subresource", cmGVK, "ns", "web-1", "status", "/prefix/api/v1/namespaces/ns/configmaps/web-1/status"},
		{"colon", crGVK, "", "system:controller:x", "", "/prefix/apis/rbac.authorization.k8s.io/v1/clusterroles/system:controller:x"},
		{"semicolon", crGVK, "", "a;b", "", "/prefix/apis/rbac.authorization.k8s.io/v1/clusterroles/a;b"},
		{"comma", crGVK, "", "a,b", "", "/prefix/apis/rbac.authorization.k8s.io/v1/clusterroles/a,b"},
		{"question mark", crGVK, "", "a?b", "", "/prefix/apis/rbac.authorization.k8s.io/v1/clusterroles/a?b"},
		{"space", crGVK, "", "a b", "", "/prefix/apis/rbac.authorization.k8s.io/v1/clusterroles/a b"},
		{"slash in name", crGVK, "", "a/status", "", ""},
		{"percent in name", crGVK, "", "a%2Fb", "", ""},
		{"dot dot", crGVK, "", "..", "", ""},
		{"dot", cmGVK, "ns", ".", "", ""},
		{"slash in namespace", cmGVK, "a/b", "x", "", ""},
		{"dot dot namespace", cmGVK, "..", "x", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := c.mapping(t.Context(), tc.gvk)
			if err != nil {
				t.Fatal(err)
			}
			u, err := c.url(m, tc.ns, tc.obj, tc.sub)
			if tc.want == "" {
				if !apierrors.IsBadRequest(err) {
					t.Fatalf("url = %v, %v; want a BadRequest", u, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// What the server sees: the request's URL, parsed.
			got, err := url.Parse(u.String())
			if err != nil {
				t.Fatal(err)
			}
			if got.Path != tc.want || got.RawQuery != "" {
				t.Fatalf("%s decodes to path %q query %q, want %q", u, got.Path, got.RawQuery, tc.want)
			}
		})
	}
}
