package openapi

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
	kproto "k8s.io/kube-openapi/pkg/util/proto"
	"k8s.io/kube-openapi/pkg/util/proto/validation"
	"sigs.k8s.io/yaml"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	podGVK       = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	deployGVK    = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	cronGVK      = schema.GroupVersionKind{Group: "batch.tutorial.kubebuilder.io", Version: "v1", Kind: "CronJob"}
	cronBetaGVK  = schema.GroupVersionKind{Group: "batch.tutorial.kubebuilder.io", Version: "v1beta1", Kind: "CronJob"}
	crdGVK       = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	leaseGVK     = schema.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}
	namespaceGVK = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
)

func cronCRD(t testing.TB) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	raw, err := os.ReadFile("testdata/kubebuilder_cronjobs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

func testResources(t testing.TB) []Resource {
	rs := []Resource{
		{GVK: podGVK, Plural: "pods", Namespaced: true, Type: reflect.TypeFor[corev1.Pod](), ListType: reflect.TypeFor[corev1.PodList](), Subresources: []string{"status"}, StrategicMergePatch: true},
		{GVK: namespaceGVK, Plural: "namespaces", Type: reflect.TypeFor[corev1.Namespace](), ListType: reflect.TypeFor[corev1.NamespaceList](), StrategicMergePatch: true},
		{GVK: configMapGVK, Plural: "configmaps", Namespaced: true, Type: reflect.TypeFor[corev1.ConfigMap](), StrategicMergePatch: true},
		{GVK: deployGVK, Plural: "deployments", Namespaced: true, Type: reflect.TypeFor[appsv1.Deployment](), ListType: reflect.TypeFor[appsv1.DeploymentList](), Subresources: []string{"status", "scale"}, StrategicMergePatch: true},
		{GVK: leaseGVK, Plural: "leases", Namespaced: true, Type: reflect.TypeFor[coordinationv1.Lease](), ListType: reflect.TypeFor[coordinationv1.LeaseList](), StrategicMergePatch: true},
		{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, Plural: "secrets", Namespaced: true, Type: reflect.TypeFor[corev1.Secret](), ListType: reflect.TypeFor[corev1.SecretList](), StrategicMergePatch: true},
		{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Event"}, Plural: "events", Namespaced: true, Type: reflect.TypeFor[corev1.Event](), ListType: reflect.TypeFor[corev1.EventList](), StrategicMergePatch: true},
		{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, Plural: "serviceaccounts", Namespaced: true, Type: reflect.TypeFor[corev1.ServiceAccount](), StrategicMergePatch: true},
		{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Service"}, Plural: "services", Namespaced: true, Type: reflect.TypeFor[corev1.Service](), ListType: reflect.TypeFor[corev1.ServiceList](), Subresources: []string{"status"}, StrategicMergePatch: true},
		{GVK: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}, Plural: "replicasets", Namespaced: true, Type: reflect.TypeFor[appsv1.ReplicaSet](), Subresources: []string{"status", "scale"}, StrategicMergePatch: true},
		{GVK: schema.GroupVersionKind{Group: "events.k8s.io", Version: "v1", Kind: "Event"}, Plural: "events", Namespaced: true, Type: reflect.TypeFor[eventsv1.Event](), ListType: reflect.TypeFor[eventsv1.EventList](), StrategicMergePatch: true},
		{GVK: crdGVK, Plural: "customresourcedefinitions", Type: reflect.TypeFor[apiextensionsv1.CustomResourceDefinition](), ListType: reflect.TypeFor[apiextensionsv1.CustomResourceDefinitionList](), Subresources: []string{"status"}},
	}
	return append(rs, ResourcesForCRD(cronCRD(t))...)
}

func newBuilder(t testing.TB) *Builder {
	t.Helper()
	b, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Set(testResources(t)); err != nil {
		t.Fatal(err)
	}
	return b
}

func v2Models(t testing.TB, doc *openapi_v2.Document) kproto.Models {
	t.Helper()
	models, err := kproto.NewOpenAPIData(doc)
	if err != nil {
		t.Fatalf("kube-openapi proto: %v", err)
	}
	return models
}

func TestV2ParsesWithKubectlLoaders(t *testing.T) {
	b := newBuilder(t)
	doc, err := openapi_v2.ParseDocument(mustV2(t, b).JSON)
	if err != nil {
		t.Fatalf("gnostic v2: %v", err)
	}
	pb, _, err := b.V2Proto()
	if err != nil {
		t.Fatal(err)
	}
	fromProto := &openapi_v2.Document{}
	if err := proto.Unmarshal(pb, fromProto); err != nil {
		t.Fatalf("protobuf: %v", err)
	}
	for name, d := range map[string]*openapi_v2.Document{"json": doc, "protobuf": fromProto} {
		t.Run(name, func(t *testing.T) {
			models := v2Models(t, d)
			for _, gvk := range []schema.GroupVersionKind{podGVK, deployGVK, cronGVK, cronBetaGVK, crdGVK, leaseGVK, namespaceGVK, configMapGVK, podGVK.GroupVersion().WithKind("PodList"), cronGVK.GroupVersion().WithKind("CronJobList")} {
				if lookupResource(models, gvk) == nil {
					t.Errorf("LookupResource(%v) = nil", gvk)
				}
			}
		})
	}
}

func TestV2ClientSideValidation(t *testing.T) {
	b := newBuilder(t)
	doc, err := openapi_v2.ParseDocument(mustV2(t, b).JSON)
	if err != nil {
		t.Fatal(err)
	}
	models := v2Models(t, doc)
	tests := []struct {
		name  string
		gvk   schema.GroupVersionKind
		obj   string
		valid bool
		msg   string
	}{
		{"pod", podGVK, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"},"creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":80}],"resources":{"limits":{"cpu":"100m"}}}]}}`, true, ""},
		{"pod unknown field", podGVK, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","imag":"nginx"}]}}`, false, `unknown field "imag"`},
		{"pod wrong type", podGVK, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":"x"}}`, false, `spec.containers`},
		{"pod missing required", podGVK, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"image":"x"}]}}`, false, `missing required field "name"`},
		{"deployment intorstr", deployGVK, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},"strategy":{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":1}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"x"}]}}}}`, true, ""},
		{"cronjob", cronGVK, `{"apiVersion":"batch.tutorial.kubebuilder.io/v1","kind":"CronJob","metadata":{"name":"c"},"spec":{"schedule":"* * * * *","jobTemplate":{"anything":1},"ports":[{"containerPort":1}],"resources":{"cpu":1}}}`, true, ""},
		{"cronjob unknown field", cronGVK, `{"apiVersion":"batch.tutorial.kubebuilder.io/v1","kind":"CronJob","metadata":{"name":"c"},"spec":{"schedule":"x","jobTemplate":{},"bogus":1}}`, false, `unknown field "bogus"`},
		{"cronjob v1beta1 preserves", cronBetaGVK, `{"apiVersion":"batch.tutorial.kubebuilder.io/v1beta1","kind":"CronJob","metadata":{"name":"c"},"anything":{"goes":true}}`, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var obj any
			if err := json.Unmarshal([]byte(tt.obj), &obj); err != nil {
				t.Fatal(err)
			}
			model := lookupResource(models, tt.gvk)
			if model == nil {
				t.Fatalf("no model for %v", tt.gvk)
			}
			errs := validation.ValidateModel(obj, model, tt.gvk.Kind)
			if tt.valid && len(errs) > 0 {
				t.Fatalf("unexpected errors: %v", errs)
			}
			if !tt.valid {
				if len(errs) == 0 {
					t.Fatal("no errors")
				}
				all := ""
				for _, e := range errs {
					all += e.Error() + "\n"
				}
				if !strings.Contains(all, tt.msg) {
					t.Fatalf("errors %q do not mention %q", all, tt.msg)
				}
			}
		})
	}
}

