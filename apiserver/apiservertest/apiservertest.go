package apiservertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver"
)

// Options configure the server; see apiserver.Options. The zero value works.
// New and NewServer always serve TLS (Options.TLS is forced on), so that
// both Config and Kubeconfig (kubectl) clients authenticate.
type Options = apiserver.Options

// Server is an embedded API server running on a loopback port, for a test,
// an Example or a program, as net/http/httptest's Server is for a handler.
type Server struct {
	*apiserver.Server

	// dir holds the kubeconfig; removed by Close.
	dir        string
	kubeconfig string // dir/kubeconfig

	cancel context.CancelFunc // stops Serve
	done   chan error         // Serve's result, received once by Close

	closeOnce sync.Once
	closeErr  error // Serve's error, set by the first Close

	faultsOnce sync.Once
	faults     *Faults // made by the first call of Faults
}

// New starts an embedded server on a random port of 127.0.0.1 (or on
// Options.Addr) with TLS, and returns once it is ready, as
// httptest.NewServer does: for code that has no testing.TB (an Example, a
// TestMain, a benchmark harness, a program). It writes the server's
// kubeconfig into a temporary directory of its own (see Kubeconfig). Close
// stops the server and removes that directory.
func New(opts Options) (*Server, error) {
	opts.TLS = true
	srv, err := apiserver.New(opts)
	if err != nil {
		return nil, fmt.Errorf("apiservertest: %w", err)
	}
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("apiservertest: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{Server: srv, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- srv.Serve(ctx, ln) }()
	select {
	case <-srv.Ready():
	case err := <-s.done:
		cancel()
		return nil, fmt.Errorf("apiservertest: server stopped before it was ready: %w", err)
	}
	if err := s.writeKubeconfig(); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) writeKubeconfig() error {
	dir, err := os.MkdirTemp("", "apiservertest-")
	if err != nil {
		return fmt.Errorf("apiservertest: %w", err)
	}
	s.dir = dir
	path := filepath.Join(dir, "kubeconfig")
	if err := s.WriteKubeconfig(path); err != nil {
		return fmt.Errorf("apiservertest: %w", err)
	}
	s.kubeconfig = path
	return nil
}

// NewServer is New for a test: it fails the test if the server cannot start,
// and closes the server when the test ends (t.Cleanup), reporting an error
// of its Serve to t.
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("apiservertest: %v", err)
		}
	})
	return s
}

// Close stops the server, waits for its requests in flight and its watches
// to end, and removes its kubeconfig. It returns the error Serve ended with,
// if any other than the stop itself. Later calls return the same.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.faultsOnce.Do(func() {}) // s.faults is set for good
		if s.faults != nil {
			s.faults.ReleaseAll()
		}
		s.cancel()
		if err := <-s.done; err != nil && !errors.Is(err, context.Canceled) {
			s.closeErr = err
		}
		if s.dir != "" {
			if err := os.RemoveAll(s.dir); err != nil && s.closeErr == nil {
				s.closeErr = fmt.Errorf("apiservertest: %w", err)
			}
		}
	})
	return s.closeErr
}

// Config returns a client configuration for the server (a new copy on each
// call): client-go's clients, kloop's client, and controller-runtime accept it.
func (s *Server) Config() *rest.Config { return s.RESTConfig() }

// Kubeconfig returns the path of a kubeconfig for the server (written by New;
// removed by Close), for kubectl --kubeconfig.
func (s *Server) Kubeconfig() string { return s.kubeconfig }
