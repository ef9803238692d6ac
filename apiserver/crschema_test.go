package apiserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// fuzzSchemaCRD is a CRD around an openAPIV3Schema, as the fuzz targets
// write it.
func fuzzSchemaCRD(schema json.RawMessage) map[string]any {
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "things.fuzz.example.com"},
		"spec": map[string]any{
			"group": "fuzz.example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "things", "kind": "Thing"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema":       map[string]any{"openAPIV3Schema": schema},
			}},
		},
	}
}

var fuzzSchemaSeeds = []struct{ schema, obj string }{
	{`{"type":"object","properties":{"spec":{"type":"object","required":["n"],"properties":{"n":{"type":"integer","minimum":1,"default":2},"s":{"type":"string","pattern":"^a+$","maxLength":3}}}}}`,
		`{"spec":{"n":0,"s":"aaaa","x":1}}`},
	{`{"type":"object","properties":{"spec":{"type":"object","properties":{"ports":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["p"],"items":{"type":"object","required":["p"],"properties":{"p":{"type":"integer"},"q":{"type":"string","default":"TCP"}}}}}}}}`,
		`{"spec":{"ports":[{"p":1},{"p":1},null,3,{"q":null}]}}`},
	{`{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-validations":[{"rule":"self.a <= self.b","message":"a > b"}],"properties":{"a":{"type":"integer"},"b":{"type":"integer"}}}}}`,
		`{"spec":{"a":2,"b":1}}`},
	{`{"type":"object","properties":{"spec":{"type":"object","properties":{"t":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true},"v":{"x-kubernetes-int-or-string":true},"m":{"type":"object","additionalProperties":{"type":"string","enum":["a"]},"maxProperties":1}}}}}`,
		`{"spec":{"t":{"apiVersion":"v1","kind":"X","metadata":{"name":"N o","labels":"x","foo":1}},"v":1.5,"m":{"a":"b","c":"a"}}}`},
	{`{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"spec":{"type":"object","nullable":true,"anyOf":[{"required":["a"]},{"required":["b"]}],"not":{"required":["c"]}}}}`,
		`{"spec":null,"other":{"deep":[1,2]}}`},
}

// FuzzCustomResourceSchema: for any schema kube-apiserver's CRD validation
// accepts and any object, the schema work of a custom resource's create,
// update and status update (kube-apiserver's pruning, defaulting, coercion
// and validation, CEL rules included, as crSchema wires them) neither
// panics nor fails to compile, and decoding is idempotent: what it keeps
// decodes again to itself, with nothing unknown.
func FuzzCustomResourceSchema(f *testing.F) {
	for _, s := range fuzzSchemaSeeds {
		f.Add([]byte(s.schema), []byte(s.obj))
	}
	f.Fuzz(func(t *testing.T, schemaDoc, objDoc []byte) {
		schemaJSON, err := yaml.YAMLToJSON(schemaDoc)
		if err != nil || !json.Valid(schemaJSON) {
			return
		}
		crdObj := fuzzSchemaCRD(schemaJSON)
		if b, err := json.Marshal(crdObj); err != nil || json.Unmarshal(b, &crdObj) != nil {
			return
		}
		if errs := validateCRD(crdObj, nil, ""); len(errs) > 0 {
			return
		}
		crd, err := decodeCRD(crdObj)
		if err != nil {
			t.Fatalf("a valid CRD does not decode: %v", err)
		}
		c := &crSchema{props: crd.Spec.Versions[0].Schema.OpenAPIV3Schema}
		if err := c.compile(); err != nil {
			t.Fatalf("the schema of a valid CRD does not compile: %v", err)
		}
		var obj map[string]any
		if err := json.Unmarshal(objDoc, &obj); err != nil || obj == nil {
			return
		}
		obj["apiVersion"], obj["kind"] = "fuzz.example.com/v1", "Thing"
		obj["metadata"] = map[string]any{"name": "t", "namespace": "default"}
		old := runtime.DeepCopyJSON(obj)
		if _, err := c.decode(old); err != nil {
			return
		}
		c.validate(old, nil, "", nil, nil)
		if _, err := c.decode(obj); err != nil {
			t.Fatalf("decoding failed the second time: %v", err)
		}
		again := runtime.DeepCopyJSON(obj)
		if unknown, err := c.decode(again); err != nil || len(unknown) > 0 {
			t.Fatalf("decoding a decoded object: unknown %v, %v", unknown, err)
		}
		c.validate(obj, old, "", nil, nil)
		c.validate(obj, old, "status", &scaleInfo{statusReplicas: []string{"status", "replicas"}}, nil)
	})
}

// TestCustomResourceSchemaThroughHandler sends the fuzz seeds' objects
// through the server: every answer is below 500.
func TestCustomResourceSchemaThroughHandler(t *testing.T) {
	for i, seed := range fuzzSchemaSeeds {
		s := newTestServer(t, Options{Token: "t"})
		do := func(method, path, body string) int {
			req := httptest.NewRequest(method, path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer t")
			req.Header.Set("Content-Type", "application/json")
			if method == "PATCH" {
				req.Header.Set("Content-Type", "application/merge-patch+json")
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Errorf("seed %d: %s %s: %d %s", i, method, path, rec.Code, rec.Body)
			}
			return rec.Code
		}
		crd, _ := json.Marshal(fuzzSchemaCRD(json.RawMessage(seed.schema)))
		if code := do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", string(crd)); code != http.StatusCreated {
			t.Fatalf("seed %d: CRD: %d", i, code)
		}
		var obj map[string]any
		_ = json.Unmarshal([]byte(seed.obj), &obj)
		obj["apiVersion"], obj["kind"], obj["metadata"] = "fuzz.example.com/v1", "Thing", map[string]any{"name": "t"}
		body, _ := json.Marshal(obj)
		things := "/apis/fuzz.example.com/v1/namespaces/default/things"
		for _, method := range []string{"POST", "PUT"} {
			path := things
			if method == "PUT" {
				path += "/t"
			}
			do(method, path, string(body))
		}
		do("PATCH", things+"/t/status", `{"status":{"x":1}}`)
	}
}
