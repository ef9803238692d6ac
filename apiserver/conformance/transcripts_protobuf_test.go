package conformance

import (
	"net/http"
	"net/url"
)

// Accept headers of the protobuf transcripts: protobuf alone; protobuf
// then JSON, as kube-controller-manager and client-go's protobuf clients
// ask; the metadata-only forms in protobuf, as client-go's metadata
// informers ask.
const (
	pbOnly     = protobufType
	pbThenJSON = protobufType + ",application/json"
	pbMeta     = protobufType + ";as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
	pbMetaList = protobufType + ";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)

// labelled lists only the transcript's objects labelled t=pb (a namespace
// of the real target may hold kube-controller-manager's ConfigMap).
const labelled = "labelSelector=t%3Dpb"

func labelledConfigMap(name, rest string) string {
	if rest != "" {
		rest = "," + rest
	}
	return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","labels":{"t":"pb"}}` + rest + `}`
}

// protobufTranscripts: answers in protobuf (and YAML), as content
// negotiation picks them from Accept: objects, pages of lists, watch
// streams, Status errors, the metadata-only forms, the forms protobuf has
// not (Table, custom resources) and what kube-apiserver answers then.
var protobufTranscripts = []transcript{
	{"protobuf-reads", func(tr *T) {
		tr.Post(cms, labelledConfigMap("a", `"data":{"k":"v"},"binaryData":{"b":"AAH/"}`)).Want(http.StatusCreated)
		tr.Post(cms, labelledConfigMap("b", `"data":{"k":"w"}`)).Want(http.StatusCreated)
		tr.Post(cms, labelledConfigMap("c", ``)).Want(http.StatusCreated)
		tr.GetAs(cms+"/a", pbOnly).Want(http.StatusOK)
		tr.GetAs(cms+"/a", pbThenJSON).Want(http.StatusOK)
		tr.GetAs(cms+"/a", "application/json;q=0.9,"+pbOnly).Want(http.StatusOK)
		tr.GetAs(cms+"/a", "*/*;q=0.5,"+pbOnly+";q=0.2").Want(http.StatusOK)
		tr.GetAs(cms+"/a", "application/yaml").Want(http.StatusOK)
		tr.GetAs(cms+"/a", "text/html,"+pbOnly).Want(http.StatusOK)
		// A list in pages.
		p1 := tr.GetAs(cms+"?"+labelled+"&limit=2", pbOnly).Want(http.StatusOK)
		tr.GetAs(cms+"?"+labelled+"&limit=2&continue="+url.QueryEscape(p1.Str("metadata.continue")), pbOnly).Want(http.StatusOK)
		tr.GetAs(cms+"?"+labelled+"&labelSelector=missing", pbOnly).Want(http.StatusOK)
		// Errors are Status in protobuf.
		tr.GetAs(cms+"/missing", pbThenJSON).Want(http.StatusNotFound)
		tr.GetAs(cms+"?"+labelled+"&resourceVersion=x", pbOnly).Want(http.StatusBadRequest)
		tr.GetAs("/api/v1/namespaces/{ns}/nothings", pbOnly).Want(http.StatusNotFound)
		// Nothing acceptable: 406.
		tr.GetAs(cms+"/a", "text/html").Want(http.StatusNotAcceptable)
		tr.GetAs(cms+"?"+labelled, "application/*").Want(http.StatusNotAcceptable)
		// A quality of 0 only sorts a type last (as kube-apiserver's goautoneg).
		tr.WatchAs(cms+"?watch=1&"+labelled, "text/html, "+pbOnly+";q=0", Events(1)).Want(http.StatusOK)
		tr.GetAs(gadgets+"?limit=1", "application/*").Want(http.StatusOK)
		tr.GetAs(cms+"/a", pbOnly+";stream=other").Want(http.StatusNotAcceptable)
		// Metadata only, in protobuf (v1beta1's list too).
		tr.GetAs(cms+"/a", pbMeta).Want(http.StatusOK)
		tr.GetAs(cms+"?"+labelled+"&limit=1", pbMetaList).Want(http.StatusOK)
		tr.GetAs(cms+"?"+labelled, protobufType+";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1").Want(http.StatusOK)
		tr.GetAs(cms+"/a", protobufType+";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1").Want(http.StatusNotAcceptable)
		// Tables have no protobuf form: the next clause, or 406.
		tr.GetAs(cms+"?"+labelled, protobufType+";as=Table;g=meta.k8s.io;v=v1,application/json;as=Table;g=meta.k8s.io;v=v1").Want(http.StatusOK)
		tr.GetAs(cms+"/a", protobufType+";as=Table;g=meta.k8s.io;v=v1,"+pbOnly).Want(http.StatusOK)
		tr.GetAs(cms+"/a", protobufType+";as=Table;g=meta.k8s.io;v=v1").Want(http.StatusNotAcceptable)
		tr.GetAs(cms+"/a", "application/yaml;as=Table;g=meta.k8s.io;v=v1").Want(http.StatusOK)
		// Discovery documents too.
		tr.GetAs("/apis/apps", pbThenJSON).Want(http.StatusOK)
		tr.GetAs("/apis/{group}", pbOnly).Want(http.StatusOK)
		tr.GetAs("/apis/{group}/v1", pbOnly).Want(http.StatusOK)
		tr.GetAs("/apis/{group}/v1", "application/yaml").Want(http.StatusOK)
		for _, p := range []string{"/api", "/api/v1", "/apis", "/apis/apps", "/apis/apps/v1", "/apis/{group}", "/apis/{group}/v1"} {
			tr.GetAs(p, "text/html").Want(http.StatusNotAcceptable)
		}
	}},
	{"protobuf-custom-resources", func(tr *T) {
		tr.Post(gadgets, gadget("g", `{"color":"red"}`)).Want(http.StatusCreated)
		// Custom resources have no protobuf form: 406 when nothing else
		// is acceptable, else the next type.
		tr.GetAs(gadgets+"/g", pbOnly).Want(http.StatusNotAcceptable)
		tr.GetAs(gadgets+"/g", pbThenJSON).Want(http.StatusOK)
		tr.GetAs(gadgets, pbOnly).Want(http.StatusNotAcceptable)
		tr.GetAs(gadgets+"/g/status", pbOnly).Want(http.StatusNotAcceptable)
		tr.GetAs(gadgets+"/missing", pbThenJSON).Want(http.StatusNotFound)
		tr.WatchAs(gadgets+"?watch=1", pbOnly, Events(1)).Want(http.StatusNotAcceptable)
		tr.Accepting(pbOnly, func() {
			tr.Post(gadgets, gadget("h", `{"color":"red"}`)).Want(http.StatusNotAcceptable)
		})
		tr.GetAs(gadgets+"/h", pbThenJSON).Want(http.StatusNotFound)
		// Their definition has one (apiextensions.k8s.io's kinds are
		// built in).
		tr.GetAs("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.{group}", pbOnly).Want(http.StatusOK)
		// Their metadata has one.
		tr.GetAs(gadgets+"/g", pbMeta).Want(http.StatusOK)
		tr.GetAs(gadgets, pbMetaList).Want(http.StatusOK)
		tr.WatchAs(gadgets+"?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", pbMeta, UntilInitialEventsEnd).Want(http.StatusOK)
	}},
	{"protobuf-writes", func(tr *T) {
		tr.Accepting(pbThenJSON, func() {
			a := tr.Post(cms, labelledConfigMap("a", `"data":{"k":"v"}`)).Want(http.StatusCreated)
			tr.Post(cms, labelledConfigMap("a", ``)).Want(http.StatusConflict)
			tr.Post(cms, labelledConfigMap("Bad_Name", ``)).Want(http.StatusUnprocessableEntity)
			tr.Put(cms+"/a", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"t":"pb"},"resourceVersion":"`+a.RV()+`"},"data":{"k":"w"}}`).Want(http.StatusOK)
			tr.Put(cms+"/a", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"`+a.RV()+`"}}`).Want(http.StatusConflict)
			tr.Patch(cms+"/a", "merge", `{"data":{"x":"y"}}`).Want(http.StatusOK)
			tr.Patch(cms+"/a", "strategic", `{"metadata":{"annotations":{"a":"b"}}}`).Want(http.StatusOK)
			tr.Patch(cms+"/a", "apply", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"z":"1"}}`).Want(http.StatusUnprocessableEntity)
			tr.Patch(cms+"/a?fieldManager=m", "apply", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"z":"1"}}`).Want(http.StatusOK)
			tr.Delete(cms+"/a", "").Want(http.StatusOK)
			tr.Delete(cms+"/a", "").Want(http.StatusNotFound)
			tr.Post(pods, podBody).Want(http.StatusCreated)
			tr.Delete(pods+"/p", `{"gracePeriodSeconds":0}`).Want(http.StatusOK)
			tr.Post(deploys, deployBody).Want(http.StatusCreated)
			tr.Get(deploys + "/d/scale").Want(http.StatusOK)
			tr.Put(deploys+"/d/scale", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"d"},"spec":{"replicas":3}}`).Want(http.StatusOK)
			tr.Post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","resource":"pods","namespace":"{ns}"}}}`).Want(http.StatusCreated)
		})
		// Metadata only, for a write too.
		tr.Accepting(pbMeta, func() {
			tr.Post(cms, labelledConfigMap("m", `"data":{"k":"v"}`)).Want(http.StatusCreated)
		})
		tr.Accepting("application/yaml", func() {
			tr.Post(cms, labelledConfigMap("y", `"data":{"k":"v"}`)).Want(http.StatusCreated)
			tr.Post(cms, labelledConfigMap("y", ``)).Want(http.StatusConflict)
		})
		// A collection's deletion answers the list deleted.
		tr.Accepting(pbOnly, func() {
			tr.Delete(cms+"?"+labelled, "").Want(http.StatusOK)
		})
	}},
	{"protobuf-watches", func(tr *T) {
		a := tr.Post(cms, labelledConfigMap("a", `"data":{"k":"v"}`)).Want(http.StatusCreated)
		tr.Post(cms, labelledConfigMap("b", ``)).Want(http.StatusCreated)
		tr.Patch(cms+"/a", "merge", `{"data":{"k":"w"}}`).Want(http.StatusOK)
		tr.Delete(cms+"/b", "").Want(http.StatusOK)
		tr.WatchAs(cms+"?watch=1&"+labelled+"&resourceVersion="+a.RV(), pbThenJSON, Events(3)).Want(http.StatusOK)
		// Objects leaving the selection are DELETED.
		tr.Patch(cms+"/a", "merge", `{"metadata":{"labels":{"t":"gone"}}}`).Want(http.StatusOK)
		tr.WatchAs(cms+"?watch=1&"+labelled+"&resourceVersion="+a.RV(), pbOnly, Events(4)).Want(http.StatusOK)
		tr.Patch(cms+"/a", "merge", `{"metadata":{"labels":{"t":"pb"}}}`).Want(http.StatusOK)
		// A watch-list: ADDED events, then the initial-events-end bookmark.
		tr.WatchAs(cms+"?watch=1&"+labelled+"&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", pbOnly, UntilInitialEventsEnd).Want(http.StatusOK)
		tr.WatchAs(cms+"?watch=1&"+labelled+"&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", pbMeta, UntilInitialEventsEnd).Want(http.StatusOK)
		tr.WatchAs(cms+"?watch=1&"+labelled+"&resourceVersion="+a.RV(), pbMeta, Events(2)).Want(http.StatusOK)
		// Errors before the stream, and the forms with no stream.
		tr.WatchAs(cms+"?watch=1&resourceVersion=x", pbOnly, Events(1)).Want(http.StatusInternalServerError)
		tr.WatchAs(cms+"?watch=1&"+labelled, "application/yaml", Events(1)).Want(http.StatusNotAcceptable)
		tr.WatchAs(cms+"?watch=1&"+labelled, "application/yaml,"+pbOnly, Events(1)).Want(http.StatusNotAcceptable)
		// An expired revision: an ERROR event with a Status.
		e1 := tr.Post(events, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e1"},"involvedObject":{"kind":"ConfigMap","name":"x","namespace":"{ns}"},"reason":"Tested","message":"one","type":"Normal"}`).Want(http.StatusCreated)
		tr.Post(events, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e2"},"involvedObject":{"kind":"ConfigMap","name":"x","namespace":"{ns}"},"reason":"Tested","message":"two","type":"Warning"}`).Want(http.StatusCreated)
		tr.Post(cms, labelledConfigMap("c", ``)).Want(http.StatusCreated)
		tr.Compact()
		tr.WatchAs(events+"?watch=1&resourceVersion="+e1.RV(), pbOnly, Events(1)).Want(http.StatusOK)
	}},
}