// supportsFieldValidation is cli-runtime's supportsQueryParamV3, which
// kubectl uses to choose server-side field validation.
func supportsFieldValidation(doc *spec3.OpenAPI, gvk schema.GroupVersionKind) bool {
	for _, path := range doc.Paths.Paths {
		if path == nil || path.Patch == nil {
			continue
		}
		var got map[string]string
		if err := path.Patch.Extensions.GetObject("x-kubernetes-group-version-kind", &got); err != nil {
			continue
		}
		if got["group"] != gvk.Group || got["version"] != gvk.Version || got["kind"] != gvk.Kind {
			continue
		}
		for _, p := range path.Patch.Parameters {
			if p.Name == "fieldValidation" && p.In == "query" {
				return true
			}
		}
		return false
	}
	return false
}

func TestV3DocumentsParse(t *testing.T) {
	b := newBuilder(t)
	var disc struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(b.V3Discovery().JSON, &disc); err != nil {
		t.Fatal(err)
	}
	want := map[string][]schema.GroupVersionKind{
		"api/v1":                                     {podGVK, namespaceGVK, configMapGVK},
		"apis/apps/v1":                               {deployGVK},
		"apis/apiextensions.k8s.io/v1":               {crdGVK},
		"apis/coordination.k8s.io/v1":                {leaseGVK},
		"apis/events.k8s.io/v1":                      {{Group: "events.k8s.io", Version: "v1", Kind: "Event"}},
		"apis/batch.tutorial.kubebuilder.io/v1":      {cronGVK},
		"apis/batch.tutorial.kubebuilder.io/v1beta1": {cronBetaGVK},
	}
	if len(disc.Paths) != len(want) {
		t.Fatalf("discovery paths %v", disc.Paths)
	}
	for key, gvks := range want {
		t.Run(key, func(t *testing.T) {
			entry, ok := disc.Paths[key]
			if !ok {
				t.Fatalf("discovery lacks %s", key)
			}
			d, ok := b.V3(key)
			if !ok {
				t.Fatalf("V3(%q) missing", key)
			}
			if entry.ServerRelativeURL != "/openapi/v3/"+key+"?hash="+d.Hash || len(d.Hash) != 128 {
				t.Fatalf("serverRelativeURL %q, hash %q", entry.ServerRelativeURL, d.Hash)
			}
			doc := &spec3.OpenAPI{}
			if err := json.Unmarshal(d.JSON, doc); err != nil {
				t.Fatalf("spec3: %v", err)
			}
			g3, err := openapi_v3.ParseDocument(d.JSON)
			if err != nil {
				t.Fatalf("gnostic v3: %v", err)
			}
			models, err := kproto.NewOpenAPIV3Data(g3)
			if err != nil {
				t.Fatalf("kube-openapi proto v3: %v", err)
			}
			for _, gvk := range gvks {
				if !supportsFieldValidation(doc, gvk) {
					t.Errorf("%v: kubectl would not detect server-side field validation", gvk)
				}
				if lookupResource(models, gvk) == nil {
					t.Errorf("%v: proto v3 LookupResource = nil", gvk)
				}
				if explainSchema(t, d.JSON, gvk, strings.ToLower(gvk.Kind)+"s") == nil {
					t.Errorf("%v: kubectl explain would not find the schema", gvk)
				}
			}
		})
	}
}

