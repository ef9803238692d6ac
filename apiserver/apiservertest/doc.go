// Package apiservertest starts kloop's embedded API server for a test, the
// way net/http/httptest starts an HTTP server:
//
//	srv := apiservertest.NewServer(t, apiservertest.Options{})
//	clientset, err := kubernetes.NewForConfig(srv.Config())
//
// The server listens on a random port of 127.0.0.1, requires its bearer
// token (which Config carries), starts in about a millisecond and stops when
// the test ends.
package apiservertest
