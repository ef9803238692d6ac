package informer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// A discovery request to a server that never answers fails after the
// mapper's timeout (client-go's discovery default, 32 s) or the client's
// Timeout (rest.Config.Timeout) instead of hanging InformerFor for ever.
func TestDiscoveryMapperTimeout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		client  *http.Client
		timeout time.Duration // the mapper's
	}{
		{"mapper timeout", nil, 50 * time.Millisecond},
		{"client Timeout", &http.Client{Timeout: 50 * time.Millisecond}, time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-release:
				}
			}))
			defer srv.Close()
			defer close(release)
			m, err := NewDiscoveryMapper(&rest.Config{Host: srv.URL}, tc.client)
			if err != nil {
				t.Fatal(err)
			}
			m.(*discoveryMapper).timeout = tc.timeout
			done := make(chan error, 1)
			go func() {
				_, err := m.RESTMapping(t.Context(), schema.GroupKind{Kind: "Pod"}, "v1")
				done <- err
			}()
			select {
			case err := <-done:
				var te interface{ Timeout() bool }
				if !errors.Is(err, context.DeadlineExceeded) && !(errors.As(err, &te) && te.Timeout()) {
					t.Fatalf("RESTMapping against a silent server: %v, want a wrapped timeout", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("RESTMapping against a silent server still waiting after 5 s")
			}
		})
	}
}

var (
	widgetGK = schema.GroupKind{Group: "a.example", Kind: "Widget"}
	gadgetGK = schema.GroupKind{Group: "b.example", Kind: "Gadget"}
	gizmoGK  = schema.GroupKind{Group: "c.example", Kind: "Gizmo"}
)

// mapAsync asks m for gk in goroutine and returns its result's channel.
func mapAsync(ctx context.Context, m Mapper, gk schema.GroupKind, versions ...string) <-chan error {
	done := make(chan error, 1)
	go func() {
		mp, err := m.RESTMapping(ctx, gk, versions...)
		if err == nil && mp.GroupVersionKind.GroupKind() != gk {
			err = fmt.Errorf("mapping of %v for %v", mp.GroupVersionKind, gk)
		}
		done <- err
	}()
	return done
}

