package apiservertest

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver"
)

// Options configure the server; see apiserver.Options. The zero value works.
// NewServer always serves TLS (Options.TLS is forced on), so that both
// Config and Kubeconfig (kubectl) clients authenticate.
type Options = apiserver.Options

// Server is an embedded API server running for one test.
type Server struct {
	*apiserver.Server
	t testing.TB

	mu         sync.Mutex // guards kubeconfig
	kubeconfig string     // path, once written
}

// NewServer starts a server and stops it when the test ends (t.Cleanup). It
// fails the test if the server cannot start.
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	opts.TLS = true
	srv, err := apiserver.New(opts)
	if err != nil {
		t.Fatalf("apiservertest: %v", err)
	}
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("apiservertest: listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("apiservertest: %v", err)
		}
	})
	select {
	case <-srv.Ready():
	case err := <-done:
		t.Fatalf("apiservertest: server stopped before it was ready: %v", err)
	}
	return &Server{Server: srv, t: t}
}

// Config returns a client configuration for the server (a new copy on each
// call): client-go's clients, kloop's client, and controller-runtime accept it.
func (s *Server) Config() *rest.Config { return s.RESTConfig() }

// Kubeconfig writes a kubeconfig for the server into the test's temporary
// directory (once) and returns its path, for kubectl --kubeconfig.
func (s *Server) Kubeconfig() string {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kubeconfig == "" {
		path := filepath.Join(s.t.TempDir(), "kubeconfig")
		if err := s.WriteKubeconfig(path); err != nil {
			s.t.Fatalf("apiservertest: %v", err)
		}
		s.kubeconfig = path
	}
	return s.kubeconfig
}
