// Package apiservertest starts kloop's embedded API server for a test, the
// way net/http/httptest starts an HTTP server:
//
//	srv := apiservertest.NewServer(t, apiservertest.Options{})
//	clientset, err := kubernetes.NewForConfig(srv.Config())
//	// kubectl --kubeconfig srv.Kubeconfig() ...
//
// The server listens on a random port of 127.0.0.1 with TLS (a self-signed
// certificate that Config and the kubeconfig trust), requires its bearer
// token (which both carry), starts in well under a millisecond and stops
// when the test ends. Config has no client-side rate limit (QPS -1).
package apiservertest