// The case: while the discovery request of kind B (b.example/v1)
// hangs, a mapping of kind A that the mapper has cached is served at once
// (no lock taken), and a miss in another group version (C) is asked and
// answered meanwhile; B's caller's ctx ends its wait with ctx's error, and
// as nobody else waits, the request ends too (no goroutine left behind).
func TestDiscoveryMapperHangSparesOtherKinds(t *testing.T) {
	fd := newFakeDiscovery()
	fd.serveGV("a.example", "v1", apiResource("widgets", "Widget"))
	fd.serveGV("b.example", "v1", apiResource("gadgets", "Gadget"))
	fd.serveGV("c.example", "v1", apiResource("gizmos", "Gizmo"))
	release := fd.hangOn("/apis/b.example/v1")
	defer release()
	m := fd.mapper(t)
	if _, err := m.RESTMapping(t.Context(), widgetGK, "v1"); err != nil {
		t.Fatal(err)
	}
	ctxB, cancelB := context.WithCancel(t.Context())
	defer cancelB()
	doneB := mapAsync(ctxB, m, gadgetGK, "v1")
	for p := range fd.arrived {
		if p == "/apis/b.example/v1" {
			break
		}
	}
	for _, tc := range []struct {
		what string
		gk   schema.GroupKind
	}{{"the cached kind A", widgetGK}, {"the uncached kind C of another group version", gizmoGK}} {
		select {
		case err := <-mapAsync(t.Context(), m, tc.gk, "v1"):
			if err != nil {
				t.Fatalf("%s: %v", tc.what, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no answer within 5 s while B's discovery hangs", tc.what)
		}
	}
	select {
	case err := <-doneB:
		t.Fatalf("B answered while its discovery hangs: %v", err)
	default:
	}
	cancelB()
	select {
	case err := <-doneB:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("B after its ctx was cancelled: %v, want ctx's error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("B still waiting 5 s after its ctx was cancelled")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if hits, ended := fd.requests("/apis/b.example/v1"); hits == 1 && ended == 1 {
			break
		}
		if time.Now().After(deadline) {
			hits, ended := fd.requests("/apis/b.example/v1")
			t.Fatalf("B's request: %d sent, %d ended; want 1 ended once nobody waits", hits, ended)
		}
		time.Sleep(time.Millisecond)
	}
}

// Concurrent misses of one group version (a cold cache, every controller
// starting) wait for one request; so do those of one group's preferred
// version.
func TestDiscoveryMapperOneRequestPerDocument(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fd := newFakeDiscovery()
		fd.serveGV("", "v1", apiResource("pods", "Pod"), apiResource("configmaps", "ConfigMap"))
		fd.serveGV("a.example", "v1", apiResource("widgets", "Widget"))
		release := fd.hangOn("/api/v1")
		releaseGroup := fd.hangOn("/apis/a.example")
		m := fd.mapper(t)
		var dones []<-chan error
		for i := range 8 {
			dones = append(dones, mapAsync(t.Context(), m, schema.GroupKind{Kind: []string{"Pod", "ConfigMap"}[i%2]}, "v1"))
			dones = append(dones, mapAsync(t.Context(), m, widgetGK)) // preferred version
		}
		synctest.Wait()
		m.mu.Lock()
		waiting := map[string]int{}
		for key, f := range m.flights {
			waiting[key.path] = f.waiters
		}
		m.mu.Unlock()
		if waiting["/api/v1"] != 8 || waiting["/apis/a.example"] != 8 || len(waiting) != 2 {
			t.Fatalf("waiters by document %v, want 8 on /api/v1 and 8 on /apis/a.example", waiting)
		}
		release()
		releaseGroup()
		for _, done := range dones {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range []string{"/api/v1", "/apis/a.example", "/apis/a.example/v1"} {
			if hits, _ := fd.requests(p); hits != 1 {
				t.Errorf("%d requests for %s, want 1", hits, p)
			}
		}
		// Cached now: no request.
		if _, err := m.RESTMapping(t.Context(), widgetGK); err != nil {
			t.Fatal(err)
		}
		if hits, _ := fd.requests("/apis/a.example/v1"); hits != 1 {
			t.Errorf("a cached mapping sent a request (%d in all)", hits)
		}
	})
}

// A waiter whose ctx ends stops waiting, with ctx's error, without ending
// the request the others wait for; the request ends only when nobody waits
// for it any more, and the next caller then sends a new one.
func TestDiscoveryMapperWaiterCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fd := newFakeDiscovery()
		fd.serveGV("a.example", "v1", apiResource("widgets", "Widget"))
		release := fd.hangOn("/apis/a.example/v1")
		m := fd.mapper(t)
		ctx1, cancel1 := context.WithCancel(t.Context())
		done1 := mapAsync(ctx1, m, widgetGK, "v1") // sends the request
		synctest.Wait()
		done2 := mapAsync(t.Context(), m, widgetGK, "v1") // waits for it
		synctest.Wait()
		cancel1()
		if err := <-done1; !errors.Is(err, context.Canceled) {
			t.Fatalf("the cancelled caller: %v, want ctx's error", err)
		}
		synctest.Wait()
		if hits, ended := fd.requests("/apis/a.example/v1"); hits != 1 || ended != 0 {
			t.Fatalf("%d requests, %d ended: the first caller's ctx ended the shared request", hits, ended)
		}
		release()
		if err := <-done2; err != nil {
			t.Fatalf("the other caller: %v", err)
		}

		// Nobody left waiting: the request ends, and the next miss sends
		// its own.
		fd.serveGV("a.example", "v1", apiResource("widgets", "Widget"), apiResource("gadgets", "Gadget"))
		release = fd.hangOn("/apis/a.example/v1")
		ctx3, cancel3 := context.WithCancel(t.Context())
		done3 := mapAsync(ctx3, m, schema.GroupKind{Group: "a.example", Kind: "Gadget"}, "v1")
		synctest.Wait()
		cancel3()
		if err := <-done3; !errors.Is(err, context.Canceled) {
			t.Fatalf("the cancelled caller: %v, want ctx's error", err)
		}
		synctest.Wait()
		if hits, ended := fd.requests("/apis/a.example/v1"); hits != 2 || ended != 1 {
			t.Fatalf("%d requests, %d ended; want the abandoned one ended", hits, ended)
		}
		release()
		if err := <-mapAsync(t.Context(), m, schema.GroupKind{Group: "a.example", Kind: "Gadget"}, "v1"); err != nil {
			t.Fatal(err)
		}
		if hits, _ := fd.requests("/apis/a.example/v1"); hits != 3 {
			t.Fatalf("%d requests, want a third after the abandoned one", hits)
		}
	})
}

