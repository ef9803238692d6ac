package conformance

import "net/http"

// timeoutTranscripts: the limits a request's own parameters set (the timeout
// query parameter of kube-apiserver's request-deadline filter). The other
// limits — in-flight bounds, body and header timeouts, connection bounds —
// need more concurrency or time than a transcript has; apiserver's
// limits_test.go and attack_test.go test them.
var timeoutTranscripts = []transcript{
	{"request-timeout-parameter", func(tr *T) {
		a := tr.Post(cms, configMap("a", "")).Want(http.StatusCreated)
		tr.Post(cms+"?timeout=10s", configMap("b", "")).Want(http.StatusCreated)
		// Not a duration: 400 before anything else, on writes, reads and
		// non-resource paths.
		tr.Get(cms + "?timeout=bogus").Want(http.StatusBadRequest)
		tr.Get(cms + "/a?timeout=1").Want(http.StatusBadRequest)
		tr.Post(cms+"?timeout=bogus", configMap("c", "")).Want(http.StatusBadRequest)
		tr.Get("/api?timeout=bogus").Want(http.StatusBadRequest)
		// A duration, even zero or negative (the server's own timeout
		// then), is accepted.
		tr.Get(cms + "?timeout=30s").Want(http.StatusOK)
		tr.Get(cms + "/a?timeout=0s").Want(http.StatusOK)
		tr.Get(cms + "/a?timeout=-5s").Want(http.StatusOK)
		// Watches are long-running: the parameter is not read.
		tr.Watch(cms+"?watch=1&timeout=bogus&resourceVersion="+a.RV(), Events(1)).Want(http.StatusOK)
	}},
}
