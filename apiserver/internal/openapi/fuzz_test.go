package openapi

import (
	"context"
	"encoding/json"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/spec3"
	kproto "k8s.io/kube-openapi/pkg/util/proto"
	"sigs.k8s.io/yaml"
)

// FuzzCRDDocuments: every schema kube-apiserver's CRD validation accepts must produce documents
// that gnostic, kube-openapi's proto models and spec3 all load, in JSON and
// protobuf form.
func FuzzCRDDocuments(f *testing.F) {
	cron := cronCRD(f)
	seed, _ := json.Marshal(cron.Spec.Versions[0].Schema.OpenAPIV3Schema)
	f.Add(seed)
	f.Add([]byte(`{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","nullable":true}},"b":{"x-kubernetes-int-or-string":true},"c":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true}}}}}`))
	f.Add([]byte(`{"type":"object","x-kubernetes-preserve-unknown-fields":true}`))
	f.Add([]byte(`{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"integer","enum":[1,2],"default":1}},"e":{"type":"string","enum":["a",null],"nullable":true,"example":"a"}}}`))
	f.Fuzz(func(t *testing.T, schemaJSON []byte) {
		js, err := yaml.YAMLToJSON(schemaJSON)
		if err != nil {
			return
		}
		var s apiextensionsv1.JSONSchemaProps
		if err := json.Unmarshal(js, &s); err != nil {
			return
		}
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
				Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &s}}},
			},
		}
		apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
		var internal apiextensions.CustomResourceDefinition
		if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, &internal, nil); err != nil {
			return
		}
		if len(crdvalidation.ValidateCustomResourceDefinition(context.Background(), &internal)) > 0 {
			return
		}
		b, err := New(Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Set(ResourcesForCRD(crd)); err != nil {
			t.Fatalf("Set: %v", err)
		}
		pb, _, err := b.V2Proto()
		if err != nil {
			t.Fatalf("v2 protobuf: %v", err)
		}
		doc := &openapi_v2.Document{}
		if err := proto.Unmarshal(pb, doc); err != nil {
			t.Fatal(err)
		}
		if _, err := kproto.NewOpenAPIData(doc); err != nil {
			t.Fatalf("kube-openapi v2 models: %v", err)
		}
		d, ok := b.V3("example.com/v1")
		if !ok {
			t.Fatal("no v3 document")
		}
		if err := json.Unmarshal(d.JSON, &spec3.OpenAPI{}); err != nil {
			t.Fatalf("spec3: %v", err)
		}
		g3, err := openapi_v3.ParseDocument(d.JSON)
		if err != nil {
			t.Fatalf("gnostic v3: %v", err)
		}
		if _, err := kproto.NewOpenAPIV3Data(g3); err != nil {
			t.Fatalf("kube-openapi v3 models: %v", err)
		}
	})
}