// A kind missing from the cached document (a CRD created since) makes the
// mapper read it again; an unknown kind is a no-match error, asked again on
// each call. A caller that joined a request begun before it asked, whose
// answer lacks its kind, asks again: a CRD created before the call is
// found, as when every caller sent its own request.
func TestDiscoveryMapperRefreshOnMiss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fd := newFakeDiscovery()
		fd.serveGV("a.example", "v1", apiResource("widgets", "Widget"))
		m := fd.mapper(t)
		ctx := t.Context()
		const p = "/apis/a.example/v1"
		if _, err := m.RESTMapping(ctx, widgetGK, "v1"); err != nil {
			t.Fatal(err)
		}
		gadget := schema.GroupKind{Group: "a.example", Kind: "Gadget"}
		if _, err := m.RESTMapping(ctx, gadget, "v1"); !meta.IsNoMatchError(err) {
			t.Fatalf("unknown kind: %v, want a no-match error", err)
		}
		if _, err := m.RESTMapping(ctx, gadget); !meta.IsNoMatchError(err) {
			t.Fatalf("unknown kind, preferred version: %v, want a no-match error", err)
		}
		if hits, _ := fd.requests(p); hits != 3 {
			t.Fatalf("%d requests, want one per miss (3)", hits)
		}
		fd.serveGV("a.example", "v1", apiResource("widgets", "Widget"), apiResource("gadgets", "Gadget"))
		mp, err := m.RESTMapping(ctx, gadget, "v1")
		if err != nil || mp.Resource.Resource != "gadgets" || mp.Scope.Name() != meta.RESTScopeNameNamespace {
			t.Fatalf("after the CRD appeared: %+v, %v", mp, err)
		}
		if hits, _ := fd.requests(p); hits != 4 {
			t.Fatalf("%d requests, want 4", hits)
		}

		// A request for the unknown Gizmo is in flight, with the document
		// as it was; Sprocket is then created and asked for.
		release := fd.hangOn(p)
		gizmo := mapAsync(ctx, m, schema.GroupKind{Group: "a.example", Kind: "Gizmo"}, "v1")
		synctest.Wait()
		fd.serveGV("a.example", "v1", apiResource("widgets", "Widget"), apiResource("gadgets", "Gadget"), apiResource("sprockets", "Sprocket"))
		sprocket := mapAsync(ctx, m, schema.GroupKind{Group: "a.example", Kind: "Sprocket"}, "v1")
		synctest.Wait()
		release()
		if err := <-gizmo; !meta.IsNoMatchError(err) {
			t.Fatalf("Gizmo: %v, want a no-match error", err)
		}
		if err := <-sprocket; err != nil {
			t.Fatalf("Sprocket, created before it was asked for: %v", err)
		}
		if hits, _ := fd.requests(p); hits != 6 {
			t.Fatalf("%d requests, want 6 (Sprocket's caller asked again)", hits)
		}
	})
}

// A group the server does not serve is a no-match error, and so is a
// group version it does not serve (404).
func TestDiscoveryMapperNotServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fd := newFakeDiscovery()
		fd.serveGV("a.example", "v1", apiResource("widgets", "Widget"))
		m := fd.mapper(t)
		for _, tc := range []struct {
			gk       schema.GroupKind
			versions []string
		}{
			{schema.GroupKind{Group: "none.example", Kind: "X"}, nil},
			{schema.GroupKind{Group: "none.example", Kind: "X"}, []string{"v1"}},
			{widgetGK, []string{"v2"}},
			{schema.GroupKind{Kind: "Pod"}, []string{"v1"}},
		} {
			if _, err := m.RESTMapping(t.Context(), tc.gk, tc.versions...); !meta.IsNoMatchError(err) {
				t.Errorf("RESTMapping(%v, %v): %v, want a no-match error", tc.gk, tc.versions, err)
			}
		}
		// The first served version wins.
		mp, err := m.RESTMapping(t.Context(), widgetGK, "v2", "v1")
		if err != nil || mp.Resource.Version != "v1" {
			t.Fatalf("RESTMapping(v2, v1): %+v, %v", mp, err)
		}
	})
}

// StaticMapper serves a meta.RESTMapper's mappings; StaticMapper(nil) is
// refused by NewFactory and maps nothing.
func TestStaticMapper(t *testing.T) {
	rm := meta.NewDefaultRESTMapper(nil)
	rm.Add(widgetGK.WithVersion("v1"), meta.RESTScopeNamespace)
	m := StaticMapper(rm)
	mp, err := m.RESTMapping(t.Context(), widgetGK, "v1")
	if err != nil || mp.Resource.Resource != "widgets" {
		t.Fatalf("RESTMapping: %+v, %v", mp, err)
	}
	if _, err := m.RESTMapping(t.Context(), gadgetGK, "v1"); !meta.IsNoMatchError(err) {
		t.Fatalf("unknown kind: %v, want a no-match error", err)
	}
	if _, err := StaticMapper(nil).RESTMapping(t.Context(), widgetGK, "v1"); err == nil {
		t.Fatal("StaticMapper(nil) mapped a kind")
	}
	if _, err := NewFactory(&rest.Config{Host: "http://127.0.0.1:1"}, FactoryOptions{Mapper: StaticMapper(nil)}); err == nil {
		t.Fatal("NewFactory accepted StaticMapper(nil)")
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
			_, err = m.RESTMapping(t.Context(), schema.GroupKind{Kind: "Pod"}, "v1")
			if !tt.check(err) {
				t.Fatalf("RESTMapping: %v fails its check", err)
			}
			if tt.code != http.StatusNotFound && !strings.HasPrefix(err.Error(), "informer: discovery /api/v1: ") {
				t.Errorf("error %q does not name the discovery document", err)
			}
		})
	}
}
