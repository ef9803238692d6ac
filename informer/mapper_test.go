package informer

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// A discovery request to a server that never answers fails after the
// mapper's timeout (client-go's discovery default, 32 s) instead of hanging
// InformerFor — and, through the mapper's lock, every other caller — for
// ever.
func TestDiscoveryMapperTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	m, err := NewDiscoveryMapper(&rest.Config{Host: srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.(*discoveryMapper).timeout = 50 * time.Millisecond
	done := make(chan error, 1)
	go func() {
		_, err := m.RESTMapping(schema.GroupKind{Kind: "Pod"}, "v1")
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("RESTMapping against a silent server: %v, want a wrapped deadline exceeded", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("RESTMapping against a silent server still waiting after 5 s")
	}
}
