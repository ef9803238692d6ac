package conformance

import (
	"net/http"
)

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
