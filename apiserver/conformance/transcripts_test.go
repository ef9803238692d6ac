package conformance

import (
	"fmt"
	"net/http"
	"slices"
)

// Paths used by the transcripts; {ns} and {group} are expanded by T.
const (
	cms      = "/api/v1/namespaces/{ns}/configmaps"
	secrets  = "/api/v1/namespaces/{ns}/secrets"
	pods     = "/api/v1/namespaces/{ns}/pods"
	services = "/api/v1/namespaces/{ns}/services"
	events   = "/api/v1/namespaces/{ns}/events"
	deploys  = "/apis/apps/v1/namespaces/{ns}/deployments"
	gadgets  = "/apis/{group}/v1/namespaces/{ns}/gadgets"
)

func configMap(name, rest string) string {
	if rest != "" {
		rest = "," + rest
	}
	return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"}` + rest + `}`
}

func gadget(name, spec string) string {
	return `{"apiVersion":"{group}/v1","kind":"Gadget","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
}

const podBody = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"app":"web"}},
 "spec":{"containers":[{"name":"c","image":"nginx:1.27","ports":[{"containerPort":80}]}]}}`

const deployBody = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},
 "spec":{"selector":{"matchLabels":{"app":"d"}},
  "template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"nginx:1.27"},{"name":"side","image":"busybox:1.36"}]}}}}`

// transcripts is the suite. To add one, append a transcript whose run
// issues requests through tr (paths and bodies may use {ns} and {group}) to
// one of its parts; state the expected status code of each with Want.
var transcripts = slices.Concat(basicTranscripts, edgeTranscripts, limitTranscripts, timeoutTranscripts, pathSegmentTranscripts, boundedTextTranscripts, endpointTranscripts, rbacTranscripts, applyTranscripts, writeEdgeTranscripts, metadataTranscripts, protobufTranscripts, selfTranscripts, podSubresourceTranscripts, tokenTranscripts, celTranscripts, kindTranscripts, crdTranscripts, crSchemaTranscripts, gcTranscripts)

// basicTranscripts: each kind's CRUD, conflicts, finalizers, preconditions,
// patches, lists and watches from a resourceVersion, deletion and its
// propagation, namespaces, collections and dry runs.
var basicTranscripts = []transcript{
	{"configmap-crud", func(tr *T) {
		c := tr.Post(cms, configMap("a", `"data":{"k":"v"}`)).Want(http.StatusCreated)
		tr.Get(cms + "/a").Want(http.StatusOK)
		u := tr.Put(cms+"/a", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":%q,"labels":{"x":"1"}},"data":{"k":"v2"}}`, c.RV())).Want(http.StatusOK)
		// No change: nothing written, same resourceVersion.
		tr.Put(cms+"/a", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":%q,"labels":{"x":"1"}},"data":{"k":"v2"}}`, u.RV())).Want(http.StatusOK)
		// No resourceVersion: unconditional.
		tr.Put(cms+"/a", configMap("a", `"data":{"k":"v3"}`)).Want(http.StatusOK)
		tr.Get(cms).Want(http.StatusOK)
		tr.Delete(cms+"/a", "").Want(http.StatusOK)
		tr.Get(cms + "/a").Want(http.StatusNotFound)
		tr.Delete(cms+"/a", "").Want(http.StatusNotFound)
		tr.Get(cms).Want(http.StatusOK)
	}},
	{"configmap-create-errors", func(tr *T) {
		tr.Post(cms, configMap("a", "")).Want(http.StatusCreated)
		tr.Post(cms, configMap("a", "")).Want(http.StatusConflict)
		// kube-apiserver answers 500 (its storage refuses the write).
		tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","resourceVersion":"1"}}`).Want(http.StatusInternalServerError)
		tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"elsewhere"}}`).Want(http.StatusBadRequest)
		tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"gen-"}}`).Want(http.StatusCreated)
		tr.Post(cms, configMap("Bad_Name", "")).Want(http.StatusUnprocessableEntity)
		tr.Post(cms, configMap("bad-key", `"data":{"a b":"x"}`)).Want(http.StatusUnprocessableEntity)
		tr.Post(cms+"?dryRun=All", configMap("dry", `"data":{"k":"v"}`)).Want(http.StatusCreated)
		tr.Get(cms + "/dry").Want(http.StatusNotFound)
		tr.Post(cms+"?dryRun=Some", configMap("dry", "")).Want(http.StatusUnprocessableEntity)
	}},
	{"bad-input", func(tr *T) {
		tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"`).Want(http.StatusBadRequest)
		tr.Post(cms, `[1,2]`).Want(http.StatusBadRequest)
		tr.Post(cms, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}`).Want(http.StatusBadRequest)
		tr.Post(cms, `{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"x"}}`).Want(http.StatusBadRequest)
		// No kind: built-ins take it from the URL.
		tr.Post(cms, `{"apiVersion":"v1","metadata":{"name":"x"}}`).Want(http.StatusCreated)
		tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"k":1}}`).Want(http.StatusBadRequest)
		tr.Post(cms+"?fieldValidation=Strict", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"bogus":1}`).Want(http.StatusBadRequest)
		tr.Post(cms+"?fieldValidation=Strict", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":"1"},"data":{"b":"2"}}`).Want(http.StatusBadRequest)
		tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"warned"},"bogus":1}`).Want(http.StatusCreated)
		tr.Post(cms+"?fieldValidation=Ignore", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ignored"},"bogus":1}`).Want(http.StatusCreated)
		tr.Post(cms+"?fieldValidation=Loud", configMap("x", "")).Want(http.StatusUnprocessableEntity)
		tr.Post("/api/v1/namespaces/{ns}-missing/configmaps", configMap("x", "")).Want(http.StatusNotFound)
		tr.Get("/api/v1/namespaces/{ns}/widgets").Want(http.StatusNotFound)
		tr.Get("/apis/nothing.example.com/v1/things").Want(http.StatusNotFound)
		tr.Get(cms + "/missing").Want(http.StatusNotFound)
		tr.Get(gadgets + "/missing").Want(http.StatusNotFound)
		tr.Post(cms+"/warned", configMap("warned", "")).Want(http.StatusMethodNotAllowed)
		tr.Put(cms+"/warned", configMap("other", "")).Want(http.StatusBadRequest)
		tr.Put(cms+"/missing", configMap("missing", "")).Want(http.StatusNotFound)
		tr.Put(cms+"/warned", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"warned","namespace":"elsewhere"}}`).Want(http.StatusBadRequest)
		tr.Get(cms + "?labelSelector=a%20in%20(").Want(http.StatusBadRequest)
		tr.Get(cms + "?fieldSelector=spec.foo%3Dbar").Want(http.StatusBadRequest)
		tr.Get(cms + "?limit=abc").Want(http.StatusBadRequest)
		tr.Get(cms + "?resourceVersion=abc").Want(http.StatusBadRequest)
		tr.Get(cms + "?resourceVersionMatch=Exact").Want(http.StatusUnprocessableEntity)
	}},
	{"secret-crud", func(tr *T) {
		tr.Post(secrets, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"user":"admin"},"data":{"pw":"c2VjcmV0"}}`).Want(http.StatusCreated)
		tr.Get(secrets + "/s").Want(http.StatusOK)
		tr.Patch(secrets+"/s", "merge", `{"data":{"pw":null,"token":"dG9r"}}`).Want(http.StatusOK)
		tr.Post(secrets, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"t"},"type":"kubernetes.io/tls","data":{"tls.crt":"YQ==","tls.key":"Yg=="}}`).Want(http.StatusCreated)
		tr.Post(secrets, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"u"},"type":"kubernetes.io/tls","data":{}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(secrets, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"v"},"data":{"k":"not base64!"}}`).Want(http.StatusBadRequest)
		tr.Get(secrets + "?fieldSelector=type%3Dkubernetes.io%2Ftls").Want(http.StatusOK)
		tr.Delete(secrets+"/s", "").Want(http.StatusOK)
	}},
	{"pod-crud", func(tr *T) {
		c := tr.Post(pods, podBody).Want(http.StatusCreated)
		tr.Get(pods + "/p").Want(http.StatusOK)
		// The image may change (generation moves); labels do not move it.
		tr.Patch(pods+"/p", "strategic", `{"spec":{"containers":[{"name":"c","image":"nginx:1.28"}]}}`).Want(http.StatusOK)
		tr.Patch(pods+"/p", "merge", `{"metadata":{"labels":{"tier":"front"}}}`).Want(http.StatusOK)
		tr.Put(pods+"/p/status", fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","resourceVersion":%q},"spec":{"containers":[{"name":"c","image":"ignored"}]},"status":{"phase":"Running"}}`, c.RV())).Want(http.StatusConflict)
		tr.Patch(pods+"/p/status", "merge", `{"status":{"phase":"Running","podIP":"10.1.2.3"}}`).Want(http.StatusOK)
		tr.Get(pods + "?fieldSelector=status.phase%3DRunning").Want(http.StatusOK)
		tr.Get(pods + "?fieldSelector=status.phase%3DPending").Want(http.StatusOK)
		tr.Post(pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"},"spec":{"containers":[]}}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(pods+"/p", "").Want(http.StatusOK)
		tr.Get(pods + "/p").Want(http.StatusNotFound)
	}},
	{"service-crud", func(tr *T) {
		tr.Post(services, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"selector":{"app":"web"},"ports":[{"name":"http","port":80}]}}`).Want(http.StatusCreated)
		tr.Get(services + "/web").Want(http.StatusOK)
		tr.Patch(services+"/web", "merge", `{"spec":{"ports":[{"name":"http","port":8080,"targetPort":80}]}}`).Want(http.StatusOK)
		tr.Patch(services+"/web", "merge", `{"spec":{"clusterIP":"1.2.3.4"}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(services, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"Web2"},"spec":{"ports":[{"port":80}]}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(services, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"headless"},"spec":{"clusterIP":"None","selector":{"app":"web"},"ports":[{"port":80}]}}`).Want(http.StatusCreated)
		tr.Delete(services+"/web", "").Want(http.StatusOK)
		tr.Delete(services+"/headless", "").Want(http.StatusOK)
	}},
	{"deployment-crud-generation-scale", func(tr *T) {
		c := tr.Post(deploys, deployBody).Want(http.StatusCreated)
		tr.Get(deploys + "/d").Want(http.StatusOK)
		// Spec change: generation 2. Label change: still 2.
		tr.Patch(deploys+"/d", "merge", `{"spec":{"replicas":3}}`).Want(http.StatusOK)
		tr.Patch(deploys+"/d", "merge", `{"metadata":{"labels":{"team":"a"}}}`).Want(http.StatusOK)
		// Strategic merge: containers merge by name.
		tr.Patch(deploys+"/d", "strategic", `{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:1.28"}]}}}}`).Want(http.StatusOK)
		tr.Patch(deploys+"/d", "strategic", `{"spec":{"template":{"spec":{"containers":[{"name":"side","$patch":"delete"}]}}}}`).Want(http.StatusOK)
		// Status: through /status only; spec in a status write is ignored.
		tr.Patch(deploys+"/d/status", "merge", `{"spec":{"replicas":9},"status":{"replicas":3,"observedGeneration":4}}`).Want(http.StatusOK)
		tr.Patch(deploys+"/d", "merge", `{"status":{"replicas":7}}`).Want(http.StatusOK)
		tr.Get(deploys + "/d/scale").Want(http.StatusOK)
		tr.Put(deploys+"/d/scale", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"d"},"spec":{"replicas":5}}`).Want(http.StatusOK)
		tr.Get(deploys + "/d").Want(http.StatusOK)
		tr.Put(deploys+"/d", fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","resourceVersion":%q},"spec":{"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"x"}]}}}}`, c.RV())).Want(http.StatusConflict)
		tr.Post(deploys, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"bad"},"spec":{"selector":{"matchLabels":{"app":"x"}},"template":{"metadata":{"labels":{"app":"y"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(deploys+"/d", "").Want(http.StatusOK)
	}},
	{"customresource-crud-status-generation", func(tr *T) {
		// The status of a create is dropped (status subresource); size defaults.
		c := tr.Post(gadgets, `{"apiVersion":"{group}/v1","kind":"Gadget","metadata":{"name":"g"},"spec":{"color":"red"},"status":{"ready":true}}`).Want(http.StatusCreated)
		tr.Get(gadgets + "/g").Want(http.StatusOK)
		u := tr.Put(gadgets+"/g", fmt.Sprintf(`{"apiVersion":"{group}/v1","kind":"Gadget","metadata":{"name":"g","resourceVersion":%q},"spec":{"color":"blue","size":2}}`, c.RV())).Want(http.StatusOK)
		// Metadata only: generation stays.
		u = tr.Put(gadgets+"/g", fmt.Sprintf(`{"apiVersion":"{group}/v1","kind":"Gadget","metadata":{"name":"g","resourceVersion":%q,"labels":{"l":"1"}},"spec":{"color":"blue","size":2}}`, u.RV())).Want(http.StatusOK)
		// Status subresource: spec ignored, generation stays.
		u = tr.Put(gadgets+"/g/status", fmt.Sprintf(`{"apiVersion":"{group}/v1","kind":"Gadget","metadata":{"name":"g","resourceVersion":%q},"spec":{"color":"green"},"status":{"ready":true,"observedGeneration":2}}`, u.RV())).Want(http.StatusOK)
		// Main resource: status ignored.
		tr.Put(gadgets+"/g", fmt.Sprintf(`{"apiVersion":"{group}/v1","kind":"Gadget","metadata":{"name":"g","resourceVersion":%q,"labels":{"l":"1"}},"spec":{"color":"blue","size":2},"status":{"ready":false}}`, u.RV())).Want(http.StatusOK)
		tr.Patch(gadgets+"/g/status", "merge", `{"status":{"ready":false}}`).Want(http.StatusOK)
		tr.Patch(gadgets+"/g", "json", `[{"op":"replace","path":"/spec/size","value":7},{"op":"add","path":"/spec/tags","value":["a"]}]`).Want(http.StatusOK)
		tr.Patch(gadgets+"/g", "strategic", `{"spec":{"size":3}}`).Want(http.StatusUnsupportedMediaType)
		tr.Get(gadgets).Want(http.StatusOK)
		tr.Delete(gadgets+"/g", "").Want(http.StatusOK)
		tr.Get(gadgets + "/g").Want(http.StatusNotFound)
	}},
	{"customresource-validation", func(tr *T) {
		tr.Post(gadgets, gadget("big", `{"size":500}`)).Want(http.StatusUnprocessableEntity)
		tr.Post(gadgets, gadget("pink", `{"color":"pink"}`)).Want(http.StatusUnprocessableEntity)
		tr.Post(gadgets, gadget("typed", `{"size":"three"}`)).Want(http.StatusUnprocessableEntity)
		tr.Post(gadgets+"?fieldValidation=Strict", gadget("strict", `{"bogus":1}`)).Want(http.StatusBadRequest)
		tr.Post(gadgets, gadget("warned", `{"bogus":1}`)).Want(http.StatusCreated)
		tr.Post(gadgets, `{"apiVersion":"{group}/v1","kind":"Widget","metadata":{"name":"w"}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(gadgets, `{"apiVersion":"{group}/v1","kind":"Gadget","metadata":{"name":"Bad_Name"}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(gadgets, `{"apiVersion":"{group}/v1","kind":"Gadget","metadata":{"name":"bad"`).Want(http.StatusBadRequest)
		tr.Post(gadgets, gadget("red", `{"color":"red"}`)).Want(http.StatusCreated)
		tr.Get(gadgets + "?fieldSelector=spec.color%3Dred").Want(http.StatusOK)
		tr.Get(gadgets + "?fieldSelector=spec.size%3D1").Want(http.StatusBadRequest)
	}},
	{"conflicts", func(tr *T) {
		c := tr.Post(cms, configMap("a", `"data":{"n":"1"}`)).Want(http.StatusCreated)
		tr.Put(cms+"/a", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":%q},"data":{"n":"2"}}`, c.RV())).Want(http.StatusOK)
		tr.Put(cms+"/a", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":%q},"data":{"n":"3"}}`, c.RV())).Want(http.StatusConflict)
		tr.Patch(cms+"/a", "merge", fmt.Sprintf(`{"metadata":{"resourceVersion":%q},"data":{"n":"4"}}`, c.RV())).Want(http.StatusConflict)
		tr.Patch(cms+"/a", "merge", `{"data":{"n":"5"}}`).Want(http.StatusOK)
		tr.Put(cms+"/a", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"abc"},"data":{"n":"6"}}`).Want(http.StatusInternalServerError)
		tr.Get(cms + "/a").Want(http.StatusOK)
	}},
	{"finalizers", func(tr *T) {
		tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"f","finalizers":["example.com/keep"]}}`).Want(http.StatusCreated)
		tr.Delete(cms+"/f", "").Want(http.StatusOK)
		tr.Get(cms + "/f").Want(http.StatusOK)
		// Deleting again changes nothing.
		tr.Delete(cms+"/f", "").Want(http.StatusOK)
		tr.Patch(cms+"/f", "merge", `{"metadata":{"finalizers":["example.com/keep","example.com/more"]}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(cms+"/f", "merge", `{"data":{"still":"writable"}}`).Want(http.StatusOK)
		tr.Patch(cms+"/f", "merge", `{"metadata":{"finalizers":null}}`).Want(http.StatusOK)
		tr.Get(cms + "/f").Want(http.StatusNotFound)
		// A custom resource with a finalizer.
		tr.Post(gadgets, `{"apiVersion":"{group}/v1","kind":"Gadget","metadata":{"name":"g","finalizers":["example.com/keep"]},"spec":{}}`).Want(http.StatusCreated)
		tr.Delete(gadgets+"/g", "").Want(http.StatusOK)
		tr.Patch(gadgets+"/g", "json", `[{"op":"remove","path":"/metadata/finalizers"}]`).Want(http.StatusOK)
		tr.Get(gadgets + "/g").Want(http.StatusNotFound)
	}},
	{"delete-preconditions", func(tr *T) {
		c := tr.Post(cms, configMap("a", "")).Want(http.StatusCreated)
		tr.Delete(cms+"/a", `{"apiVersion":"v1","kind":"DeleteOptions","preconditions":{"uid":"00000000-0000-0000-0000-000000000000"}}`).Want(http.StatusConflict)
		tr.Delete(cms+"/a", `{"apiVersion":"v1","kind":"DeleteOptions","preconditions":{"resourceVersion":"1"}}`).Want(http.StatusConflict)
		tr.Delete(cms+"/a", `{"kind":"DeleteOptions","propagationPolicy":"Sideways"}`).Want(http.StatusUnprocessableEntity)
		tr.Delete(cms+"/a", `{not json`).Want(http.StatusBadRequest)
		tr.Delete(cms+"/a?dryRun=All", "").Want(http.StatusOK)
		tr.Delete(cms+"/a", fmt.Sprintf(`{"apiVersion":"v1","kind":"DeleteOptions","preconditions":{"uid":%q,"resourceVersion":%q}}`, c.UID(), c.RV())).Want(http.StatusOK)
		tr.Get(cms + "/a").Want(http.StatusNotFound)
	}},
	{"patches", func(tr *T) {
		tr.Post(cms, configMap("p", `"data":{"a":"1","b":"2"}`)).Want(http.StatusCreated)
		tr.Patch(cms+"/p", "merge", `{"data":{"a":null,"c":"3"},"metadata":{"labels":{"x":"y"}}}`).Want(http.StatusOK)
		tr.Patch(cms+"/p", "json", `[{"op":"add","path":"/data/d","value":"4"},{"op":"replace","path":"/data/b","value":"two"},{"op":"remove","path":"/data/c"}]`).Want(http.StatusOK)
		tr.Patch(cms+"/p", "json", `[{"op":"test","path":"/data/b","value":"2"},{"op":"remove","path":"/data/b"}]`).Want(http.StatusUnprocessableEntity)
		tr.Patch(cms+"/p", "json", `[{"op":"remove","path":"/data/nothing"}]`).Want(http.StatusUnprocessableEntity)
		tr.Patch(cms+"/p", "json", `{"op":"add"}`).Want(http.StatusBadRequest)
		tr.Patch(cms+"/p", "merge", `{"data":`).Want(http.StatusBadRequest)
		tr.Patch(cms+"/p", "strategic", `{"metadata":{"labels":{"z":"w"}},"data":{"e":"5"}}`).Want(http.StatusOK)
		tr.Patch(cms+"/p", "strategic", `{"data":{"e":1}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(cms+"/p", "text/plain", `data`).Want(http.StatusUnsupportedMediaType)
		tr.Patch(cms+"/missing", "merge", `{"data":{"a":"1"}}`).Want(http.StatusNotFound)
		tr.Patch(cms+"/p", "merge", `{"metadata":{"name":"other"}}`).Want(http.StatusBadRequest)
		tr.Get(cms + "/p").Want(http.StatusOK)
	}},
	{"list-selectors-pagination", func(tr *T) {
		for i, lbl := range []string{`"app":"a","tier":"front"`, `"app":"a","tier":"back"`, `"app":"b"`, `"app":"b","tier":"front"`, `"other":"1"`} {
			tr.Post(cms, fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d","labels":{%s}}}`, i, lbl)).Want(http.StatusCreated)
		}
		tr.Get(cms + "?labelSelector=app%3Da").Want(http.StatusOK)
		tr.Get(cms + "?labelSelector=tier%20in%20(front)%2Capp!%3Db").Want(http.StatusOK)
		tr.Get(cms + "?labelSelector=!app").Want(http.StatusOK)
		tr.Get(cms + "?labelSelector=tier").Want(http.StatusOK)
		tr.Get(cms + "?fieldSelector=metadata.name%3Dcm-2").Want(http.StatusOK)
		tr.Get(cms + "?fieldSelector=metadata.name!%3Dcm-2&labelSelector=app").Want(http.StatusOK)
		tr.Get(cms + "?fieldSelector=metadata.namespace%3D{ns}").Want(http.StatusOK)
		p1 := tr.Get(cms + "?limit=2").Want(http.StatusOK)
		p2 := tr.Get(cms + "?limit=2&continue=" + p1.Str("metadata.continue")).Want(http.StatusOK)
		tr.Get(cms + "?limit=2&continue=" + p2.Str("metadata.continue")).Want(http.StatusOK)
		tr.Get(cms + "?limit=2&labelSelector=app").Want(http.StatusOK)
		tr.Get(cms + "?limit=2&continue=bm90LWEtdG9rZW4").Want(http.StatusBadRequest)
		tr.Get(cms + "?limit=2&resourceVersion=" + p1.Str("metadata.resourceVersion") + "&continue=" + p1.Str("metadata.continue")).Want(http.StatusBadRequest)
		tr.Get(cms + "?resourceVersion=" + p1.Str("metadata.resourceVersion") + "&resourceVersionMatch=Exact").Want(http.StatusOK)
		tr.Get(cms + "?resourceVersion=0").Want(http.StatusOK)
		tr.Get(cms + "?resourceVersionMatch=Sometimes&resourceVersion=1").Want(http.StatusUnprocessableEntity)
	}},
	{"watch-from-resource-version", func(tr *T) {
		a := tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"w":"yes"}}}`).Want(http.StatusCreated)
		tr.Patch(cms+"/a", "merge", `{"data":{"k":"v"}}`).Want(http.StatusOK)
		tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`).Want(http.StatusCreated)
		tr.Patch(cms+"/a", "merge", `{"metadata":{"labels":{"w":"no"}}}`).Want(http.StatusOK)
		tr.Delete(cms+"/b", "").Want(http.StatusOK)
		tr.Watch(cms+"?watch=1&resourceVersion="+a.RV(), Events(4)).Want(http.StatusOK)
		// With a selector, leaving the selection is a DELETED event.
		tr.Watch(cms+"?watch=1&labelSelector=w%3Dyes&resourceVersion="+a.RV(), Events(2)).Want(http.StatusOK)
		tr.Watch(cms+"?watch=1&fieldSelector=metadata.name%3Db&resourceVersion="+a.RV(), Events(2)).Want(http.StatusOK)
		tr.Watch(cms+"?watch=1&resourceVersion="+a.RV()+"&allowWatchBookmarks=true", Events(4)).Want(http.StatusOK)
		tr.Watch(gadgets+"?watch=1&resourceVersion=abc", Events(1)).Want(http.StatusInternalServerError)
		tr.Watch(cms+"?watch=1&resourceVersionMatch=NotOlderThan&resourceVersion="+a.RV(), Events(1)).Want(http.StatusUnprocessableEntity)
	}},
	{"watch-list-initial-events", func(tr *T) {
		for _, n := range []string{"c", "a", "b"} {
			tr.Post(cms, configMap(n, `"data":{"n":"`+n+`"}`)).Want(http.StatusCreated)
		}
		tr.Post(gadgets, gadget("g1", `{"color":"red"}`)).Want(http.StatusCreated)
		tr.Post(gadgets, gadget("g2", `{"color":"blue"}`)).Want(http.StatusCreated)
		tr.Watch(cms+"?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", UntilInitialEventsEnd).Want(http.StatusOK)
		tr.Watch(cms+"?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&labelSelector=missing", UntilInitialEventsEnd).Want(http.StatusOK)
		tr.Watch(gadgets+"?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&fieldSelector=spec.color%3Dblue", UntilInitialEventsEnd).Want(http.StatusOK)
		tr.Watch(cms+"?watch=1&sendInitialEvents=true", Events(1)).Want(http.StatusUnprocessableEntity)
		// The legacy initial state: resourceVersion "" or "0".
		tr.Watch(cms+"?watch=1", Events(3)).Want(http.StatusOK)
	}},
	{"expired-after-compaction", func(tr *T) {
		e1 := tr.Post(events, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e1"},"involvedObject":{"kind":"ConfigMap","name":"x","namespace":"{ns}"},"reason":"Tested","message":"one","type":"Normal"}`).Want(http.StatusCreated)
		tr.Post(events, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e2"},"involvedObject":{"kind":"ConfigMap","name":"x","namespace":"{ns}"},"reason":"Tested","message":"two","type":"Warning"}`).Want(http.StatusCreated)
		c := tr.Post(cms, configMap("a", "")).Want(http.StatusCreated)
		tr.Post(cms, configMap("b", "")).Want(http.StatusCreated)
		tr.Get(events + "?fieldSelector=type%3DWarning").Want(http.StatusOK)
		tr.Compact()
		tr.Watch(events+"?watch=1&resourceVersion="+e1.RV(), Events(1)).Want(http.StatusOK)
		tr.Get(events + "?resourceVersion=" + e1.RV() + "&resourceVersionMatch=Exact").Want(http.StatusGone)
		// Not asked of configmaps: kube-apiserver serves their exact-revision
		// lists from its watch cache, whose window does not follow etcd's
		// compaction (so whether one gets 410 depends on the cache's size).
		// Not older than an old revision: served at the current one.
		tr.Get(cms + "?resourceVersion=" + c.RV() + "&resourceVersionMatch=NotOlderThan").Want(http.StatusOK)
	}},
	{"pod-deletion", func(tr *T) {
		// A pod no node runs: marked (deletionTimestamp, grace 0,
		// generation + 1), then deleted: MODIFIED, then DELETED.
		c := tr.Post(pods, podBody).Want(http.StatusCreated)
		tr.Delete(pods+"/p", "").Want(http.StatusOK)
		tr.Watch(pods+"?watch=1&resourceVersion="+c.RV(), Events(2)).Want(http.StatusOK)
		// A pod bound to a node waits its grace period (its
		// terminationGracePeriodSeconds), or a deletion with a shorter one.
		b := tr.Post(pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bound"},"spec":{"nodeName":"node-0","terminationGracePeriodSeconds":20,"containers":[{"name":"c","image":"nginx:1.27"}]}}`).Want(http.StatusCreated)
		tr.Delete(pods+"/bound", "").Want(http.StatusOK)
		tr.Delete(pods+"/bound", `{"apiVersion":"v1","kind":"DeleteOptions","gracePeriodSeconds":30}`).Want(http.StatusOK)
		tr.Get(pods + "/bound").Want(http.StatusOK)
		tr.Delete(pods+"/bound?gracePeriodSeconds=0", "").Want(http.StatusOK)
		tr.Get(pods + "/bound").Want(http.StatusNotFound)
		tr.Watch(pods+"?watch=1&fieldSelector=metadata.name%3Dbound&resourceVersion="+b.RV(), Events(2)).Want(http.StatusOK)
	}},
	{"propagation-policies", func(tr *T) {
		// Foreground and orphan deletions add the garbage collector's
		// finalizer (kube-apiserver answers 200, not 202).
		tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","finalizers":["example.com/keep"]}}`).Want(http.StatusCreated)
		tr.Delete(cms+"/held", `{"apiVersion":"v1","kind":"DeleteOptions","propagationPolicy":"Foreground"}`).Want(http.StatusOK)
		tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"orphaned","finalizers":["example.com/keep"]}}`).Want(http.StatusCreated)
		tr.Delete(cms+"/orphaned?propagationPolicy=Orphan", "").Want(http.StatusOK)
		tr.Post(cms, configMap("background", "")).Want(http.StatusCreated)
		tr.Delete(cms+"/background?propagationPolicy=Background", "").Want(http.StatusOK)
	}},
	{"namespace-crud", func(tr *T) {
		tr.Post("/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"{ns}-x","labels":{"team":"a"}}}`).Want(http.StatusCreated)
		tr.Get("/api/v1/namespaces/{ns}-x").Want(http.StatusOK)
		tr.Patch("/api/v1/namespaces/{ns}-x", "merge", `{"metadata":{"labels":{"team":"b"}}}`).Want(http.StatusOK)
		tr.Get("/api/v1/namespaces?labelSelector=team%3Db%2Ckubernetes.io%2Fmetadata.name%3D{ns}-x").Want(http.StatusOK)
		tr.Post("/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"{ns}-x"}}`).Want(http.StatusConflict)
		tr.Post("/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"Not.A.Label"}}`).Want(http.StatusUnprocessableEntity)
		tr.Get("/api/v1/namespaces/{ns}-missing").Want(http.StatusNotFound)
	}},
	{"other-builtins", func(tr *T) {
		tr.Post("/api/v1/namespaces/{ns}/serviceaccounts", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa"},"automountServiceAccountToken":false}`).Want(http.StatusCreated)
		tr.Delete("/api/v1/namespaces/{ns}/serviceaccounts/sa", "").Want(http.StatusOK)
		tr.Post("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases", `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"holderIdentity":"me","leaseDurationSeconds":15,"renewTime":"2026-01-02T03:04:05.123456Z"}}`).Want(http.StatusCreated)
		// Leases take no unconditional update.
		tr.Put("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/l", `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"holderIdentity":"you","leaseDurationSeconds":15,"leaseTransitions":1}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/l", "merge", `{"spec":{"holderIdentity":"you","leaseTransitions":1}}`).Want(http.StatusOK)
		tr.Delete("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/l", "").Want(http.StatusOK)
		tr.Post("/apis/apps/v1/namespaces/{ns}/replicasets", `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"rs"},"spec":{"selector":{"matchLabels":{"app":"rs"}},"template":{"metadata":{"labels":{"app":"rs"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`).Want(http.StatusCreated)
		tr.Patch("/apis/apps/v1/namespaces/{ns}/replicasets/rs/scale", "merge", `{"spec":{"replicas":4}}`).Want(http.StatusOK)
		tr.Get("/apis/apps/v1/namespaces/{ns}/replicasets/rs").Want(http.StatusOK)
		tr.Delete("/apis/apps/v1/namespaces/{ns}/replicasets/rs", "").Want(http.StatusOK)
		tr.Post("/apis/events.k8s.io/v1/namespaces/{ns}/events", `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"ev"},"eventTime":"2026-01-02T03:04:05.000000Z","reportingController":"example.com/c","reportingInstance":"i","action":"Test","reason":"Tested","type":"Normal","note":"hello","regarding":{"kind":"Pod","name":"p","namespace":"{ns}"}}`).Want(http.StatusCreated)
		tr.Get("/api/v1/namespaces/{ns}/events/ev").Want(http.StatusOK)
		tr.Get("/apis/events.k8s.io/v1/namespaces/{ns}/events?fieldSelector=regarding.name%3Dp").Want(http.StatusOK)
	}},
	{"collections-and-dry-runs", func(tr *T) {
		for _, n := range []string{"a", "b", "c"} {
			tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+n+`","labels":{"del":"`+map[string]string{"a": "yes", "b": "yes", "c": "no"}[n]+`"}}}`).Want(http.StatusCreated)
		}
		tr.Put(cms+"/a?dryRun=All", configMap("a", `"data":{"dry":"run"}`)).Want(http.StatusOK)
		tr.Patch(cms+"/a?dryRun=All", "merge", `{"data":{"dry":"patch"}}`).Want(http.StatusOK)
		tr.Get(cms + "/a").Want(http.StatusOK)
		tr.Delete(cms+"?labelSelector=del%3Dyes", "").Want(http.StatusOK)
		tr.Get(cms).Want(http.StatusOK)
		tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"lbl","labels":{"bad key!":"x"}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"imm"},"immutable":true,"data":{"k":"v"}}`).Want(http.StatusCreated)
		tr.Patch(cms+"/imm", "merge", `{"data":{"k":"w"}}`).Want(http.StatusUnprocessableEntity)
	}},
	{"customresource-definition", func(tr *T) {
		tr.Get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.{group}").Want(http.StatusOK)
		tr.Get("/apis/{group}/v1").Want(http.StatusOK)
		tr.Post(gadgets+"?dryRun=All", gadget("dry", `{"color":"red"}`)).Want(http.StatusCreated)
		tr.Post(gadgets, `{"apiVersion":"{group}/v1","kind":"Gadget","metadata":{"name":"typed"},"spec":{"tags":["x",1]}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(gadgets, gadget("plain", `{}`)).Want(http.StatusCreated)
		// Custom resources take no unconditional update.
		tr.Put(gadgets+"/plain", gadget("plain", `{"size":2}`)).Want(http.StatusUnprocessableEntity)
		tr.Post(gadgets, `{"apiVersion":"{group}/v1","kind":"Gadget","metadata":{"generateName":"g-"},"spec":{"tags":["x"]}}`).Want(http.StatusCreated)
	}},
}
