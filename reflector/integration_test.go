package reflector

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/apiservertest"
)

var configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")

// mapStore applies what the reflector pushes the way the informer's cache
// does, and records the calls.
type mapStore struct {
	mu       sync.Mutex        // guards objs, replaces, changed
	objs     map[string]string // name → data["v"]
	replaces int
	changed  chan struct{} // signalled (without blocking) on each call
}

func newMapStore() *mapStore {
	return &mapStore{objs: map[string]string{}, changed: make(chan struct{}, 1)}
}

func (s *mapStore) apply(f func()) error {
	s.mu.Lock()
	f()
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return nil
}
func (s *mapStore) Add(o *corev1.ConfigMap) error {
	return s.apply(func() { s.objs[o.Name] = o.Data["v"] })
}
func (s *mapStore) Update(o *corev1.ConfigMap) error { return s.Add(o) }
func (s *mapStore) Delete(o *corev1.ConfigMap) error {
	return s.apply(func() { delete(s.objs, o.Name) })
}
func (s *mapStore) Replace(os []*corev1.ConfigMap, _ string) error {
	return s.apply(func() {
		s.replaces++
		s.objs = map[string]string{}
		for _, o := range os {
			s.objs[o.Name] = o.Data["v"]
		}
	})
}
func (s *mapStore) Bookmark(string) error { return nil }

// waitEqual waits until the store holds want (10 s at most).
func (s *mapStore) waitEqual(t *testing.T, want map[string]string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		ok := maps.Equal(s.objs, want)
		got := maps.Clone(s.objs)
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-s.changed:
		case <-timeout:
			t.Fatalf("store holds %v, want %v", got, want)
		}
	}
}

// gate is a transport that can cut the open watches and hold new ones, to
// put a gap into the reflector's view of the server.
type gate struct {
	next http.RoundTripper

	mu      sync.Mutex // guards the fields below
	bodies  []io.Closer
	held    bool
	release chan struct{}
	watches []string // the query of each watch request
	lists   int      // list requests
	// fail answers the next watch requests with these responses instead
	// of the server's, in order.
	fail []*http.Response
}

func (g *gate) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Query().Get("watch") != "true" {
		g.mu.Lock()
		g.lists++
		g.mu.Unlock()
		return g.next.RoundTrip(req)
	}
	g.mu.Lock()
	g.watches = append(g.watches, req.URL.RawQuery)
	held, release := g.held, g.release
	var fail *http.Response
	if len(g.fail) > 0 {
		fail, g.fail = g.fail[0], g.fail[1:]
	}
	g.mu.Unlock()
	if fail != nil {
		fail.Request = req
		return fail, nil
	}
	if held {
		select {
		case <-release:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	resp, err := g.next.RoundTrip(req)
	if err == nil {
		g.mu.Lock()
		g.bodies = append(g.bodies, resp.Body)
		g.mu.Unlock()
	}
	return resp, err
}

// cut closes the open watches and holds new ones until open is called.
func (g *gate) cut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held, g.release = true, make(chan struct{})
	for _, b := range g.bodies {
		b.Close()
	}
	g.bodies = nil
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = false
	close(g.release)
}

func (g *gate) watchQueries() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.watches...)
}

func cm(name, v string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetName(name)
	u.SetNamespace("default")
	_ = unstructured.SetNestedField(u.Object, v, "data", "v")
	return u
}

