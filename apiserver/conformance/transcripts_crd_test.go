package conformance

import (
	"fmt"
	"net/http"
	"strings"
)

// crdTranscripts: the validation of CustomResourceDefinitions themselves,
// and the warnings of their writes.
var crdTranscripts = []transcript{
	{"crd-validation", func(tr *T) {
		const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
		// crd is a valid CRD of kind Kind (plural: lowercase kind + "s") in
		// the run's group with the given spec.versions[0].schema.
		crd := func(kind, schema string) string {
			plural := strings.ToLower(kind) + "s"
			return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + plural + `.{group}"},` +
				`"spec":{"group":"{group}","scope":"Namespaced","names":{"plural":"` + plural + `","kind":"` + kind + `"},` +
				`"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":` + schema + `}}]}}`
		}
		object := func(props string) string {
			return `{"type":"object","properties":{"spec":{"type":"object","properties":` + props + `}}}`
		}
		// Schemas kube-apiserver refuses, with the paths of the internal
		// form (a schema every version shares is spec.validation's).
		for _, c := range []struct{ kind, schema string }{
			{"Badtype", object(`{"size":{"type":"int"}}`)},
			{"Untyped", object(`{"size":{"minimum":1}}`)},
			{"Unpruned", object(`{"s":{"type":"object","properties":{"a":{"type":"string"}},"default":{"a":"x","b":"y"}}}`)},
			{"Baddefault", object(`{"size":{"type":"integer","default":"big","maximum":3}}`)},
			{"Badpattern", object(`{"name":{"type":"string","pattern":"(?<=a)b"}}`)},
			{"Metaprops", `{"type":"object","properties":{"metadata":{"type":"object","properties":{"labels":{"type":"object"}}}}}`},
			{"Listmap", object(`{"ports":{"type":"array","x-kubernetes-list-type":"map","items":{"type":"object","properties":{"p":{"type":"integer"}}}}}`)},
			{"Celandschema", `{"type":"object","x-kubernetes-validations":[{"rule":"self.nothing == 1"}],"properties":{"spec":{"type":"object","properties":{"size":{"type":"int"}}}}}`},
			{"Junctors", object(`{"v":{"type":"string","anyOf":[{"type":"integer"}]}}`)},
			{"Preserveroot", `{"type":"object","x-kubernetes-preserve-unknown-fields":false,"properties":{"spec":{"type":"string","x-kubernetes-embedded-resource":true}}}`},
			{"Refschema", object(`{"a":{"$ref":"#/definitions/x"}}`)},
			{"Notobjectroot", `{"type":"string"}`},
		} {
			tr.Post(crds, crd(c.kind, c.schema)).Want(http.StatusUnprocessableEntity)
		}
		// The rest of a version: printer columns, selectable fields,
		// subresources; and the CRD's metadata, names and conversion.
		version := func(kind, extra string) string {
			return strings.Replace(crd(kind, object(`{"size":{"type":"integer"},"color":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}}`)), `"served":true,`, `"served":true,`+extra+`,`, 1)
		}
		tr.Post(crds, version("Columns", `"additionalPrinterColumns":[{"name":"A","type":"int","jsonPath":".spec.size"},{"name":"","type":"string","jsonPath":"spec.color","format":"x"},{"name":"C","type":"string","jsonPath":".spec[?("}]`)).Want(http.StatusUnprocessableEntity)
		tr.Post(crds, version("Selectable", `"selectableFields":[{"jsonPath":".spec.tags"},{"jsonPath":".metadata.name"},{"jsonPath":".spec.missing"},{"jsonPath":".spec.size"},{"jsonPath":".spec.size"},{"jsonPath":"spec"}]`)).Want(http.StatusUnprocessableEntity)
		tr.Post(crds, version("Scales", `"subresources":{"scale":{"specReplicasPath":".status.size","statusReplicasPath":"status","labelSelectorPath":".x"}}`)).Want(http.StatusUnprocessableEntity)
		tr.Post(crds, version("Deprecated", `"deprecationWarning":"not deprecated"`)).Want(http.StatusUnprocessableEntity)
		tr.Post(crds, strings.Replace(version("Labels", `"deprecated":true`), `"metadata":{"name":"labelss.{group}"}`, `"metadata":{"name":"wrong.{group}","labels":{"bad key!":"x"}}`, 1)).Want(http.StatusUnprocessableEntity)
		tr.Post(crds, strings.Replace(version("Names", `"deprecated":true`), `"names":{"plural":"namess","kind":"Names"}`, `"names":{"plural":"namess","kind":"Names","listKind":"Names","shortNames":["Bad_Short"],"categories":["a b"]}`, 1)).Want(http.StatusUnprocessableEntity)
		tr.Post(crds, strings.Replace(version("Conversion", `"deprecated":true`), `"scope":"Namespaced"`, `"scope":"Galaxy","conversion":{"strategy":"Webhook"}`, 1)).Want(http.StatusUnprocessableEntity)
		tr.Post(crds, strings.Replace(version("Storage", `"deprecated":true`), `"storage":true`, `"storage":false`, 1)).Want(http.StatusUnprocessableEntity)
		// A valid CRD, then updates: its kind and scope are immutable once
		// it is established, its plural and group always, and a version
		// objects were stored at cannot go.
		tr.unrecorded(func() {
			tr.Post(crds, version("Fine", `"deprecated":true`)).Want(http.StatusCreated)
		})
		tr.awaitServed("/apis/{group}/v1/namespaces/{ns}/fines")
		cur := tr.Get(crds + "/fines.{group}").Want(http.StatusOK)
		rv := cur.RV()
		changed := strings.Replace(strings.Replace(version("Fine", `"deprecated":true`), `"kind":"Fine"`, `"kind":"Other"`, 1), `"scope":"Namespaced"`, `"scope":"Cluster"`, 1)
		tr.Put(crds+"/fines.{group}", strings.Replace(changed, `"metadata":{`, `"metadata":{"resourceVersion":"`+rv+`",`, 1)).Want(http.StatusUnprocessableEntity)
		tr.Patch(crds+"/fines.{group}", "merge", `{"spec":{"names":{"plural":"others"}}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(crds+"/fines.{group}", "json", `[{"op":"replace","path":"/spec/versions/0/name","value":"v2"}]`).Want(http.StatusUnprocessableEntity)
		tr.Patch(crds+"/fines.{group}", "json", `[{"op":"add","path":"/spec/versions/-","value":{"name":"v2","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object"}}}}]`).Want(http.StatusOK)
		// /status: the status alone is validated, the spec stays.
		tr.Patch(crds+"/fines.{group}/status", "merge", `{"status":{"storedVersions":[],"acceptedNames":{"plural":"Bad_Plural"}}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(crds+"/fines.{group}/status", "merge", `{"spec":{"scope":"Cluster"},"status":{"storedVersions":["v1","v2"]}}`).Want(http.StatusOK)
		// Warnings: formats kube-apiserver does not know, sets of objects;
		// an update warns only of what it brings.
		warned := crd("Warned", object(`{"a":{"type":"string","format":"colour"},"b":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"object","x-kubernetes-map-type":"atomic"}}}`))
		tr.withoutBodies(func() { // the status is kube-apiserver's controllers' to set, later
			tr.Post(crds, warned).Want(http.StatusCreated)
		})
		tr.awaitServed("/apis/{group}/v1/namespaces/{ns}/warneds")
		tr.Patch(crds+"/warneds.{group}", "merge", `{"spec":{"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":`+object(`{"a":{"type":"string","format":"colour"},"c":{"type":"integer","format":"int12"}}`)+`}}]}}`).Want(http.StatusOK)
		tr.unrecorded(func() {
			tr.Delete(crds+"/fines.{group}", "").Want(http.StatusOK)
			tr.Delete(crds+"/warneds.{group}", "").Want(http.StatusOK)
		})
	}},
}

