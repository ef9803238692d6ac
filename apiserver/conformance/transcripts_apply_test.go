package conformance

import (
	"net/http"
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
