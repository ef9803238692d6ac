package openapi

import (
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/kube-openapi/pkg/spec3"
)

// TestStrategicMergePatchFromV3 computes kubectl apply's three-way strategic
// merge patch with patch metadata read from our v3 document, as kubectl does
// (buildStrategicMergePatchFromOpenAPIV3), and requires the same patch as
// with the Go struct's tags.
func TestStrategicMergePatchFromV3(t *testing.T) {
	b := newBuilder(t)
	tests := []struct {
		name                        string
		gvk                         schema.GroupVersionKind
		dataStruct                  any
		original, modified, current string
	}{
		{"pod containers merge by name", podGVK, corev1.Pod{},
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1"}},"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"y"}]}}`,
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"2"}},"spec":{"containers":[{"name":"b","image":"z","env":[{"name":"E","value":"1"}]}]}}`,
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1","other":"x"}},"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"y","ports":[{"containerPort":80}]}],"nodeName":"n"}}`},
		{"deployment volumes and ports", deployGVK, appsv1.Deployment{},
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"x","ports":[{"containerPort":80,"name":"http"}]}],"volumes":[{"name":"v1","emptyDir":{}}]}}}}`,
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"x","ports":[{"containerPort":8080,"name":"http"}]}],"volumes":[{"name":"v2","emptyDir":{}}]}}}}`,
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"c","image":"x","ports":[{"containerPort":80,"name":"http"}]}],"volumes":[{"name":"v1","emptyDir":{}},{"name":"extra","emptyDir":{}}]}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := b.V3(tt.gvk.GroupVersion().String())
			if !ok {
				t.Fatal("no document")
			}
			doc := &spec3.OpenAPI{}
			if err := json.Unmarshal(d.JSON, doc); err != nil {
				t.Fatal(err)
			}
			var meta strategicpatch.LookupPatchMeta
			for _, c := range doc.Components.Schemas {
				var gvks []map[string]string
				if err := c.Extensions.GetObject("x-kubernetes-group-version-kind", &gvks); err != nil {
					continue
				}
				for _, g := range gvks {
					if g["group"] == tt.gvk.Group && g["version"] == tt.gvk.Version && g["kind"] == tt.gvk.Kind {
						meta = strategicpatch.PatchMetaFromOpenAPIV3{Schema: c, SchemaList: doc.Components.Schemas}
					}
				}
			}
			if meta == nil {
				t.Fatal("kind schema not found by GVK")
			}
			fromV3, err := strategicpatch.CreateThreeWayMergePatch([]byte(tt.original), []byte(tt.modified), []byte(tt.current), meta, false)
			if err != nil {
				t.Fatalf("patch from v3: %v", err)
			}
			structMeta, err := strategicpatch.NewPatchMetaFromStruct(tt.dataStruct)
			if err != nil {
				t.Fatal(err)
			}
			fromStruct, err := strategicpatch.CreateThreeWayMergePatch([]byte(tt.original), []byte(tt.modified), []byte(tt.current), structMeta, false)
			if err != nil {
				t.Fatal(err)
			}
			var a, s any
			_ = json.Unmarshal(fromV3, &a)
			_ = json.Unmarshal(fromStruct, &s)
			if !jsonDeepEqual(a, s) {
				t.Fatalf("patch from v3 %s\n       from struct %s", fromV3, fromStruct)
			}
		})
	}
}

func jsonDeepEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