// TestEmbeddedServer runs the reflector with the REST ListerWatcher
// against kloop's embedded API server: initial sync (streaming list, and
// list+watch), updates and deletes through the watch, and a gap longer than
// the server's history with deletes in it, repaired by a relist.
func TestEmbeddedServer(t *testing.T) {
	for _, watchList := range []bool{true, false} {
		t.Run(fmt.Sprintf("watchList=%t", watchList), func(t *testing.T) {
			srv := apiservertest.NewServer(t, apiservertest.Options{HistoryEvents: 5})
			cfg := srv.Config()
			dyn, err := dynamic.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			cms := dyn.Resource(configMapsGVR).Namespace("default")
			ctx := t.Context()
			server := map[string]string{}
			for i := range 3 {
				name := fmt.Sprintf("cm-%d", i)
				if _, err := cms.Create(ctx, cm(name, "1"), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				server[name] = "1"
			}

			hc, err := rest.HTTPClientFor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			tr := hc.Transport
			if tr == nil {
				tr = http.DefaultTransport
			}
			g := &gate{next: tr}
			lw, err := NewRESTListerWatcher[*corev1.ConfigMap](cfg, configMapsGVR, "default",
				RESTOptions[*corev1.ConfigMap]{HTTPClient: &http.Client{Transport: g}})
			if err != nil {
				t.Fatal(err)
			}
			st := newMapStore()
			r, err := New[*corev1.ConfigMap](lw, st, Options{DisableWatchList: !watchList, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- r.Run(rctx) }()
			defer func() {
				cancel()
				<-done
			}()

			// Sync.
			st.waitEqual(t, server)

			// Updates, creates and deletes through the watch.
			if _, err := cms.Update(ctx, cm("cm-0", "2"), metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			server["cm-0"] = "2"
			if _, err := cms.Create(ctx, cm("cm-3", "1"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			server["cm-3"] = "1"
			if err := cms.Delete(ctx, "cm-1", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			delete(server, "cm-1")
			st.waitEqual(t, server)
			// Watch events reach the store only after the sync completed.
			if !r.HasSynced() {
				t.Error("HasSynced false after sync")
			}
			if q := g.watchQueries()[0]; strings.Contains(q, "sendInitialEvents=true") != watchList {
				t.Errorf("first watch %q, streaming list %t", q, watchList)
			}
			replaces := st.replaces

			// A gap longer than the history (5 events), with deletes in it.
			g.cut()
			if err := cms.Delete(ctx, "cm-2", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			delete(server, "cm-2")
			for i := range 8 {
				v := fmt.Sprint(10 + i)
				if _, err := cms.Update(ctx, cm("cm-0", v), metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				server["cm-0"] = v
			}
			g.open()
			st.waitEqual(t, server)
			if st.replaces != replaces+1 {
				t.Errorf("%d Replace calls after the gap, want 1 (a relist)", st.replaces-replaces)
			}
		})
	}
}

// bookmarkStore records bookmarks.
type bookmarkStore struct {
	*mapStore
	mu   sync.Mutex // guards last
	last string
}

func (s *bookmarkStore) Bookmark(rv string) error {
	s.mu.Lock()
	s.last = rv
	s.mu.Unlock()
	return s.apply(func() {})
}

// On a quiet watch, bookmarks carry the position past changes to other
// kinds, so that a restarted watch does not start from an old revision.
func TestEmbeddedServerBookmarkProgress(t *testing.T) {
	srv := apiservertest.NewServer(t, apiservertest.Options{BookmarkInterval: 20 * time.Millisecond})
	cfg := srv.Config()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := dyn.Resource(configMapsGVR).Namespace("default").Create(ctx, cm("cm", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lw, err := NewRESTListerWatcher[*corev1.ConfigMap](cfg, configMapsGVR, "default", RESTOptions[*corev1.ConfigMap]{})
	if err != nil {
		t.Fatal(err)
	}
	st := &bookmarkStore{mapStore: newMapStore()}
	r, err := New[*corev1.ConfigMap](lw, st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	defer func() {
		cancel()
		<-done
	}()
	st.waitEqual(t, map[string]string{"cm": "1"})

	// Changes to another kind only.
	secret := &unstructured.Unstructured{}
	secret.SetAPIVersion("v1")
	secret.SetKind("Secret")
	secret.SetName("s")
	secret.SetNamespace("default")
	created, err := dyn.Resource(corev1.SchemeGroupVersion.WithResource("secrets")).Namespace("default").Create(ctx, secret, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := created.GetResourceVersion()
	timeout := time.After(10 * time.Second)
	for r.LastSyncResourceVersion() != want {
		select {
		case <-st.changed:
		case <-timeout:
			t.Fatalf("position %q, want %q from a bookmark", r.LastSyncResourceVersion(), want)
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.last != want {
		t.Errorf("store's last bookmark %q, want %q", st.last, want)
	}
}

func failure(code int, reason, retryAfter string) *http.Response {
	h := http.Header{"Content-Type": {"application/json"}}
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
	body := fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":%q,"code":%d}`, reason, code)
	return &http.Response{StatusCode: code, Status: http.StatusText(code), Header: h,
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
}

// A broken watch answered by 429 (with Retry-After) and 500s is retried from
// the same resourceVersion after the waits, without a single relist, and
// loses nothing.
func TestEmbeddedServerThrottledWatch(t *testing.T) {
	srv := apiservertest.NewServer(t, apiservertest.Options{})
	cfg := srv.Config()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cms := dyn.Resource(configMapsGVR).Namespace("default")
	ctx := t.Context()
	if _, err := cms.Create(ctx, cm("cm", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr := hc.Transport
	if tr == nil {
		tr = http.DefaultTransport
	}
	g := &gate{next: tr}
	lw, err := NewRESTListerWatcher[*corev1.ConfigMap](cfg, configMapsGVR, "default",
		RESTOptions[*corev1.ConfigMap]{HTTPClient: &http.Client{Transport: g}})
	if err != nil {
		t.Fatal(err)
	}
	st := newMapStore()
	r, err := New[*corev1.ConfigMap](lw, st, Options{DisableWatchList: true, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	defer func() {
		cancel()
		<-done
	}()
	st.waitEqual(t, map[string]string{"cm": "1"})
	updated, err := cms.Update(ctx, cm("cm", "2"), metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st.waitEqual(t, map[string]string{"cm": "2"}) // the watch is open
	// The position moves right after the store call.
	rv := updated.GetResourceVersion()
	for deadline := time.Now().Add(10 * time.Second); r.LastSyncResourceVersion() != rv; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("position %q, want %q", r.LastSyncResourceVersion(), rv)
		}
	}

	g.mu.Lock()
	g.fail = []*http.Response{failure(429, "TooManyRequests", "1"), failure(500, "InternalError", ""), failure(500, "InternalError", "")}
	lists := g.lists
	g.mu.Unlock()
	start := time.Now()
	g.cut()
	if _, err := cms.Update(ctx, cm("cm", "3"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.open()
	st.waitEqual(t, map[string]string{"cm": "3"})
	if d := time.Since(start); d < time.Second {
		t.Errorf("recovered after %v, before the 1 s Retry-After", d)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lists != lists {
		t.Errorf("%d relists on 429/500, want none", g.lists-lists)
	}
	retries := g.watches[len(g.watches)-4:]
	for _, q := range retries {
		if !strings.Contains(q, "resourceVersion="+rv+"&") {
			t.Errorf("watch retry %q, want resourceVersion=%s", q, rv)
		}
	}
}
