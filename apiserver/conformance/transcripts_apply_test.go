package conformance

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// applyTranscripts: server-side apply and the managedFields every write
// records — create and update by apply, conflicts between managers, force,
// shared fields, apply to /status and /scale, managedFields after Update
// operations and their reset, apply's option and body errors, dry runs.
var applyTranscripts = []transcript{
	{"apply-configmap", func(tr *T) {
		const a = cms + "/a?fieldManager=alice"
		const b = cms + "/a?fieldManager=bob"
		tr.Patch(a, "apply", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"team":"x"}},"data":{"x":"1","y":"2"}}`).Want(http.StatusCreated)
		// The same configuration again changes nothing.
		tr.Patch(a, "apply", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"team":"x"}},"data":{"x":"1","y":"2"}}`).Want(http.StatusOK)
		// Another manager setting alice's field to another value: a conflict.
		tr.Patch(b, "apply", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"x":"other"}}`).Want(http.StatusConflict)
		tr.Patch(b+"&force=true", "apply", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"x":"other"}}`).Want(http.StatusOK)
		// The same value: both own y.
		tr.Patch(b, "apply", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"x":"other","y":"2"}}`).Want(http.StatusOK)
		// Alice drops y (bob keeps it) and her label (removed: hers alone).
		tr.Patch(a, "apply", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"z":"3"}}`).Want(http.StatusOK)
		// YAML, as kubectl may send it; YAML 1.1 reads an unquoted y as true.
		tr.Patch(cms+"/yaml?fieldManager=kubectl", "apply", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yaml\ndata:\n  k: v\n").Want(http.StatusCreated)
		tr.Patch(cms+"/y?fieldManager=kubectl", "apply", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n").Want(http.StatusInternalServerError)
		tr.Get(cms + "/a").Want(http.StatusOK)
	}},
	{"apply-errors", func(tr *T) {
		body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e"},"data":{"x":"1"}}`
		tr.Patch(cms+"/e", "apply", body).Want(http.StatusUnprocessableEntity)                                           // no fieldManager
		tr.Patch(cms+"/e?fieldManager=m&force=true", "merge", `{"data":{"x":"1"}}`).Want(http.StatusUnprocessableEntity) // force on a merge patch
		tr.Patch(cms+"/e?fieldManager=m", "apply", `{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"e"}}`).Want(http.StatusBadRequest)
		tr.Patch(cms+"/e?fieldManager=m", "apply", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}`).Want(http.StatusBadRequest)
		tr.Patch(cms+"/e?fieldManager=m", "apply", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e","managedFields":[{"manager":"m","operation":"Apply"}]}}`).Want(http.StatusBadRequest)
		tr.Patch(cms+"/e?fieldManager=m", "apply", "data: [unclosed").Want(http.StatusBadRequest)
		tr.Patch(cms+"/e?fieldManager=m", "application/apply-patch+cbor", body).Want(http.StatusUnsupportedMediaType)
		// A dry run creates nothing.
		tr.Patch(cms+"/e?fieldManager=m&dryRun=All", "apply", body).Want(http.StatusCreated)
		tr.Get(cms + "/e").Want(http.StatusNotFound)
		// Apply to a subresource of a missing object.
		tr.Patch(deploys+"/missing/status?fieldManager=m", "apply", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"missing"},"status":{"replicas":1}}`).Want(http.StatusNotFound)
	}},
	{"managed-fields-of-updates", func(tr *T) {
		tr.Post(cms+"?fieldManager=creator", configMap("u", `"data":{"a":"1"}`)).Want(http.StatusCreated)
		// Without fieldManager, the user agent's first part names the manager.
		tr.Patch(cms+"/u", "merge", `{"data":{"b":"2"}}`).Want(http.StatusOK)
		tr.Put(cms+"/u?fieldManager=updater", configMap("u", `"data":{"a":"changed","b":"2"}`)).Want(http.StatusOK)
		tr.Patch(cms+"/u?fieldManager=applier", "apply", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"u"},"data":{"c":"3"}}`).Want(http.StatusOK)
		// An Update operation does not conflict: it takes the fields it changes.
		tr.Patch(cms+"/u?fieldManager=updater", "merge", `{"data":{"c":"4"}}`).Want(http.StatusOK)
		// managedFields sent with an update replace the record; [{}] resets it.
		tr.Patch(cms+"/u", "merge", `{"metadata":{"managedFields":[{}]}}`).Want(http.StatusOK)
		tr.Patch(cms+"/u?fieldManager=applier", "apply", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"u"},"data":{"c":"4"}}`).Want(http.StatusOK)
	}},
	{"apply-deployment-status-scale", func(tr *T) {
		const d = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"d"}},
 "template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}}}`
		tr.Patch(deploys+"/d?fieldManager=alice", "apply", d).Want(http.StatusCreated)
		// Containers merge by name: bob adds one and does not touch alice's.
		tr.Patch(deploys+"/d?fieldManager=bob", "apply", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"template":{"spec":{"containers":[{"name":"side","image":"busybox:1.36"}]}}}}`).Want(http.StatusOK)
		// The status through /status, by its own manager.
		tr.Patch(deploys+"/d/status?fieldManager=ctrl", "apply", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"status":{"replicas":2,"observedGeneration":1}}`).Want(http.StatusOK)
		// The replicas through /scale: alice's, so a conflict, then forced.
		tr.Patch(deploys+"/d/scale?fieldManager=hpa", "apply", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"d"},"spec":{"replicas":3}}`).Want(http.StatusConflict)
		tr.Patch(deploys+"/d/scale?fieldManager=hpa&force=true", "apply", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"d"},"spec":{"replicas":3}}`).Want(http.StatusOK)
		tr.Get(deploys + "/d").Want(http.StatusOK)
		// Alice applies without replicas: hpa keeps them.
		tr.Patch(deploys+"/d?fieldManager=alice", "apply", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"app":"d"}},
 "template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"nginx:1.28"}]}}}}`).Want(http.StatusOK)
	}},
	{"apply-custom-resource", func(tr *T) {
		tr.Patch(gadgets+"/g?fieldManager=alice", "apply", gadget("g", `{"color":"red","tags":["a","b"]}`)).Want(http.StatusCreated)
		// tags is an atomic list: bob's different list conflicts.
		tr.Patch(gadgets+"/g?fieldManager=bob", "apply", gadget("g", `{"tags":["c"]}`)).Want(http.StatusConflict)
		tr.Patch(gadgets+"/g?fieldManager=bob", "apply", gadget("g", `{"size":5}`)).Want(http.StatusOK)
		// Status through /status; the main resource ignores status.
		tr.Patch(gadgets+"/g/status?fieldManager=ctrl", "apply", `{"apiVersion":"{group}/v1","kind":"Gadget","metadata":{"name":"g"},"status":{"ready":true}}`).Want(http.StatusOK)
		tr.Patch(gadgets+"/g?fieldManager=alice", "apply", `{"apiVersion":"{group}/v1","kind":"Gadget","metadata":{"name":"g"},"spec":{"color":"blue"},"status":{"ready":false}}`).Want(http.StatusOK)
		// A value the schema refuses.
		tr.Patch(gadgets+"/g?fieldManager=alice", "apply", gadget("g", `{"color":"purple"}`)).Want(http.StatusUnprocessableEntity)
		tr.Get(gadgets + "/g").Want(http.StatusOK)
	}},
}

