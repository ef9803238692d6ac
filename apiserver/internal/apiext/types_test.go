package apiext

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func loadCRD(t testing.TB, file string) (*CustomResourceDefinition, []byte) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	crd := &CustomResourceDefinition{}
	if err := json.Unmarshal(js, crd); err != nil {
		t.Fatalf("unmarshal %s: %v", file, err)
	}
	return crd, js
}

func asGeneric(t testing.TB, js []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRoundTripDocuments(t *testing.T) {
	tests := []struct {
		file string
		// ignore lists top-level keys that the original omits but Go always
		// writes (status is not omitempty-able, exactly as in Kubernetes).
		ignore []string
	}{
		{file: "testdata/kubebuilder_cronjobs.yaml", ignore: []string{"status"}},
		{file: "testdata/server_widgets.json"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			crd, js := loadCRD(t, tt.file)
			out, err := json.Marshal(crd)
			if err != nil {
				t.Fatal(err)
			}
			want, got := asGeneric(t, js), asGeneric(t, out)
			for _, k := range tt.ignore {
				delete(want, k)
				delete(got, k)
			}
			// ObjectMeta writes creationTimestamp: null when unset.
			if md, ok := got["metadata"].(map[string]any); ok {
				if v, ok := md["creationTimestamp"]; ok && v == nil {
					delete(md, "creationTimestamp")
				}
			}
			if !reflect.DeepEqual(want, got) {
				wj, _ := json.MarshalIndent(want, "", " ")
				gj, _ := json.MarshalIndent(got, "", " ")
				t.Fatalf("round trip differs\nwant %s\ngot  %s", wj, gj)
			}
			// A second round trip is byte-identical.
			var again CustomResourceDefinition
			if err := json.Unmarshal(out, &again); err != nil {
				t.Fatal(err)
			}
			out2, err := json.Marshal(&again)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != string(out2) {
				t.Fatalf("second round trip differs:\n%s\n%s", out, out2)
			}
		})
	}
}

func TestDecodedShapes(t *testing.T) {
	cron, _ := loadCRD(t, "testdata/kubebuilder_cronjobs.yaml")
	w, _ := loadCRD(t, "testdata/server_widgets.json")
	v1 := cron.Spec.Versions[0]
	spec := v1.Schema.OpenAPIV3Schema.Properties["spec"]
	wspec := w.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"scope", cron.Spec.Scope, NamespaceScoped},
		{"status subresource", v1.Subresources.Status != nil, true},
		{"scale label selector", *v1.Subresources.Scale.LabelSelectorPath, ".status.selector"},
		{"printer column priority", v1.AdditionalPrinterColumns[4].Priority, int32(1)},
		{"enum raw", string(spec.Properties["concurrencyPolicy"].Enum[1].Raw), `"Forbid"`},
		{"default raw", string(spec.Properties["concurrencyPolicy"].Default.Raw), `"Allow"`},
		{"items schema", spec.Properties["ports"].Items.Schema.Type, "object"},
		{"list type", *spec.Properties["ports"].XListType, "map"},
		{"list map keys", spec.Properties["ports"].XListMapKeys, []string{"containerPort", "protocol"}},
		{"map type", *spec.Properties["selector"].XMapType, "atomic"},
		{"additionalProperties schema", spec.Properties["resources"].AdditionalProperties.Schema.XIntOrString, true},
		{"additionalProperties allows", spec.Properties["resources"].AdditionalProperties.Allows, true},
		{"preserve unknown", *spec.Properties["jobTemplate"].XPreserveUnknownFields, true},
		{"cel rule kept", spec.XValidations[0].Rule, "self.schedule != ''"},
		{"exclusive max", spec.Properties["ratio"].ExclusiveMaximum, true},
		{"nullable", spec.Properties["ratio"].Nullable, true},
		{"deprecation warning", *cron.Spec.Versions[1].DeprecationWarning, "batch.tutorial.kubebuilder.io/v1beta1 CronJob is deprecated"},
		{"items array", len(wspec.Properties["tuple"].Items.JSONSchemas), 2},
		{"items array no schema", wspec.Properties["tuple"].Items.Schema == nil, true},
		{"additionalProperties false", *wspec.Properties["labels"].AdditionalProperties, JSONSchemaPropsOrBool{}},
		{"additionalProperties true", *wspec.Properties["free"].AdditionalProperties, JSONSchemaPropsOrBool{Allows: true}},
		{"null enum", len(wspec.Properties["color"].Enum[2].Raw), 0},
		{"deps strings", wspec.Properties["deps"].Dependencies["a"].Property, []string{"b", "c"}},
		{"deps schema", wspec.Properties["deps"].Dependencies["d"].Schema.Required, []string{"e"}},
		{"conversion", w.Spec.Conversion.Strategy, NoneConverter},
		{"conditions", w.Status.Conditions[1].Type, Established},
		{"stored", w.Status.StoredVersions, []string{"v1"}},
		{"preserve false", *w.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].XPreserveUnknownFields, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Fatalf("got %#v, want %#v", tt.got, tt.want)
			}
		})
	}
}

func TestUnionJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		into func() any
		out  string
		err  bool
	}{
		{"items object", `{"type":"string"}`, func() any { return &JSONSchemaPropsOrArray{} }, `{"type":"string"}`, false},
		{"items array", `[{"type":"string"},{"type":"integer"}]`, func() any { return &JSONSchemaPropsOrArray{} }, `[{"type":"string"},{"type":"integer"}]`, false},
		{"items bad", `"x"`, func() any { return &JSONSchemaPropsOrArray{} }, ``, true},
		{"bool true", `true`, func() any { return &JSONSchemaPropsOrBool{} }, `true`, false},
		{"bool false", `false`, func() any { return &JSONSchemaPropsOrBool{} }, `false`, false},
		{"bool schema", ` {"type":"string"}`, func() any { return &JSONSchemaPropsOrBool{} }, `{"type":"string"}`, false},
		{"bool bad", `3`, func() any { return &JSONSchemaPropsOrBool{} }, ``, true},
		{"strings", `["a"]`, func() any { return &JSONSchemaPropsOrStringArray{} }, `["a"]`, false},
		{"strings schema", `{"type":"object"}`, func() any { return &JSONSchemaPropsOrStringArray{} }, `{"type":"object"}`, false},
		{"strings bad", `1`, func() any { return &JSONSchemaPropsOrStringArray{} }, ``, true},
		{"json raw", `{"a":[1,2]}`, func() any { return &JSON{} }, `{"a":[1,2]}`, false},
		{"json null", `null`, func() any { return &JSON{} }, `null`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.into()
			err := json.Unmarshal([]byte(tt.in), v)
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if tt.err {
				return
			}
			out, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.out {
				t.Fatalf("got %s, want %s", out, tt.out)
			}
		})
	}
}

func TestDeepCopyIsDeep(t *testing.T) {
	for _, file := range []string{"testdata/kubebuilder_cronjobs.yaml", "testdata/server_widgets.json"} {
		t.Run(file, func(t *testing.T) {
			orig, _ := loadCRD(t, file)
			before, _ := json.Marshal(orig)
			var obj runtime.Object = orig
			cp, ok := obj.DeepCopyObject().(*CustomResourceDefinition)
			if !ok {
				t.Fatalf("DeepCopyObject returned %T", obj.DeepCopyObject())
			}
			if !reflect.DeepEqual(orig, cp) {
				t.Fatal("copy differs from original")
			}
			// Mutate every level of the copy; the original must not change.
			cp.Labels = map[string]string{"x": "y"}
			cp.Spec.Names.ShortNames = append(cp.Spec.Names.ShortNames[:0], "zz")
			sch := cp.Spec.Versions[0].Schema.OpenAPIV3Schema
			sch.Properties["spec"].Properties["x"] = JSONSchemaProps{Type: "string"}
			for k, p := range sch.Properties["spec"].Properties {
				if len(p.Enum) > 0 && len(p.Enum[0].Raw) > 0 {
					p.Enum[0].Raw[0] = '!'
				}
				if p.Default != nil && len(p.Default.Raw) > 0 {
					p.Default.Raw[0] = '!'
				}
				if p.Items != nil && p.Items.Schema != nil {
					p.Items.Schema.Type = "mutated"
				}
				if p.AdditionalProperties != nil && p.AdditionalProperties.Schema != nil {
					p.AdditionalProperties.Schema.Type = "mutated"
				}
				sch.Properties["spec"].Properties[k] = p
			}
			cp.Status.StoredVersions = append(cp.Status.StoredVersions[:0], "mutated")
			after, _ := json.Marshal(orig)
			if string(before) != string(after) {
				t.Fatalf("mutating the copy changed the original")
			}
			list := &CustomResourceDefinitionList{Items: []CustomResourceDefinition{*orig}}
			lc := list.DeepCopyObject().(*CustomResourceDefinitionList)
			lc.Items[0].Name = "changed"
			if list.Items[0].Name == "changed" {
				t.Fatal("list copy shares items")
			}
		})
	}
}

func TestAddToScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	gvks, _, err := s.ObjectKinds(&CustomResourceDefinition{})
	if err != nil || len(gvks) != 1 || gvks[0] != SchemeGroupVersion.WithKind("CustomResourceDefinition") {
		t.Fatalf("ObjectKinds = %v, %v", gvks, err)
	}
	if _, err := s.New(SchemeGroupVersion.WithKind("CustomResourceDefinitionList")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.New(SchemeGroupVersion.WithKind("ListOptions")); err != nil {
		t.Fatalf("meta options not registered: %v", err)
	}
	if err := AddToScheme(nil); err == nil {
		t.Fatal("nil scheme accepted")
	}
	_ = metav1.Now
}