// lookupResource is kubectl's openapi.Resources.LookupResource: the model
// whose x-kubernetes-group-version-kind extension lists gvk.
func lookupResource(models kproto.Models, gvk schema.GroupVersionKind) kproto.Schema {
	for _, name := range models.ListModels() {
		m := models.LookupModel(name)
		if m == nil {
			continue
		}
		list, ok := m.GetExtensions()["x-kubernetes-group-version-kind"].([]any)
		if !ok {
			continue
		}
		for _, e := range list {
			get := func(k string) string {
				switch t := e.(type) {
				case map[any]any:
					s, _ := t[k].(string)
					return s
				case map[string]any:
					s, _ := t[k].(string)
					return s
				}
				return ""
			}
			if get("group") == gvk.Group && get("version") == gvk.Version && get("kind") == gvk.Kind {
				return m
			}
		}
	}
	return nil
}

// explainSchema follows kubectl explain's plaintext template: find the GVK on
// an operation of the resource's paths, then the components.schemas entry
// whose x-kubernetes-group-version-kind list contains exactly that GVK.
func explainSchema(t *testing.T, docJSON []byte, gvk schema.GroupVersionKind, resource string) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(docJSON, &doc); err != nil {
		t.Fatal(err)
	}
	prefix := "/apis/" + gvk.Group
	if gvk.Group == "" {
		prefix = "/api"
	}
	paths, _ := doc["paths"].(map[string]any)
	var found any
	for _, p := range []string{
		prefix + "/" + gvk.Version + "/" + resource,
		prefix + "/" + gvk.Version + "/" + resource + "/{name}",
		prefix + "/" + gvk.Version + "/namespaces/{namespace}/" + resource,
		prefix + "/" + gvk.Version + "/namespaces/{namespace}/" + resource + "/{name}",
	} {
		el, _ := paths[p].(map[string]any)
		for _, m := range []string{"get", "post", "put", "patch", "delete"} {
			if op, ok := el[m].(map[string]any); ok && op["x-kubernetes-group-version-kind"] != nil {
				found = op["x-kubernetes-group-version-kind"]
				break
			}
		}
		if found != nil {
			break
		}
	}
	if found == nil {
		t.Logf("no operation with a GVK for %s", resource)
		return nil
	}
	comps, _ := doc["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	for _, s := range schemas {
		sm, _ := s.(map[string]any)
		list, _ := sm["x-kubernetes-group-version-kind"].([]any)
		for _, e := range list {
			if reflect.DeepEqual(e, found) {
				return sm
			}
		}
	}
	return nil
}

func TestResourcesForCRD(t *testing.T) {
	crd := cronCRD(t)
	crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v0", Served: false})
	rs := ResourcesForCRD(crd)
	if len(rs) != 2 {
		t.Fatalf("%d resources, want 2 (unserved version left out)", len(rs))
	}
	r := rs[0]
	if r.GVK != cronGVK || r.ListKind != "CronJobList" || r.Plural != "cronjobs" || !r.Namespaced ||
		!reflect.DeepEqual(r.Subresources, []string{"status", "scale"}) || r.Schema == nil {
		t.Fatalf("resource %+v", r)
	}
	if rs[1].Subresources != nil {
		t.Fatalf("v1beta1 subresources %v", rs[1].Subresources)
	}
	if ResourcesForCRD(nil) != nil {
		t.Fatal("nil CRD")
	}
}

func mustV2(t testing.TB, b *Builder) *Document {
	t.Helper()
	d, err := b.V2()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