// writeEdgeTranscripts: writes a controller-runtime suite hit that the
// server answered otherwise than kube-apiserver.
var writeEdgeTranscripts = []transcript{
	{"dry-run-create-with-resource-version", func(tr *T) {
		tr.Post(cms+"?dryRun=All", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d","resourceVersion":"12345"},"data":{"a":"b"}}`).Want(http.StatusCreated)
		tr.Get(cms + "/d").Want(http.StatusNotFound)
		tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d","resourceVersion":"12345"}}`).Want(http.StatusInternalServerError)
	}},
	{"deployment-null-containers", func(tr *T) {
		tr.Post(deploys, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"n"},"spec":{"selector":{"matchLabels":{"app":"n"}},"template":{"metadata":{"labels":{"app":"n"}},"spec":{"containers":null}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(deploys, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"e"},"spec":{"selector":{"matchLabels":{"app":"n"}},"template":{"metadata":{"labels":{"app":"n"}},"spec":{"containers":[]}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":null}}`).Want(http.StatusUnprocessableEntity)
	}},
}

// metadataTranscripts: metadata-only reads (client-go's metadata client
// and informers): GET, LIST and WATCH with as=PartialObjectMetadata[List].
var metadataTranscripts = []transcript{
	{"metadata-only-reads", func(tr *T) {
		const one = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
		const list = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
		a := tr.Post(cms, configMap("a", `"data":{"k":"v"}`)).Want(http.StatusCreated)
		tr.Post(gadgets, gadget("g", `{"color":"red"}`)).Want(http.StatusCreated)
		tr.GetAs(cms+"/a", one).Want(http.StatusOK)
		tr.GetAs(cms, list).Want(http.StatusOK)
		tr.GetAs(gadgets+"/g", one).Want(http.StatusOK)
		tr.GetAs(gadgets+"?limit=1", list).Want(http.StatusOK)
		// The other form, asked alone: not acceptable.
		tr.GetAs(cms+"/a", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1").Want(http.StatusNotAcceptable)
		tr.GetAs(cms, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1").Want(http.StatusNotAcceptable)
		tr.GetAs(cms+"/a", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1").Want(http.StatusOK)
		tr.Patch(cms+"/a", "merge", `{"data":{"k":"w"}}`).Want(http.StatusOK)
		tr.WatchAs(cms+"?watch=1&resourceVersion="+a.RV(), one, Events(1)).Want(http.StatusOK)
	}},
}

// selfTranscripts: what kube-apiserver creates for itself.
var selfTranscripts = []transcript{
	{"kubernetes-service", func(tr *T) {
		tr.Get("/api/v1/namespaces/default/services/kubernetes").Want(http.StatusOK)
	}},
}

// podSubresourceTranscripts: the pod subresources controllers write.
var podSubresourceTranscripts = []transcript{
	{"pod-eviction", func(tr *T) {
		tr.Post(pods, podBody).Want(http.StatusCreated)
		ev := `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p"}}`
		tr.Post(pods+"/other/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"other"}}`).Want(http.StatusNotFound)
		tr.Post(pods+"/p/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"q"}}`).Want(http.StatusBadRequest)
		tr.Post(pods+"/p/eviction", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p"}}`).Want(http.StatusBadRequest)
		tr.Post(pods+"/p/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p"},"deleteOptions":{"dryRun":["All"]}}`).Want(http.StatusCreated)
		tr.Get(pods + "/p").Want(http.StatusOK)
		tr.Post(pods+"/p/eviction", ev).Want(http.StatusCreated)
		tr.Get(pods + "/p").Want(http.StatusNotFound)
	}},
	{"pod-binding", func(tr *T) {
		tr.Post(pods, podBody).Want(http.StatusCreated)
		tr.Post(pods+"/p/binding", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p"},"target":{"kind":"Node","name":""}}`).Want(http.StatusInternalServerError) // kube's binding storage
		tr.Post(pods+"/p/binding", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p","annotations":{"a":"b"}},"target":{"kind":"Node","name":"n1"}}`).Want(http.StatusCreated)
		tr.Get(pods + "/p").Want(http.StatusOK)
		tr.Post(pods+"/p/binding", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p"},"target":{"kind":"Node","name":"n2"}}`).Want(http.StatusConflict)
		tr.Post(pods+"/missing/binding", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"missing"},"target":{"kind":"Node","name":"n1"}}`).Want(http.StatusNotFound)
	}},
}

// tokenTranscripts: ServiceAccount tokens from the TokenRequest API, and
// requests authenticated by them.
var tokenTranscripts = []transcript{
	{"serviceaccount-token", func(tr *T) {
		tr.Post("/api/v1/namespaces/{ns}/serviceaccounts", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"robot"}}`).Want(http.StatusCreated)
		tok := tr.Post("/api/v1/namespaces/{ns}/serviceaccounts/robot/token", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":3600}}`).Want(http.StatusCreated)
		tr.Post("/api/v1/namespaces/{ns}/serviceaccounts/robot/token", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":60}}`).Want(http.StatusUnprocessableEntity)
		tr.Post("/api/v1/namespaces/{ns}/serviceaccounts/missing/token", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`).Want(http.StatusNotFound)
		token, _ := tok.Obj["status"].(map[string]any)["token"].(string)
		cfg := tr.fx.env.Config()
		cfg.BearerToken = token
		tr.as(cfg, func() {
			tr.Post("/apis/authentication.k8s.io/v1/selfsubjectreviews", `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`).Want(http.StatusCreated)
			tr.Get(pods).Want(http.StatusForbidden)
		})
		cfg.BearerToken = token + "x"
		tr.as(cfg, func() { tr.Get(pods).Want(http.StatusUnauthorized) })
	}},
}

// celTranscripts: x-kubernetes-validations rules of a CRD's schema.
var celTranscripts = []transcript{
	{"cel-validation-rules", func(tr *T) {
		crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"rules.{group}"},
"spec":{"group":"{group}","scope":"Namespaced","names":{"plural":"rules","singular":"rule","kind":"Rule"},"versions":[{"name":"v1","served":true,"storage":true,
"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object",
 "x-kubernetes-validations":[
  {"rule":"self.min <= self.max","message":"min must not exceed max","fieldPath":".min","reason":"FieldValueForbidden"},
  {"rule":"!has(self.mode) || self.mode != 'frozen' || self.max == oldSelf.max","message":"max is frozen"},
  {"rule":"self.name.startsWith('x-')","messageExpression":"'name ' + self.name + ' must start with x-'"}],
 "properties":{"min":{"type":"integer"},"max":{"type":"integer"},"mode":{"type":"string"},"name":{"type":"string"},
  "tags":{"type":"array","items":{"type":"string"},"x-kubernetes-validations":[{"rule":"self.all(t, t.size() < 5)","message":"tags are short"}]},
  "id":{"type":"string","x-kubernetes-validations":[{"rule":"self == oldSelf","message":"id is immutable"}]}}}}}}}]}}`
		// The CRD's create and delete are set-up, not recorded: kube-apiserver
		// answers the create before its controllers establish the CRD (the
		// customresource-definition transcript compares the CRD itself).
		tr.unrecorded(func() {
			tr.Post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd).Want(http.StatusCreated)
		})
		tr.awaitServed("/apis/{group}/v1/namespaces/{ns}/rules")
		rules := "/apis/{group}/v1/namespaces/{ns}/rules"
		obj := func(name, spec string) string {
			return `{"apiVersion":"{group}/v1","kind":"Rule","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
		}
		tr.Post(rules, obj("a", `{"min":1,"max":5,"name":"x-a","id":"1","tags":["a"]}`)).Want(http.StatusCreated)
		tr.Post(rules, obj("b", `{"min":6,"max":5,"name":"x-b"}`)).Want(http.StatusUnprocessableEntity)
		tr.Post(rules, obj("c", `{"min":1,"max":5,"name":"bad"}`)).Want(http.StatusUnprocessableEntity)
		tr.Post(rules, obj("d", `{"min":1,"max":5,"name":"x-d","tags":["long-tag"]}`)).Want(http.StatusUnprocessableEntity)
		tr.Post(rules, obj("e", `{"min":"one","max":5,"name":"x-e"}`)).Want(http.StatusUnprocessableEntity)
		tr.Patch(rules+"/a", "merge", `{"spec":{"mode":"frozen"}}`).Want(http.StatusOK)
		tr.Patch(rules+"/a", "merge", `{"spec":{"max":9}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(rules+"/a", "merge", `{"spec":{"id":"2"}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(rules+"/a", "merge", `{"spec":{"mode":"open","max":9}}`).Want(http.StatusOK)
		tr.unrecorded(func() {
			tr.Delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/rules.{group}", "").Want(http.StatusOK)
		})
		// Rules are compiled when the CRD is written: one that does not
		// compile, or refers to what is not there, refuses the CRD.
		for i, rule := range []string{"self.min <=", "self.nothing == 1", "self.min == 'a'"} {
			bad := strings.Replace(strings.Replace(crd, "rules.{group}", fmt.Sprintf("bad%d.{group}", i), 1), `"plural":"rules","singular":"rule","kind":"Rule"`, fmt.Sprintf(`"plural":"bad%d","singular":"bad%d","kind":"Bad%d"`, i, i, i), 1)
			bad = strings.Replace(bad, "self.min <= self.max", rule, 1)
			tr.Post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", bad).Want(http.StatusUnprocessableEntity)
		}
	}},
}

// awaitServed polls path (unrecorded) until it is served: a new CRD's
// resources are served a moment after its create on kube-apiserver.
func (tr *T) awaitServed(path string) {
	tr.t.Helper()
	url := tr.fx.host + tr.expand(path)
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, err := http.NewRequestWithContext(tr.ctx, http.MethodGet, url, nil)
		if err != nil {
			tr.t.Fatal(err)
		}
		resp, err := tr.fx.client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			tr.t.Fatalf("%s: %s not served after 30 s", tr.fx.target, path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// unrecorded runs f without recording its exchanges (set-up).
func (tr *T) unrecorded(f func()) {
	n := len(tr.log)
	f()
	tr.log = tr.log[:n]
}
