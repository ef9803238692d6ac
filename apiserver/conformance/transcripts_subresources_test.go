package conformance

import (
	"net/http"
)

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