// withoutBodies runs f and records only the codes and warnings of its
// requests: for an answer whose body kube-apiserver's controllers change a
// moment later (a new CRD's status), which the embedded server gives at once.
func (tr *T) withoutBodies(f func()) {
	n := len(tr.log)
	f()
	for i := n; i < len(tr.log); i++ {
		tr.log[i].Body = nil
	}
}

// crSchemaCRD is a CRD whose schema exercises what custom resource writes
// go through: pruning (unknown fields, preserved subtrees, embedded
// resources), nulls and defaults, value validations, list types, the
// status and scale subresources and printer columns.
const crSchemaCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"shapes.{group}"},
"spec":{"group":"{group}","scope":"Namespaced","names":{"plural":"shapes","singular":"shape","kind":"Shape"},"versions":[{"name":"v1","served":true,"storage":true,
"subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas","labelSelectorPath":".status.selector"}},
"additionalPrinterColumns":[{"name":"Size","type":"integer","jsonPath":".spec.size"},{"name":"Ratio","type":"number","jsonPath":".spec.ratio"},{"name":"On","type":"boolean","jsonPath":".spec.on"},
 {"name":"Mode","type":"string","jsonPath":".spec.mode"},{"name":"Tags","type":"string","jsonPath":".spec.tags","priority":1},{"name":"When","type":"date","jsonPath":".spec.when"},{"name":"Bad","type":"integer","jsonPath":".spec.mode"}],
"schema":{"openAPIV3Schema":{"type":"object","properties":{
 "spec":{"type":"object","required":["mode"],"properties":{
  "size":{"type":"integer","minimum":0,"maximum":100,"default":1},
  "replicas":{"type":"integer"},
  "ratio":{"type":"number","multipleOf":0.5,"exclusiveMaximum":true,"maximum":10},
  "on":{"type":"boolean","nullable":true},
  "mode":{"type":"string","enum":["a","b"]},
  "name":{"type":"string","pattern":"^[a-z]+$","minLength":2,"maxLength":5},
  "when":{"type":"string","format":"date-time"},
  "port":{"type":"integer","format":"int32"},
  "count":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]},
  "tags":{"type":"array","items":{"type":"string"},"x-kubernetes-list-type":"set","maxItems":3},
  "ports":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["port"],"items":{"type":"object","required":["port"],"properties":{"port":{"type":"integer"},"proto":{"type":"string","default":"TCP"}}}},
  "labels":{"type":"object","additionalProperties":{"type":"string"},"maxProperties":2},
  "nested":{"type":"object","default":{},"properties":{"a":{"type":"string","default":"x"},"b":{"type":"integer","nullable":true,"default":2}}},
  "free":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"known":{"type":"integer","default":5}}},
  "template":{"type":"object","x-kubernetes-embedded-resource":true,"properties":{"spec":{"type":"object","properties":{"n":{"type":"integer"}}}}},
  "anything":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true},
  "choice":{"type":"string","oneOf":[{"pattern":"^x"},{"pattern":"y$"}],"not":{"enum":["xy"]}}}},
 "status":{"type":"object","properties":{"replicas":{"type":"integer"},"selector":{"type":"string"},"phase":{"type":"string","enum":["Up","Down"]}}}}}}}]}}`

// crSchemaTranscripts: the schema work of custom resource writes, with
// kube-apiserver's own code on both sides.
var crSchemaTranscripts = []transcript{
	{"custom-resource-schema", func(tr *T) {
		tr.unrecorded(func() {
			tr.Post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crSchemaCRD).Want(http.StatusCreated)
		})
		shapes := "/apis/{group}/v1/namespaces/{ns}/shapes"
		tr.awaitServed(shapes)
		shape := func(name, rest string) string {
			return `{"apiVersion":"{group}/v1","kind":"Shape","metadata":{"name":"` + name + `"` + rest + `}`
		}
		// Pruning, with the unknown fields named (Warn) or refused (Strict).
		unknown := shape("u", `,"labels":{},"foo":1},"spec":{"mode":"a","bogus":1,"ports":[{"port":1,"x":2}],"free":{"kept":{"deep":1}},`+
			`"template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"t","bar":2,"labels":{"a":"b"}},"spec":{"n":1,"m":2},"extra":3},"anything":{"apiVersion":"v1","kind":"X","metadata":{"baz":1},"any":{"thing":1}}},"top":1`)
		tr.Post(shapes+"?fieldValidation=Strict", unknown).Want(http.StatusBadRequest)
		tr.Post(shapes+"?fieldValidation=Warn", unknown).Want(http.StatusCreated)
		tr.Post(shapes+"?fieldValidation=Ignore", strings.Replace(unknown, `"name":"u"`, `"name":"u2"`, 1)).Want(http.StatusCreated)
		// Nulls and defaults.
		tr.Post(shapes, shape("n", `},"spec":{"mode":"b","size":null,"on":null,"name":null,"nested":{"a":null,"b":null},"ports":[{"port":2,"proto":null}],"free":{"known":null,"other":null}}`)).Want(http.StatusCreated)
		// Value validations, one object each: kube-openapi's validator
		// reports the properties of an object in map order, which varies
		// from one request to the next.
		for i, spec := range []string{
			`"size":101`, `"size":"big"`, `"ratio":10`, `"ratio":0.3`, `"name":"A"`, `"name":"abcdefg"`, `"when":"yesterday"`,
			`"port":3000000000`, `"count":1.5`, `"tags":["a","a","b","c"]`, `"tags":"x"`, `"ports":[{"port":1},{"port":1}]`, `"ports":[{}]`,
			`"labels":{"a":"1","b":"2","c":"3"}`, `"choice":"xy"`, `"choice":"q"`, `"template":{"metadata":{"name":"Not Valid"}}`,
			`"anything":{"apiVersion":"v1"}`, `"nested":{"a":1}`,
		} {
			tr.Post(shapes, shape(fmt.Sprintf("v%d", i), `},"spec":{"mode":"a",`+spec+`}`)).Want(http.StatusUnprocessableEntity)
		}
		tr.Post(shapes, shape("r", `},"spec":{"size":1}`)).Want(http.StatusUnprocessableEntity)
		tr.Post(shapes, shape("c", `},"spec":{"mode":"c"}`)).Want(http.StatusUnprocessableEntity)
		// Repeated fields: named, the last value kept.
		tr.Post(shapes, shape("d", `},"spec":{"mode":"c","size":2,"mode":"a","size":3}`)).Want(http.StatusCreated)
		tr.Post(shapes+"?fieldValidation=Strict", shape("e", `},"spec":{"mode":"a","mode":"b"}`)).Want(http.StatusBadRequest)
		tr.Post(shapes, shape("t", `},"spec":{"mode":"a","template":{"metadata":{"name":1}}}`)).Want(http.StatusBadRequest)
		tr.Post(shapes, shape("t", `},"spec":{"mode":"a","anything":{"apiVersion":1}}`)).Want(http.StatusBadRequest)
		// The scale subresource's paths.
		tr.Post(shapes, shape("s", `},"spec":{"mode":"a","replicas":-1}`)).Want(http.StatusUnprocessableEntity)
		tr.Post(shapes, shape("ok", `},"spec":{"mode":"a","replicas":1,"size":50,"ratio":2.5,"on":true,"when":"2026-01-02T03:04:05Z","tags":["x","y"]}`)).Want(http.StatusCreated)
		// /status validates the status alone; the main resource keeps it.
		ok := tr.Get(shapes + "/ok").Want(http.StatusOK)
		tr.Put(shapes+"/ok/status", shape("ok", `,"resourceVersion":"`+ok.RV()+`"},"spec":{"mode":"a"},"status":{"phase":"Sideways","replicas":-2}`)).Want(http.StatusUnprocessableEntity)
		tr.Patch(shapes+"/ok/status", "merge", `{"status":{"selector":1}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(shapes+"/ok/status", "merge", `{"status":{"phase":"Up","replicas":1,"selector":"a=b"}}`).Want(http.StatusOK)
		tr.Patch(shapes+"/ok", "merge", `{"spec":{"size":60},"status":{"phase":"Down"}}`).Want(http.StatusOK)
		tr.GetTable(shapes).Want(http.StatusOK)
		// Ratcheting: a value the schema no longer allows may stay, not change.
		tr.Patch("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/shapes.{group}", "json", `[{"op":"replace","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/size/maximum","value":10}]`).Want(http.StatusOK)
		tr.Patch(shapes+"/ok", "merge", `{"spec":{"name":"abc"}}`).Want(http.StatusOK)
		tr.Patch(shapes+"/ok", "merge", `{"spec":{"size":70}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(shapes+"/ok/status", "merge", `{"status":{"phase":"Up"}}`).Want(http.StatusOK)
		tr.unrecorded(func() {
			tr.Delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/shapes.{group}", "").Want(http.StatusOK)
		})
	}},
}
