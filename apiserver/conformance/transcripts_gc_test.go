package conformance

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// gcTranscripts: garbage collection (kube-controller-manager's collector
// on the real target, the embedded server's own) of a Deployment →
// ReplicaSet → Pod chain of hand-made objects deleted Background,
// Foreground and Orphan, a dependent whose owner never existed, and a
// namespace deleted while some of its content holds a finalizer. What the
// collectors do comes a moment after the requests that start it: the
// transcripts wait for it (tr.awaitGet, unrecorded), then record the
// result.
var gcTranscripts = []transcript{
	{"gc-background", func(tr *T) {
		gcChain(tr, "")
		tr.Delete(deploys+"/d", "").Want(http.StatusOK)
		tr.awaitGet(pods+"/p", http.StatusNotFound)
		tr.awaitGet(replicaSets+"/rs", http.StatusNotFound)
		tr.Get(deploys + "/d").Want(http.StatusNotFound)
		tr.Get(replicaSets + "/rs").Want(http.StatusNotFound)
		tr.Get(pods + "/p").Want(http.StatusNotFound)
	}},
	{"gc-foreground", func(tr *T) {
		// The pod holds a finalizer: the chain waits for it, each owner
		// deleting its dependents in the foreground.
		gcChain(tr, `"finalizers":["example.com/hold"],`)
		tr.Delete(deploys+"/d", `{"apiVersion":"v1","kind":"DeleteOptions","propagationPolicy":"Foreground"}`).Want(http.StatusOK)
		tr.awaitGet(pods+"/p", http.StatusOK, "metadata.deletionTimestamp")
		tr.awaitGet(replicaSets+"/rs", http.StatusOK, "metadata.deletionTimestamp")
		tr.Get(deploys + "/d").Want(http.StatusOK)
		tr.Get(replicaSets + "/rs").Want(http.StatusOK)
		tr.Get(pods + "/p").Want(http.StatusOK)
		// A second delete of the owner changes nothing.
		tr.Delete(deploys+"/d", `{"apiVersion":"v1","kind":"DeleteOptions","propagationPolicy":"Foreground"}`).Want(http.StatusOK)
		tr.Patch(pods+"/p", "merge", `{"metadata":{"finalizers":null}}`).Want(http.StatusOK)
		tr.awaitGet(deploys+"/d", http.StatusNotFound)
		tr.Get(replicaSets + "/rs").Want(http.StatusNotFound)
		tr.Get(pods + "/p").Want(http.StatusNotFound)
	}},
	{"gc-orphan", func(tr *T) {
		gcChain(tr, "")
		tr.Delete(deploys+"/d", `{"apiVersion":"v1","kind":"DeleteOptions","propagationPolicy":"Orphan"}`).Want(http.StatusOK)
		tr.awaitGet(deploys+"/d", http.StatusNotFound)
		// The ReplicaSet lost its reference to the Deployment; the pod
		// keeps its own.
		tr.Get(replicaSets + "/rs").Want(http.StatusOK)
		tr.Get(pods + "/p").Want(http.StatusOK)
	}},
	{"gc-orphan-by-default-finalizer", func(tr *T) {
		// An owner made with the orphan finalizer orphans its dependents
		// when deleted without a policy; an explicit Background policy
		// replaces it.
		owner := tr.Post(cms, cmWithMeta("owner", `"finalizers":["orphan"]`)).Want(http.StatusCreated)
		tr.Post(cms, cmWithMeta("dep", fmt.Sprintf(`"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":%q}]`, owner.UID()))).Want(http.StatusCreated)
		tr.Delete(cms+"/owner", "").Want(http.StatusOK)
		tr.awaitGet(cms+"/owner", http.StatusNotFound)
		tr.Get(cms + "/dep").Want(http.StatusOK)
		owner2 := tr.Post(cms, cmWithMeta("owner2", `"finalizers":["orphan"]`)).Want(http.StatusCreated)
		tr.Post(cms, cmWithMeta("dep2", fmt.Sprintf(`"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner2","uid":%q}]`, owner2.UID()))).Want(http.StatusCreated)
		tr.Delete(cms+"/owner2", `{"apiVersion":"v1","kind":"DeleteOptions","propagationPolicy":"Background"}`).Want(http.StatusOK)
		tr.awaitGet(cms+"/dep2", http.StatusNotFound)
		tr.Get(cms + "/owner2").Want(http.StatusNotFound)
	}},
	{"gc-dangling-owner", func(tr *T) {
		// An owner that never existed (or another object under its name):
		// the dependent is collected.
		real := tr.Post(cms, configMap("named", "")).Want(http.StatusCreated)
		tr.Post(cms, cmWithMeta("ghost-dep", `"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"ghost","uid":"6a6f7c1e-0000-4000-8000-000000000001"}]`)).Want(http.StatusCreated)
		tr.Post(cms, cmWithMeta("wrong-uid-dep", `"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"named","uid":"6a6f7c1e-0000-4000-8000-000000000002"}]`)).Want(http.StatusCreated)
		tr.Post(cms, cmWithMeta("kept-dep", fmt.Sprintf(`"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"named","uid":%q}]`, real.UID()))).Want(http.StatusCreated)
		tr.awaitGet(cms+"/ghost-dep", http.StatusNotFound)
		tr.awaitGet(cms+"/wrong-uid-dep", http.StatusNotFound)
		tr.Get(cms + "/kept-dep").Want(http.StatusOK)
	}},
	{"gc-owner-in-another-namespace", func(tr *T) {
		// An owner reference names objects of the dependent's own
		// namespace (or cluster-scoped ones): an owner of the same name
		// and uid in another namespace is no owner, and the dependent goes.
		tr.Post("/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"{ns}-o"}}`).Want(http.StatusCreated)
		owner := tr.Post("/api/v1/namespaces/{ns}-o/configmaps", configMap("owner", "")).Want(http.StatusCreated)
		tr.Post(cms, cmWithMeta("dep", fmt.Sprintf(`"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":%q}]`, owner.UID()))).Want(http.StatusCreated)
		tr.awaitGet(cms+"/dep", http.StatusNotFound)
		tr.Get("/api/v1/namespaces/{ns}-o/configmaps/owner").Want(http.StatusOK)
		tr.Delete("/api/v1/namespaces/{ns}-o", "").Want(http.StatusOK)
	}},
	{"namespace-deleted-foreground", func(tr *T) {
		// A namespace's deletion takes the collector's finalizer too; the
		// collector removes it (nothing in the cluster names the namespace
		// as owner), and the namespace goes once empty.
		tr.Post(cms, configMap("c", "")).Want(http.StatusCreated)
		tr.Delete("/api/v1/namespaces/{ns}", `{"apiVersion":"v1","kind":"DeleteOptions","propagationPolicy":"Foreground"}`).Want(http.StatusOK)
		tr.awaitGet("/api/v1/namespaces/{ns}", http.StatusNotFound)
		tr.Get(cms + "/c").Want(http.StatusNotFound)
	}},
	{"namespace-deleted-with-finalizers", func(tr *T) {
		tr.Post(cms, cmWithMeta("held", `"finalizers":["example.com/hold"]`)).Want(http.StatusCreated)
		tr.Post(cms, configMap("free", "")).Want(http.StatusCreated)
		tr.Delete("/api/v1/namespaces/{ns}", "").Want(http.StatusOK)
		tr.awaitGet("/api/v1/namespaces/{ns}", http.StatusOK, "status.conditions")
		tr.awaitGet(cms+"/free", http.StatusNotFound)
		tr.Get("/api/v1/namespaces/{ns}").Want(http.StatusOK)
		tr.Get(cms).Want(http.StatusOK)
		tr.Post(cms, configMap("late", "")).Want(http.StatusForbidden)
		tr.Patch(cms+"/held", "merge", `{"metadata":{"finalizers":null}}`).Want(http.StatusOK)
		tr.awaitGet("/api/v1/namespaces/{ns}", http.StatusNotFound)
		tr.Get(cms).Want(http.StatusOK)
	}},
}

const replicaSets = "/apis/apps/v1/namespaces/{ns}/replicasets"

// cmWithMeta is a ConfigMap whose metadata has meta beside its name.
func cmWithMeta(name, meta string) string {
	return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `",` + meta + `}}`
}

// gcChain makes a Deployment d, a ReplicaSet rs it controls and a Pod p rs
// controls (blockOwnerDeletion on both references), as their controllers
// would have made them; podMeta is added to the pod's metadata.
func gcChain(tr *T, podMeta string) {
	d := tr.Post(deploys, deployBody).Want(http.StatusCreated)
	rs := tr.Post(replicaSets, fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"rs","labels":{"app":"d"},
 "ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"d","uid":%q,"controller":true,"blockOwnerDeletion":true}]},
 "spec":{"replicas":1,"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}}}`, d.UID())).Want(http.StatusCreated)
	tr.Post(pods, fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"app":"d"},%s
 "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":%q,"controller":true,"blockOwnerDeletion":true}]},
 "spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}`, podMeta, rs.UID())).Want(http.StatusCreated)
	// A collector that has not yet seen an object when its owner goes
	// decides without it (a ReplicaSet whose pod it has not seen is
	// deleted in the background, an orphaned owner's unseen dependent
	// keeps its reference and is collected), on either server: the
	// transcripts let both see the chain first.
	time.Sleep(time.Second)
}

// awaitGet polls path, unrecorded, until it answers code and, if fields
// are given, has each of them (dotted paths) set; a garbage collector's or
// namespace controller's work comes a moment after the request that
// starts it, on either server, by its own timing.
func (tr *T) awaitGet(path string, code int, fields ...string) {
	tr.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var r *Resp
		tr.unrecorded(func() { r = tr.Get(path) })
		if r.Code == code && hasFields(r.Obj, fields) {
			return
		}
		if time.Now().After(deadline) {
			tr.t.Fatalf("%s: GET %s: %d after 60 s, want %d with %v", tr.fx.target, path, r.Code, code, fields)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func hasFields(obj map[string]any, fields []string) bool {
	for _, f := range fields {
		var v any = obj
		for _, p := range strings.Split(f, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				return false
			}
			v = m[p]
		}
		if v == nil {
			return false
		}
	}
	return true
}
