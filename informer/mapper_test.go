package informer

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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

// A discovery answer other than 200 or 404 is a *apierrors.StatusError
// (internal/rest's decoder: the server's Status, else a generic one), so
// that apierrors.IsForbidden and the like work; a 404 group version is one
// the server does not serve: the kind has no match.
func TestDiscoveryMapperErrors(t *testing.T) {
	tests := []struct {
		name  string
		code  int
		body  string
		check func(error) bool
	}{
		{"403 Status", http.StatusForbidden,
			`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"forbidden: User \"x\" cannot get path \"/api/v1\"","reason":"Forbidden","code":403}`,
			apierrors.IsForbidden},
		{"503 text", http.StatusServiceUnavailable, "service unavailable\n", apierrors.IsServiceUnavailable},
		{"500 text", http.StatusInternalServerError, "boom", apierrors.IsInternalError},
		{"404", http.StatusNotFound, "404 page not found", meta.IsNoMatchError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.code)
				w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			m, err := NewDiscoveryMapper(&rest.Config{Host: srv.URL}, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.RESTMapping(schema.GroupKind{Kind: "Pod"}, "v1")
			if !tt.check(err) {
				t.Fatalf("RESTMapping: %v fails its check", err)
			}
			if tt.code != http.StatusNotFound && !strings.HasPrefix(err.Error(), "informer: discovery /api/v1: ") {
				t.Errorf("error %q does not name the discovery document", err)
			}
		})
	}
}
