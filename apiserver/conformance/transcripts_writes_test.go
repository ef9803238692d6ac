package conformance

import (
	"net/http"
)

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

// selfTranscripts: what kube-apiserver creates for itself.
var selfTranscripts = []transcript{
	{"kubernetes-service", func(tr *T) {
		tr.Get("/api/v1/namespaces/default/services/kubernetes").Want(http.StatusOK)
	}},
	{"self-namespaces", func(tr *T) {
		for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
			tr.Get("/api/v1/namespaces/" + ns).Want(http.StatusOK)
		}
	}},
	{"kubernetes-endpoints", func(tr *T) {
		tr.Get("/api/v1/namespaces/default/endpoints/kubernetes").Want(http.StatusOK)
		tr.Get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes").Want(http.StatusOK)
	}},
}
