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
	{"serviceaccount-token-bound", func(tr *T) {
		const sa = "/api/v1/namespaces/{ns}/serviceaccounts"
		tr.Post(sa, `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"robot"}}`).Want(http.StatusCreated)
		tr.Post(pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"serviceAccountName":"robot","containers":[{"name":"c","image":"nginx:1.27"}]}}`).Want(http.StatusCreated)
		tr.Post(pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"},"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}`).Want(http.StatusCreated)
		tr.Post("/api/v1/namespaces/{ns}/secrets", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`).Want(http.StatusCreated)
		bind := func(ref string) string {
			return `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"audiences":["https://kubernetes.default.svc.cluster.local","other"],"expirationSeconds":7200,"boundObjectRef":` + ref + `}}`
		}
		tok := sa + "/robot/token"
		podTok := tr.Post(tok, bind(`{"apiVersion":"v1","kind":"Pod","name":"p"}`)).Want(http.StatusCreated)
		secretTok := tr.Post(tok, bind(`{"apiVersion":"v1","kind":"Secret","name":"s"}`)).Want(http.StatusCreated)
		tr.Post(tok, bind(`{"apiVersion":"v1","kind":"Pod","name":"q"}`)).Want(http.StatusBadRequest)
		tr.Post(tok, bind(`{"apiVersion":"v1","kind":"Pod","name":"missing"}`)).Want(http.StatusNotFound)
		tr.Post(tok, bind(`{"apiVersion":"v1","kind":"Node","name":"kloop-no-such-node"}`)).Want(http.StatusNotFound)
		tr.Post(tok, bind(`{"apiVersion":"v1","kind":"ConfigMap","name":"c"}`)).Want(http.StatusBadRequest)
		tr.Post(tok, bind(`{"apiVersion":"apps/v1","kind":"Pod","name":"p"}`)).Want(http.StatusBadRequest)
		tr.Post(tok, bind(`{"apiVersion":"v1","kind":"Pod","name":"p","uid":"0b5ef4a6-0000-0000-0000-000000000000"}`)).Want(http.StatusConflict)
		tr.Post(tok, bind(`{"apiVersion":"v1","kind":"Pod","name":"p","uid":"`+tr.Get(pods+"/p").Want(http.StatusOK).UID()+`"}`)).Want(http.StatusCreated)
		for _, r := range []*Resp{podTok, secretTok} {
			token, _ := r.Obj["status"].(map[string]any)["token"].(string)
			cfg := tr.fx.env.Config()
			cfg.BearerToken = token
			tr.as(cfg, func() {
				tr.Post("/apis/authentication.k8s.io/v1/selfsubjectreviews", `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`).Want(http.StatusCreated)
			})
		}
		tr.Delete(pods+"/p", `{"gracePeriodSeconds":0}`).Want(http.StatusOK)
		tr.Delete("/api/v1/namespaces/{ns}/secrets/s", "").Want(http.StatusOK)
		for _, r := range []*Resp{podTok, secretTok} {
			token, _ := r.Obj["status"].(map[string]any)["token"].(string)
			cfg := tr.fx.env.Config()
			cfg.BearerToken = token
			tr.as(cfg, func() {
				tr.awaitGet(pods, http.StatusUnauthorized)
				tr.Get(pods).Want(http.StatusUnauthorized)
			})
		}
	}},
}
