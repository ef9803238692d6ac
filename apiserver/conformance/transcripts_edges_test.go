package conformance

import (
	"net/http"
	"strings"
)

// edgeTranscripts: the variants of watches and lists, tables, the errors of
// selectors, patches and bodies, content types, access reviews, query
// parameters, the validation of particular kinds, subresources.
var edgeTranscripts = []transcript{
	{"watch-variants", func(tr *T) {
		a := tr.Post(cms, configMap("a", `"data":{"v":"1"}`)).Want(http.StatusCreated)
		tr.Post(cms, configMap("b", "")).Want(http.StatusCreated)
		last := tr.Patch(cms+"/a", "merge", `{"data":{"v":"2"}}`).Want(http.StatusOK)
		// Watch-list from a revision: the state at (or after) it, then the
		// end bookmark. It is asked from the last write's revision: from an
		// older one kube-apiserver answers with whatever its watch cache
		// holds at that moment (anything not older than the revision asked
		// for), which may be a write behind — a race, not a difference.
		tr.Watch(cms+"?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion="+last.RV(), UntilInitialEventsEnd).Want(http.StatusOK)
		// sendInitialEvents=false: a plain watch from the revision.
		tr.Watch(cms+"?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&resourceVersion="+a.RV(), Events(2)).Want(http.StatusOK)
		// The legacy path form and a watch of one object by name.
		tr.Watch("/api/v1/watch/namespaces/{ns}/configmaps?resourceVersion="+a.RV(), Events(2)).Want(http.StatusOK)
		tr.Watch("/api/v1/watch/namespaces/{ns}/configmaps/a?resourceVersion="+a.RV(), Events(1)).Want(http.StatusOK)
		tr.Watch(cms+"?watch=1&fieldSelector=metadata.name%3Da&resourceVersion="+a.RV(), Events(1)).Want(http.StatusOK)
		tr.Watch(cms+"?watch=1&resourceVersion="+a.RV()+"&labelSelector=a%20in%20(", Events(1)).Want(http.StatusBadRequest)
		tr.Watch(cms+"/a/status?watch=1", Events(1)).Want(http.StatusNotFound)
		// A watch that times out ends its stream.
		tr.Watch(cms+"?watch=1&timeoutSeconds=1&resourceVersion="+a.RV(), Events(5)).Want(http.StatusOK)
	}},
	{"list-variants", func(tr *T) {
		for _, n := range []string{"a", "b", "c", "d"} {
			tr.Post(cms, configMap(n, "")).Want(http.StatusCreated)
		}
		// resourceVersion 0 is served from kube-apiserver's watch cache,
		// which ignores the limit; events have none and are paged. (The
		// consistent list first makes the cache hold every write: a list
		// at "0" may otherwise be served from a cache a write behind.)
		tr.Get(cms).Want(http.StatusOK)
		tr.Get(cms + "?resourceVersion=0&limit=2").Want(http.StatusOK)
		for _, n := range []string{"e1", "e2", "e3"} {
			tr.Post(events, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"`+n+`"},"involvedObject":{"kind":"ConfigMap","name":"a","namespace":"{ns}"},"reason":"Tested","type":"Normal"}`).Want(http.StatusCreated)
		}
		tr.Get(events + "?resourceVersion=0&limit=2").Want(http.StatusOK)
		tr.Get(cms + "?limit=0").Want(http.StatusOK)
		tr.Get(cms + "?limit=-1").Want(http.StatusOK)
		tr.Get(cms + "?limit=3&fieldSelector=metadata.name!%3Db").Want(http.StatusOK)
		tr.Get("/api/v1/configmaps?labelSelector=none-such").Want(http.StatusOK)
		tr.Get(cms + "?resourceVersionMatch=NotOlderThan&resourceVersion=0").Want(http.StatusOK)
		tr.Get(cms + "?resourceVersionMatch=Exact&resourceVersion=0").Want(http.StatusUnprocessableEntity)
		tr.Get(cms + "?limit=1&continue=abc&resourceVersionMatch=Exact&resourceVersion=5").Want(http.StatusUnprocessableEntity)
		tr.Get(cms + "?sendInitialEvents=true").Want(http.StatusUnprocessableEntity)
		tr.Get(gadgets + "?limit=1").Want(http.StatusOK)
	}},
	{"status-subresource-metadata", func(tr *T) {
		// What a write to /status keeps of metadata and spec, per kind.
		tr.Post(gadgets, gadget("g", `{"color":"red"}`)).Want(http.StatusCreated)
		tr.Patch(gadgets+"/g/status", "merge", `{"metadata":{"labels":{"l":"status"},"annotations":{"a":"status"},"finalizers":["example.com/f"]},"spec":{"color":"blue"},"status":{"ready":true}}`).Want(http.StatusOK)
		tr.Patch(gadgets+"/g/status", "json", `[{"op":"add","path":"/status/observedGeneration","value":1}]`).Want(http.StatusOK)
		tr.Patch(gadgets+"/g", "merge", `{"metadata":{"finalizers":null}}`).Want(http.StatusOK)
		tr.Post(deploys, deployBody).Want(http.StatusCreated)
		tr.Patch(deploys+"/d/status", "merge", `{"metadata":{"labels":{"l":"status"},"annotations":{"a":"status"}},"status":{"replicas":1}}`).Want(http.StatusOK)
		tr.Post(pods, podBody).Want(http.StatusCreated)
		tr.Patch(pods+"/p/status", "merge", `{"metadata":{"labels":{"l":"status"}},"spec":{"nodeName":"n"},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`).Want(http.StatusOK)
		tr.Post(services, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"lb"},"spec":{"type":"ClusterIP","ports":[{"port":80}]}}`).Want(http.StatusCreated)
		// Status is validated too: load balancer ingress only on load
		// balancers, Terminating only while deleting.
		tr.Patch(services+"/lb/status", "merge", `{"status":{"loadBalancer":{"ingress":[{"ip":"1.2.3.4"}]}}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch("/api/v1/namespaces/{ns}/status", "merge", `{"metadata":{"labels":{"l":"status"}},"status":{"phase":"Terminating"}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch("/api/v1/namespaces/{ns}/status", "merge", `{"metadata":{"labels":{"l":"status"}},"status":{"phase":"Active"}}`).Want(http.StatusOK)
		tr.Get("/api/v1/namespaces/{ns}").Want(http.StatusOK)
	}},
	{"validation-of-builtins", func(tr *T) {
		tr.Post(deploys, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"neg"},"spec":{"replicas":-1,"selector":{"matchLabels":{"app":"x"}},"template":{"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"lv","labels":{"k":"not a valid value!"}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"own","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"x","uid":""}]}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"dup"},"spec":{"containers":[{"name":"c","image":"i"},{"name":"c","image":"j"}]}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(services, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"noports"},"spec":{"selector":{"a":"b"}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(services, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"badport"},"spec":{"ports":[{"port":70000}]}}`).Want(http.StatusUnprocessableEntity)
	}},
	{"tables", func(tr *T) {
		tr.Post(cms, configMap("a", `"data":{"k":"v"}`)).Want(http.StatusCreated)
		tr.Post(pods, podBody).Want(http.StatusCreated)
		tr.Post(gadgets, gadget("g", `{"color":"red"}`)).Want(http.StatusCreated)
		tr.GetTable(cms).Want(http.StatusOK)
		tr.GetTable(cms + "/a").Want(http.StatusOK)
		tr.GetTable(pods).Want(http.StatusOK)
		tr.GetTable(gadgets).Want(http.StatusOK)
		tr.GetTable(cms + "?includeObject=Object").Want(http.StatusOK)
		tr.GetTable(cms + "?includeObject=None").Want(http.StatusOK)
		tr.Post(deploys, deployBody).Want(http.StatusCreated)
		tr.GetTable(deploys).Want(http.StatusOK)
		tr.Post("/apis/apps/v1/namespaces/{ns}/replicasets", `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"rs"},"spec":{"selector":{"matchLabels":{"app":"rs"}},"template":{"metadata":{"labels":{"app":"rs"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`).Want(http.StatusCreated)
		tr.GetTable("/apis/apps/v1/namespaces/{ns}/replicasets").Want(http.StatusOK)
		tr.Post(services, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"selector":{"app":"web","tier":"a"},"ports":[{"port":80}]}}`).Want(http.StatusCreated)
		tr.GetTable(services).Want(http.StatusOK)
		tr.Post(secrets, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"k":"dg=="}}`).Want(http.StatusCreated)
		tr.GetTable(secrets).Want(http.StatusOK)
		tr.GetTable("/api/v1/namespaces/{ns}").Want(http.StatusOK)
		tr.Post(events, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e"},"involvedObject":{"kind":"Pod","name":"p","namespace":"{ns}","fieldPath":"spec.containers{c}"},"reason":"Pulled","message":" pulled ","type":"Normal","source":{"component":"kubelet","host":"node-0"},"count":3,"firstTimestamp":"2026-01-02T03:04:05Z","lastTimestamp":"2026-01-02T03:05:05Z"}`).Want(http.StatusCreated)
		// Only Normal events: kube-apiserver's own IP allocator repair loop
		// may record a Warning about the Service above in the namespace.
		tr.GetTable(events + "?fieldSelector=type%3DNormal").Want(http.StatusOK)
		tr.GetTable("/apis/events.k8s.io/v1/namespaces/{ns}/events?fieldSelector=type%3DNormal").Want(http.StatusOK)
	}},
	{"selector-syntax-errors", func(tr *T) {
		// A field selector that does not parse: the parser's message as is.
		tr.Get(cms + "?fieldSelector=metadata.name").Want(http.StatusBadRequest)
		tr.Get(pods + "?fieldSelector=spec.nodeName%3D%3D%3Dx").Want(http.StatusBadRequest)
		tr.Get(gadgets + "?fieldSelector=spec.color").Want(http.StatusBadRequest)
		tr.Watch(cms+"?watch=1&fieldSelector=metadata.name", Events(1)).Want(http.StatusBadRequest)
		tr.Delete(cms+"?fieldSelector=metadata.name", "").Want(http.StatusBadRequest)
		tr.Get(cms + "?labelSelector=a%3Db%3Dc").Want(http.StatusBadRequest)
		tr.Get(cms + "?labelSelector=!!a").Want(http.StatusBadRequest)
	}},
	{"strategic-patch-errors", func(tr *T) {
		tr.Post(cms, configMap("p", `"data":{"a":"1"}`)).Want(http.StatusCreated)
		// Errors of the strategic merge itself that kube-apiserver does not
		// classify: a 500 with the error's text, no reason.
		tr.Patch(cms+"/p", "strategic", `{"$patch":"bogus"}`).Want(http.StatusInternalServerError)
		tr.Patch(cms+"/p", "strategic", `{"$setElementOrder/data":"x"}`).Want(http.StatusInternalServerError)
		tr.Post(deploys, deployBody).Want(http.StatusCreated)
		tr.Patch(deploys+"/d", "strategic", `{"spec":{"template":{"spec":{"containers":[{"$patch":"delete"}]}}}}`).Want(http.StatusInternalServerError)
		tr.Patch(deploys+"/d", "strategic", `{"spec":{"template":{"spec":{"containers":{"name":"c"}}}}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(deploys+"/d", "strategic", `{"spec":{"$retainKeys":"x"}}`).Want(http.StatusBadRequest)
		tr.Get(deploys + "/d").Want(http.StatusOK)
	}},
	{"warnings-on-failed-writes", func(tr *T) {
		// Warnings found before a write fails are sent with its error.
		tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"},"bogus":1}`).Want(http.StatusUnprocessableEntity)
		tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"bogus":1,"data":{"k":"v"}}`).Want(http.StatusCreated)
		tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"bogus":1}`).Want(http.StatusConflict)
		tr.Put(cms+"/a", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"1"},"bogus":1}`).Want(http.StatusConflict)
		tr.Put(cms+"/missing", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"missing"},"bogus":1}`).Want(http.StatusNotFound)
		tr.Post(gadgets, gadget("big", `{"size":500,"bogus":1}`)).Want(http.StatusUnprocessableEntity)
		tr.Post(gadgets, `{"apiVersion":"{group}/v1","kind":"Gadget","metadata":{"name":"Bad_Name"},"spec":{"bogus":1}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(gadgets+"/missing", "merge", `{"spec":{"bogus":1}}`).Want(http.StatusNotFound)
		tr.Post(gadgets, gadget("g", `{}`)).Want(http.StatusCreated)
		tr.Patch(gadgets+"/g", "merge", `{"spec":{"bogus":1,"size":-1}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(cms+"/a", "merge", `{"bogus":1,"metadata":{"labels":{"bad key!":"x"}}}`).Want(http.StatusUnprocessableEntity)
	}},
	{"customresource-decode-errors", func(tr *T) {
		// Another version or group than the URL's: 400, before validation.
		tr.Post(gadgets, `{"apiVersion":"{group}/v2","kind":"Gadget","metadata":{"name":"v2"},"spec":{}}`).Want(http.StatusBadRequest)
		tr.Post(gadgets, `{"apiVersion":"other.example.com/v1","kind":"Other","metadata":{"name":"o"},"spec":{}}`).Want(http.StatusBadRequest)
		tr.Post(gadgets, `{"apiVersion":"v1","kind":"Gadget","metadata":{"name":"core"},"spec":{}}`).Want(http.StatusBadRequest)
		tr.Post(gadgets, `{"kind":"Gadget","metadata":{"name":"noversion"},"spec":{}}`).Want(http.StatusBadRequest)
		tr.Post(gadgets, `{"apiVersion":"{group}/v1","metadata":{"name":"nokind"},"spec":{}}`).Want(http.StatusBadRequest)
		// Metadata that does not decode into ObjectMeta.
		tr.Post(gadgets, `{"apiVersion":"{group}/v1","kind":"Gadget","metadata":"bad","spec":{}}`).Want(http.StatusBadRequest)
		tr.Post(gadgets, `{"apiVersion":"{group}/v1","kind":"Gadget","metadata":{"name":"l","labels":"x"},"spec":{}}`).Want(http.StatusBadRequest)
		tr.Post(gadgets, `{"apiVersion":"{group}/v1","kind":"Gadget","metadata":{"name":"l","labels":{"a":1}},"spec":{}}`).Want(http.StatusBadRequest)
		tr.Post(gadgets, `{"apiVersion":"{group}/v1","kind":"Gadget","metadata":{"name":"l","resourceVersion":5},"spec":{}}`).Want(http.StatusBadRequest)
		tr.Post(gadgets, `{"apiVersion":"other.example.com/v1","kind":"Other","metadata":"bad"}`).Want(http.StatusBadRequest)
		// The same on an update.
		tr.Post(gadgets, gadget("g", `{"color":"red"}`)).Want(http.StatusCreated)
		tr.Put(gadgets+"/g", `{"apiVersion":"{group}/v2","kind":"Gadget","metadata":{"name":"g"},"spec":{}}`).Want(http.StatusBadRequest)
		tr.Put(gadgets+"/g", `{"apiVersion":"{group}/v1","kind":"Gadget","metadata":{"name":"g","annotations":[]},"spec":{}}`).Want(http.StatusBadRequest)
		// A patch that makes the object another version or kind.
		tr.Patch(gadgets+"/g", "merge", `{"apiVersion":"{group}/v2"}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(gadgets+"/g", "merge", `{"kind":"Other"}`).Want(http.StatusUnprocessableEntity)
		tr.Get(gadgets + "/g").Want(http.StatusOK)
	}},
	{"request-content-types", func(tr *T) {
		yamlCM := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yml\n  labels: {a: \"1\"}\ndata:\n  k: v\n  n: \"2\"\n"
		tr.Do(http.MethodPost, cms, "application/yaml", yamlCM).Want(http.StatusCreated)
		tr.Do(http.MethodPut, cms+"/yml", "application/yaml", strings.Replace(yamlCM, "k: v", "k: w", 1)).Want(http.StatusOK)
		tr.Do(http.MethodPost, cms, "application/yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\n  labels: [\n").Want(http.StatusBadRequest)
		tr.Do(http.MethodPost, cms, "application/yaml", "- a\n- b\n").Want(http.StatusBadRequest)
		// YAML 1.1: y is true.
		tr.Do(http.MethodPost, cms, "application/yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n").Want(http.StatusBadRequest)
		tr.Do(http.MethodPost, cms, "application/yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: num\ndata:\n  k: 1\n").Want(http.StatusBadRequest)
		tr.Do(http.MethodPost, cms, "application/yaml; charset=utf-8", configMap("json-as-yaml", "")).Want(http.StatusCreated)
		tr.Do(http.MethodPost, cms, "application/json; charset=utf-8", configMap("charset", "")).Want(http.StatusCreated)
		tr.Do(http.MethodPost, cms, "", configMap("none", "")).Want(http.StatusCreated)
		tr.Do(http.MethodPost, cms, "text/plain", configMap("text", "")).Want(http.StatusUnsupportedMediaType)
		tr.Do(http.MethodPost, cms, "application/x-yaml", configMap("xyaml", "")).Want(http.StatusUnsupportedMediaType)
		tr.Do(http.MethodPost, cms, "not a media type;;", configMap("garbage", "")).Want(http.StatusUnsupportedMediaType)
		tr.Do(http.MethodPut, cms+"/yml", "text/plain", configMap("yml", "")).Want(http.StatusUnsupportedMediaType)
		tr.Do(http.MethodPost, gadgets, "application/yaml", "apiVersion: {group}/v1\nkind: Gadget\nmetadata:\n  name: g\nspec:\n  color: red\n").Want(http.StatusCreated)
		tr.Do(http.MethodPost, gadgets, "text/plain", gadget("t", `{}`)).Want(http.StatusUnsupportedMediaType)
		tr.Do(http.MethodDelete, cms+"/none", "application/yaml", "kind: DeleteOptions\napiVersion: v1\npropagationPolicy: Background\n").Want(http.StatusOK)
		tr.Do(http.MethodDelete, cms+"/charset", "text/plain", `{"kind":"DeleteOptions","apiVersion":"v1"}`).Want(http.StatusUnsupportedMediaType)
		tr.Get(cms).Want(http.StatusOK)
	}},
	{"access-reviews", func(tr *T) {
		// kubectl auth can-i and kubectl auth whoami.
		const ssar = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
		tr.Post(ssar, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"namespace":"{ns}","verb":"create","group":"apps","resource":"deployments"}}}`).Want(http.StatusCreated)
		tr.Post(ssar, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"nonResourceAttributes":{"path":"/healthz","verb":"get"}},"status":{"allowed":false,"reason":"ignored"}}`).Want(http.StatusCreated)
		tr.Post(ssar, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(ssar, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get"},"nonResourceAttributes":{"path":"/x","verb":"get"}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(ssar, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":`).Want(http.StatusBadRequest)
		tr.Get(ssar).Want(http.StatusMethodNotAllowed)
		tr.Delete(ssar, "").Want(http.StatusMethodNotAllowed)
		tr.Post("/apis/authentication.k8s.io/v1/selfsubjectreviews", `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`).Want(http.StatusCreated)
	}},
	{"deployment-generation-annotations", func(tr *T) {
		// kube-apiserver's deployment strategy moves the generation on a
		// change of annotations too (kubectl annotate, rollout history), not
		// through /status, not on labels.
		tr.Post(deploys, deployBody).Want(http.StatusCreated)
		tr.Patch(deploys+"/d", "merge", `{"metadata":{"annotations":{"a":"1"}}}`).Want(http.StatusOK)
		tr.Patch(deploys+"/d", "merge", `{"metadata":{"annotations":{"a":"1"},"labels":{"l":"1"}}}`).Want(http.StatusOK)
		tr.Patch(deploys+"/d", "merge", `{"metadata":{"annotations":{"a":"2"}}}`).Want(http.StatusOK)
		tr.Patch(deploys+"/d/status", "merge", `{"metadata":{"annotations":{"a":"3"}},"status":{"replicas":1}}`).Want(http.StatusOK)
		tr.Patch(deploys+"/d", "merge", `{"metadata":{"annotations":null}}`).Want(http.StatusOK)
		tr.Patch(deploys+"/d", "json", `[{"op":"add","path":"/metadata/annotations","value":{}}]`).Want(http.StatusOK)
		tr.Post("/apis/apps/v1/namespaces/{ns}/replicasets", `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"rs"},"spec":{"selector":{"matchLabels":{"app":"rs"}},"template":{"metadata":{"labels":{"app":"rs"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`).Want(http.StatusCreated)
		tr.Patch("/apis/apps/v1/namespaces/{ns}/replicasets/rs", "merge", `{"metadata":{"annotations":{"a":"1"}}}`).Want(http.StatusOK)
		tr.Post(gadgets, gadget("g", `{}`)).Want(http.StatusCreated)
		tr.Patch(gadgets+"/g", "merge", `{"metadata":{"annotations":{"a":"1"}}}`).Want(http.StatusOK)
	}},
	{"all-namespaces-paths", func(tr *T) {
		// The all-namespaces path of a namespaced kind reads (list, watch)
		// but takes no write: no create, no delete of a collection.
		tr.Post(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"keep","labels":{"wipe":"{ns}"}}}`).Want(http.StatusCreated)
		tr.Get("/api/v1/configmaps?labelSelector=wipe%3D{ns}").Want(http.StatusOK)
		tr.Delete("/api/v1/configmaps?labelSelector=wipe%3D{ns}", "").Want(http.StatusMethodNotAllowed)
		tr.Delete("/apis/apps/v1/deployments?labelSelector=wipe%3D{ns}", "").Want(http.StatusMethodNotAllowed)
		tr.Post("/api/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"{ns}"}}`).Want(http.StatusMethodNotAllowed)
		// Custom resources: a plain 404 for anything but a list or watch.
		tr.Post(gadgets, `{"apiVersion":"{group}/v1","kind":"Gadget","metadata":{"name":"keep","labels":{"wipe":"{ns}"}}}`).Want(http.StatusCreated)
		tr.Get("/apis/{group}/v1/gadgets?labelSelector=wipe%3D{ns}").Want(http.StatusOK)
		tr.Delete("/apis/{group}/v1/gadgets?labelSelector=wipe%3D{ns}", "").Want(http.StatusNotFound)
		tr.Post("/apis/{group}/v1/gadgets", `{"apiVersion":"{group}/v1","kind":"Gadget","metadata":{"name":"x","namespace":"{ns}"}}`).Want(http.StatusNotFound)
		tr.Get("/apis/{group}/v1/gadgets/keep").Want(http.StatusNotFound)
		tr.Patch("/apis/{group}/v1/gadgets/keep", "merge", `{}`).Want(http.StatusNotFound)
		tr.Get(gadgets + "/keep").Want(http.StatusOK)
		tr.Patch("/api/v1/configmaps", "merge", `{}`).Want(http.StatusMethodNotAllowed)
		tr.Put("/api/v1/configmaps", `{}`).Want(http.StatusMethodNotAllowed)
		tr.Get("/api/v1/configmaps/keep").Want(http.StatusNotFound)
		tr.Delete("/api/v1/configmaps/keep", "").Want(http.StatusNotFound)
		tr.Get(cms + "/keep").Want(http.StatusOK)
	}},
	{"query-parameter-parsing", func(tr *T) {
		// Booleans as kube-apiserver converts them: absent, 0 and false are
		// false, anything else (yes, no, empty) true.
		tr.Post(cms, configMap("a", "")).Want(http.StatusCreated)
		tr.Watch(cms+"?watch=yes&timeoutSeconds=5", Events(1)).Want(http.StatusOK)
		tr.Watch(cms+"?watch=no&timeoutSeconds=5", Events(1)).Want(http.StatusOK)
		tr.Watch(cms+"?watch=&timeoutSeconds=5", Events(1)).Want(http.StatusOK)
		tr.Get(cms + "?watch=FALSE").Want(http.StatusOK)
		tr.Get(cms + "?watch=0").Want(http.StatusOK)
		tr.Watch(cms+"?watch=1&sendInitialEvents=maybe", Events(1)).Want(http.StatusUnprocessableEntity)
		tr.Watch(cms+"?watch=1&sendInitialEvents=", Events(1)).Want(http.StatusUnprocessableEntity)
		tr.Get(cms + "?sendInitialEvents=0").Want(http.StatusUnprocessableEntity)
		// Numbers: strconv's messages.
		tr.Watch(cms+"?watch=1&timeoutSeconds=abc", Events(1)).Want(http.StatusBadRequest)
		tr.Watch(cms+"?watch=1&timeoutSeconds=", Events(1)).Want(http.StatusBadRequest)
		tr.Watch(cms+"?watch=1&timeoutSeconds=99999999999999999999", Events(1)).Want(http.StatusBadRequest)
		tr.Get(cms + "?limit=99999999999999999999").Want(http.StatusBadRequest)
	}},
	{"legacy-watch-bookmarks", func(tr *T) {
		// A watch from resourceVersion "" or "0" (the current state as ADDED
		// events, then changes) that allows bookmarks ends its initial
		// events with the initial-events-end bookmark, as a watch-list.
		tr.Post(cms, configMap("a", "")).Want(http.StatusCreated)
		tr.Post(cms, configMap("b", "")).Want(http.StatusCreated)
		tr.Watch(cms+"?watch=1&allowWatchBookmarks=true", UntilInitialEventsEnd).Want(http.StatusOK)
		tr.Watch(cms+"?watch=1&allowWatchBookmarks=true&resourceVersion=0", UntilInitialEventsEnd).Want(http.StatusOK)
		tr.Watch(cms+"?watch=1&allowWatchBookmarks=true&labelSelector=none", UntilInitialEventsEnd).Want(http.StatusOK)
		tr.Post(gadgets, gadget("g", `{}`)).Want(http.StatusCreated)
		tr.Watch(gadgets+"?watch=1&allowWatchBookmarks=true", UntilInitialEventsEnd).Want(http.StatusOK)
		// Without bookmarks: the state, then changes.
		tr.Watch(cms+"?watch=1&allowWatchBookmarks=false&timeoutSeconds=2", Events(3)).Want(http.StatusOK)
	}},
	{"event-validation", func(tr *T) {
		ev := func(name, rest string) string {
			return `{"apiVersion":"v1","kind":"Event","metadata":{"name":"` + name + `"},"involvedObject":{"kind":"Pod","name":"p"` + rest + `}`
		}
		// Without an eventTime: the involved object's namespace is the event's.
		tr.Post(events, ev("no-ns", `},"reason":"R"`)).Want(http.StatusUnprocessableEntity)
		tr.Post(events, ev("other-ns", `,"namespace":"other"},"reason":"R"`)).Want(http.StatusUnprocessableEntity)
		tr.Post(events, ev("ok", `,"namespace":"{ns}"},"type":"Bogus"`)).Want(http.StatusCreated)
		tr.Patch(events+"/ok", "merge", `{"involvedObject":{"namespace":"other"}}`).Want(http.StatusUnprocessableEntity)
		// With one: the reporting fields, an action and a reason.
		tr.Post(events, ev("new", `,"namespace":"{ns}"},"eventTime":"2026-01-02T03:04:05.000000Z"`)).Want(http.StatusUnprocessableEntity)
		tr.Post(events, ev("new-no-ns", `},"eventTime":"2026-01-02T03:04:05.000000Z","reportingComponent":"Bad Name","reportingInstance":"i","action":"A","reason":"R"`)).Want(http.StatusUnprocessableEntity)
		long := strings.Repeat("x", 130)
		tr.Post(events, ev("long", `,"namespace":"{ns}"},"eventTime":"2026-01-02T03:04:05.000000Z","reportingComponent":"example.com/c","reportingInstance":"`+long+`","action":"`+long+`","reason":"`+long+`","message":"`+strings.Repeat("m", 1030)+`"`)).Want(http.StatusUnprocessableEntity)
		tr.Post(events, ev("new-ok", `,"namespace":"{ns}"},"eventTime":"2026-01-02T03:04:05.000000Z","reportingComponent":"example.com/c","reportingInstance":"i","action":"A","reason":"R"`)).Want(http.StatusCreated)
	}},
	{"lease-validation", func(tr *T) {
		const leases = "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
		lease := func(name, spec string) string {
			return `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
		}
		tr.Post(leases, lease("neg", `{"leaseDurationSeconds":-5}`)).Want(http.StatusUnprocessableEntity)
		tr.Post(leases, lease("zero", `{"leaseDurationSeconds":0,"leaseTransitions":-1}`)).Want(http.StatusUnprocessableEntity)
		// Coordinated leader election is off: its fields are dropped.
		tr.Post(leases, lease("l", `{"holderIdentity":"a","leaseDurationSeconds":15,"leaseTransitions":0,"strategy":"OldestEmulationVersion","preferredHolder":"b"}`)).Want(http.StatusCreated)
		tr.Patch(leases+"/l", "merge", `{"spec":{"preferredHolder":"c"}}`).Want(http.StatusOK)
		tr.Patch(leases+"/l", "merge", `{"spec":{"leaseTransitions":-2}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(leases+"/l", "merge", `{"spec":{"leaseDurationSeconds":10,"leaseTransitions":1}}`).Want(http.StatusOK)
	}},
	{"scale-bodies", func(tr *T) {
		tr.Post(deploys, deployBody).Want(http.StatusCreated)
		tr.Put(deploys+"/d/scale", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":3}}`).Want(http.StatusBadRequest)
		tr.Put(deploys+"/d/scale", `{"apiVersion":"example.com/v1","kind":"Scale","metadata":{"name":"d"},"spec":{"replicas":3}}`).Want(http.StatusBadRequest)
		tr.Put(deploys+"/d/scale", `{"spec":{"replicas":"x"}}`).Want(http.StatusBadRequest)
		tr.Put(deploys+"/d/scale", `{"spec":{"replicas":2}}`).Want(http.StatusBadRequest)
		tr.Put(deploys+"/d/scale", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"d"},"spec":{"replicas":-1}}`).Want(http.StatusUnprocessableEntity)
		tr.Put(deploys+"/missing/scale", `{"spec":{"replicas":"x"}}`).Want(http.StatusBadRequest)
		tr.Put(deploys+"/missing/scale", `{"metadata":{"name":"missing"},"spec":{"replicas":1}}`).Want(http.StatusNotFound)
		tr.Put(deploys+"/d/scale", `{"metadata":{"name":"d"},"spec":{"replicas":2}}`).Want(http.StatusOK)
		tr.Get(deploys + "/d/scale").Want(http.StatusOK)
	}},
	{"pod-log-exec", func(tr *T) {
		// kubectl logs / exec / attach / port-forward of pods no kubelet
		// runs: the pod and container are checked, then no node answers.
		tr.Post(pods, podBody).Want(http.StatusCreated)
		tr.Post(pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"two"},"spec":{"containers":[{"name":"a","image":"i"},{"name":"b","image":"i"}]}}`).Want(http.StatusCreated)
		tr.Post(pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bound"},"spec":{"nodeName":"node-0","containers":[{"name":"a","image":"i"}]}}`).Want(http.StatusCreated)
		tr.Get(pods + "/p/log").Want(http.StatusNoContent)
		tr.Get(pods + "/p/log?container=c&tailLines=10&follow=true").Want(http.StatusNoContent)
		tr.Get(pods + "/p/log?container=zz").Want(http.StatusBadRequest)
		tr.Get(pods + "/p/log?tailLines=abc").Want(http.StatusBadRequest)
		tr.Get(pods + "/two/log").Want(http.StatusBadRequest)
		tr.Get(pods + "/two/log?container=b").Want(http.StatusNoContent)
		tr.Get(pods + "/bound/log").Want(http.StatusNotFound)
		tr.Get(pods + "/missing/log").Want(http.StatusNotFound)
		tr.Post(pods+"/p/exec?command=ls&stdout=true", "").Want(http.StatusBadRequest)
		tr.Post(pods+"/two/exec?command=ls&stdout=true", "").Want(http.StatusBadRequest)
		tr.Post(pods+"/p/exec?command=ls&container=zz", "").Want(http.StatusBadRequest)
		tr.Post(pods+"/bound/exec?command=ls&stdout=true", "").Want(http.StatusNotFound)
		tr.Get(pods + "/p/attach?stdout=true").Want(http.StatusBadRequest)
		tr.Post(pods+"/two/portforward?ports=80", "").Want(http.StatusBadRequest)
		tr.Get(cms + "/x/log").Want(http.StatusNotFound)
	}},
	{"pod-enum-validation", func(tr *T) {
		pod := func(name, spec, container string) string {
			return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":{` + spec + `"containers":[{"name":"c","image":"i"` + container + `}]}}`
		}
		tr.Post(pods, pod("rp", `"restartPolicy":"Sometimes",`, "")).Want(http.StatusUnprocessableEntity)
		tr.Post(pods, pod("dns", `"dnsPolicy":"Bogus",`, "")).Want(http.StatusUnprocessableEntity)
		tr.Post(pods, pod("pull", "", `,"imagePullPolicy":"Sometimes"`)).Want(http.StatusUnprocessableEntity)
		tr.Post(pods, pod("all", `"restartPolicy":"Sometimes","dnsPolicy":"Bogus",`, `,"imagePullPolicy":"Sometimes"`)).Want(http.StatusUnprocessableEntity)
		tr.Post(pods, pod("ok", `"restartPolicy":"OnFailure","dnsPolicy":"None","dnsConfig":{"nameservers":["1.1.1.1"]},`, `,"imagePullPolicy":"Never"`)).Want(http.StatusCreated)
	}},
	{"too-large-resource-version", func(tr *T) {
		// Events (read from etcd by kube-apiserver) answer at once; cached
		// kinds wait up to 3 s for the revision first, so they are not
		// asked here.
		tr.Post(events, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e"},"involvedObject":{"kind":"Pod","name":"p","namespace":"{ns}"},"reason":"Tested","type":"Normal"}`).Want(http.StatusCreated)
		tr.Get(events + "?resourceVersion=999999999999&resourceVersionMatch=NotOlderThan").Want(http.StatusGatewayTimeout)
		tr.Get(events + "?resourceVersion=999999999999&resourceVersionMatch=Exact").Want(http.StatusGatewayTimeout)
	}},
}
