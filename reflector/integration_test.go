package reflector_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/reflector"
)

// The integration tests below run on both servers (apiservertest.ForEachTarget):
// kloop's embedded API server and a real kube-apiserver with etcd.

var (
	configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")
	eventsGVR     = corev1.SchemeGroupVersion.WithResource("events")
)

// mapStore applies what the reflector pushes the way the informer's cache
// does, and records the calls.
type mapStore[T reflector.Object] struct {
	val func(T) string // the value recorded for an object

	mu       sync.Mutex        // guards objs, replaces, last
	objs     map[string]string // name → val(object)
	replaces int
	last     string        // the last bookmark's resourceVersion
	changed  chan struct{} // signalled (without blocking) on each call
}

func newMapStore[T reflector.Object](val func(T) string) *mapStore[T] {
	return &mapStore[T]{val: val, objs: map[string]string{}, changed: make(chan struct{}, 1)}
}

func (s *mapStore[T]) apply(f func()) error {
	s.mu.Lock()
	f()
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return nil
}
func (s *mapStore[T]) Add(o T) error {
	return s.apply(func() { s.objs[o.GetName()] = s.val(o) })
}
func (s *mapStore[T]) Update(o T) error { return s.Add(o) }
func (s *mapStore[T]) Delete(o T) error {
	return s.apply(func() { delete(s.objs, o.GetName()) })
}
func (s *mapStore[T]) Replace(os []T, _ string) error {
	return s.apply(func() {
		s.replaces++
		s.objs = map[string]string{}
		for _, o := range os {
			s.objs[o.GetName()] = s.val(o)
		}
	})
}
func (s *mapStore[T]) Bookmark(rv string) error { return s.apply(func() { s.last = rv }) }

func (s *mapStore[T]) replaceCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replaces
}

// waitEqual waits until the store holds want (20 s at most), beside the
// namespace's kube-root-ca.crt ConfigMap unless want names it (every
// namespace has one, from kube-controller-manager or the embedded server).
func (s *mapStore[T]) waitEqual(t *testing.T, want map[string]string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		s.mu.Lock()
		got := maps.Clone(s.objs)
		s.mu.Unlock()
		if _, named := want["kube-root-ca.crt"]; !named {
			delete(got, "kube-root-ca.crt")
		}
		ok := maps.Equal(got, want)
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
// put a gap into the reflector's view of the server, and answer watches
// with injected failures. It sits between the reflector and either server.
type gate struct {
	next http.RoundTripper

	mu      sync.Mutex // guards the fields below
	bodies  []*cutBody
	held    bool
	release chan struct{}
	cuts    int      // calls of cut so far
	watches []string // the query of each watch request
	lists   int      // list requests
	// listQueries holds the query of each list request; beforeList, if
	// set, runs before list request n (0-based) is sent.
	listQueries []string
	beforeList  func(n int)
	// fail answers the next watch requests with these responses instead
	// of the server's, in order.
	fail []*http.Response
}

func (g *gate) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Query().Get("watch") != "true" {
		g.mu.Lock()
		n, hook := g.lists, g.beforeList
		g.lists++
		g.listQueries = append(g.listQueries, req.URL.RawQuery)
		g.mu.Unlock()
		if hook != nil {
			hook(n)
		}
		return g.next.RoundTrip(req)
	}
	g.mu.Lock()
	g.watches = append(g.watches, req.URL.RawQuery)
	held, release, cuts := g.held, g.release, g.cuts
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
		b := &cutBody{ReadCloser: resp.Body}
		resp.Body = b
		g.mu.Lock()
		if g.cuts != cuts {
			// Sent before a cut, answered after it: it was open.
			b.cut.Store(true)
		} else {
			g.bodies = append(g.bodies, b)
		}
		g.mu.Unlock()
	}
	return resp, err
}

// cutBody is a watch's response body that the gate can cut: from then on
// reads fail, even one under way whose bytes arrived after the cut (closing
// the body does not stop a read already under way from returning data
// written after the cut).
type cutBody struct {
	io.ReadCloser
	cut atomic.Bool
}

var errCut = errors.New("watch cut by the test")

func (b *cutBody) Read(p []byte) (int, error) {
	if b.cut.Load() {
		return 0, errCut
	}
	n, err := b.ReadCloser.Read(p)
	if b.cut.Load() {
		return 0, errCut
	}
	return n, err
}

// cut closes the open watches and holds new ones until open is called.
func (g *gate) cut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held, g.release = true, make(chan struct{})
	g.cuts++
	for _, b := range g.bodies {
		b.cut.Store(true)
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

func (g *gate) listCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lists
}

// target is a server under test as the reflector tests use it: its Env, a
// clientset for writes and an HTTP client, behind a gate, for the reflector.
// Both have their own transport, closed when the test ends.
type target struct {
	env  *apiservertest.Env
	cfg  *rest.Config
	cs   *kubernetes.Clientset
	gate *gate
	lwc  *http.Client // the reflector's client, through gate
}

func newTarget(t *testing.T, env *apiservertest.Env) *target {
	t.Helper()
	cfg := env.Config()
	cs, err := kubernetes.NewForConfigAndClient(cfg, env.HTTPClient(nil))
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{}
	return &target{env: env, cfg: cfg, cs: cs, gate: g, lwc: env.HTTPClient(func(rt http.RoundTripper) http.RoundTripper { g.next = rt; return g })}
}

// runUntilEnd runs r until the test ends.
func runUntilEnd[T reflector.Object](t *testing.T, r *reflector.Reflector[T]) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func event(ns, name, msg string) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: name},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "subject"},
		Reason:         "Test", Message: msg, Type: corev1.EventTypeNormal,
	}
}

func eventMessage(e *corev1.Event) string { return e.Message }

// setMessage changes an event's message (a merge patch: no resourceVersion
// needed) and returns its new resourceVersion.
func (tg *target) setMessage(t *testing.T, ctx context.Context, name, msg string) string {
	t.Helper()
	patch := fmt.Appendf(nil, `{"message":%q}`, msg)
	out, err := tg.cs.CoreV1().Events(tg.env.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out.ResourceVersion
}

// serverEvents lists the events of the test's namespace: name → message.
func (tg *target) serverEvents(t *testing.T, ctx context.Context) map[string]string {
	t.Helper()
	l, err := tg.cs.CoreV1().Events(tg.env.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range l.Items {
		out[e.Name] = e.Message
	}
	return out
}

// rvAtLeast reports whether resourceVersion a is at or after b. Kubernetes
// resourceVersions are opaque; both servers make them decimal numbers that
// grow with each write, and tests compare only their order.
func rvAtLeast(t *testing.T, a, b string) bool {
	t.Helper()
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("resourceVersions %q, %q are not decimal", a, b)
	}
	return x >= y
}

// TestServer runs the reflector with the REST ListerWatcher against each
// server: initial sync (streaming list; list+watch; a streaming list the
// server refuses with 422, falling back to list+watch), updates, creates
// and deletes through the watch, then a gap in the watch with a delete and
// updates in it, after which the server's history is compacted: the watch
// from the old position gets 410 Gone and one relist repairs the store.
//
// The resource is core/v1 Events: kube-apiserver keeps no watch cache for
// them, so its watches see etcd's compaction and answer 410 as kloop's
// embedded server does (for cached kinds kube-apiserver's watch cache keeps
// serving old positions after a compaction).
//
// Each mode runs twice: with lists and watches in JSON, and in protobuf
// (RESTOptions.Protobuf), where every answer the reflector reads — lists,
// watch events, bookmarks, the 410 ERROR event — is protobuf.
func TestServer(t *testing.T) {
	for _, mode := range []string{"watch-list", "list+watch", "watch-list rejected", "watch-list protobuf", "list+watch protobuf", "watch-list rejected protobuf"} {
		t.Run(mode, func(t *testing.T) {
			mode, pb := strings.CutSuffix(mode, " protobuf")
			apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
				tg := newTarget(t, env)
				ctx := t.Context()
				var answers contentTypes
				lwc := *tg.lwc
				lwc.Transport = answers.record(tg.lwc.Transport)
				events := tg.cs.CoreV1().Events(env.Namespace)
				server := map[string]string{}
				for i := range 3 {
					name := fmt.Sprintf("e-%d", i)
					if _, err := events.Create(ctx, event(env.Namespace, name, "1"), metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
					server[name] = "1"
				}
				if mode == "watch-list rejected" {
					// What a server without streaming lists answers.
					tg.gate.fail = []*http.Response{failure(422, "Invalid", "")}
				}
				lw, err := reflector.NewRESTListerWatcher[*corev1.Event](tg.cfg, eventsGVR, env.Namespace,
					reflector.RESTOptions[*corev1.Event]{HTTPClient: &lwc, Protobuf: pb})
				if err != nil {
					t.Fatal(err)
				}
				st := newMapStore(eventMessage)
				r, err := reflector.New[*corev1.Event](lw, st, reflector.Options{DisableWatchList: mode == "list+watch",
					InitialBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				runUntilEnd(t, r)

				// Sync.
				st.waitEqual(t, server)

				// Updates, creates and deletes through the watch.
				server["e-0"] = "2"
				tg.setMessage(t, ctx, "e-0", "2")
				if _, err := events.Create(ctx, event(env.Namespace, "e-3", "1"), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				server["e-3"] = "1"
				if err := events.Delete(ctx, "e-1", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				delete(server, "e-1")
				st.waitEqual(t, server)
				// Watch events reach the store only after the sync completed.
				if !r.HasSynced() {
					t.Error("HasSynced false after sync")
				}
				qs := tg.gate.watchQueries()
				streamed := strings.Contains(qs[0], "sendInitialEvents=true")
				if streamed != (mode != "list+watch") {
					t.Errorf("first watch %q in mode %s", qs[0], mode)
				}
				lists := tg.gate.listCount()
				switch mode {
				case "watch-list":
					if lists != 0 {
						t.Errorf("%d list requests with a streaming list", lists)
					}
				case "watch-list rejected":
					if lists == 0 || len(qs) < 2 || strings.Contains(qs[1], "sendInitialEvents") {
						t.Errorf("no fallback to list+watch after a 422: %d lists, watches %q", lists, qs)
					}
				}

				replaces := st.replaceCount()

				// A gap with a delete in it; then the history is compacted.
				tg.gate.cut()
				if err := events.Delete(ctx, "e-2", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				delete(server, "e-2")
				for i := range 3 {
					v := fmt.Sprint(10 + i)
					tg.setMessage(t, ctx, "e-0", v)
					server["e-0"] = v
				}
				if err := env.Compact(ctx); err != nil {
					t.Fatal(err)
				}
				tg.gate.open()
				st.waitEqual(t, server)
				if got := st.replaceCount() - replaces; got != 1 {
					t.Errorf("%d Replace calls after the gap, want 1 (a relist)", got)
				}
				if have := tg.serverEvents(t, ctx); !maps.Equal(have, server) {
					t.Errorf("the server holds %v, the test expected %v", have, server)
				}
				want := "application/json"
				if pb {
					want = "application/vnd.kubernetes.protobuf"
				}
				answers.only(t, want)
			})
		})
	}
}

// contentTypes records the media types of the successful answers a
// transport got.
type contentTypes struct {
	mu  sync.Mutex
	got map[string]int // media type -> answers
}

func (c *contentTypes) record(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(r)
		if err == nil && resp.StatusCode == http.StatusOK {
			mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			c.mu.Lock()
			if c.got == nil {
				c.got = map[string]int{}
			}
			c.got[mt]++
			c.mu.Unlock()
		}
		return resp, err
	})
}

// only fails unless every answer recorded was of media type mt.
func (c *contentTypes) only(t *testing.T, mt string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.got) != 1 || c.got[mt] == 0 {
		t.Errorf("answers by media type %v, want %s only", c.got, mt)
	}
}

// A relist in pages (PageSize 10, 25 Events) after a 410: the relist is a
// consistent read (resourceVersion=""), which both servers page; the store
// gets it in one Replace. Then the same with the history compacted between
// the relist's first and second page: the continue token has expired (410),
// and the reflector starts the list over, which succeeds.
//
// The initial list (resourceVersion="0") is not checked for pages: a server
// may serve it from its watch cache and ignore the limit. Events again:
// kube-apiserver pages them from etcd, so their continue tokens expire
// with a compaction.
func TestServerPaginatedRelist(t *testing.T) {
	for _, expire := range []bool{false, true} {
		t.Run(fmt.Sprintf("expired continue=%t", expire), func(t *testing.T) {
			apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
				tg := newTarget(t, env)
				ctx := t.Context()
				events := tg.cs.CoreV1().Events(env.Namespace)
				server := map[string]string{}
				for i := range 25 {
					name := fmt.Sprintf("e-%02d", i)
					if _, err := events.Create(ctx, event(env.Namespace, name, "1"), metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
					server[name] = "1"
				}
				lw, err := reflector.NewRESTListerWatcher[*corev1.Event](tg.cfg, eventsGVR, env.Namespace,
					reflector.RESTOptions[*corev1.Event]{HTTPClient: tg.lwc})
				if err != nil {
					t.Fatal(err)
				}
				st := newMapStore(eventMessage)
				r, err := reflector.New[*corev1.Event](lw, st, reflector.Options{DisableWatchList: true, PageSize: 10,
					InitialBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				runUntilEnd(t, r)
				st.waitEqual(t, server)
				for deadline := time.Now().Add(10 * time.Second); !r.HasSynced(); time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("not synced after the Replace")
					}
				}

				// A gap, compacted: the watch gets 410 and the reflector
				// relists in pages.
				g := tg.gate
				g.cut()
				g.mu.Lock()
				first := g.lists
				if expire {
					g.beforeList = func(n int) {
						if n == first+1 { // the relist's second page
							tg.setMessage(t, ctx, "e-00", "3")
							if err := env.Compact(ctx); err != nil {
								t.Error(err)
							}
						}
					}
					server["e-00"] = "3"
				}
				g.mu.Unlock()
				// Two writes: a compaction at the revision right after the
				// reflector's position would leave that position watchable.
				tg.setMessage(t, ctx, "e-24", "2")
				tg.setMessage(t, ctx, "e-23", "2")
				server["e-24"], server["e-23"] = "2", "2"
				if err := env.Compact(ctx); err != nil {
					t.Fatal(err)
				}
				g.open()
				st.waitEqual(t, server)
				if n := st.replaceCount(); n != 2 {
					t.Errorf("%d Replace calls, want 2 (the list and one relist)", n)
				}
				g.mu.Lock()
				qs := slices.Clone(g.listQueries[first:])
				g.mu.Unlock()
				want := []string{"limit=10", "continue=", "continue="}
				if expire {
					// The expired second page, then the list over again.
					want = []string{"limit=10", "continue=", "limit=10", "continue=", "continue="}
				}
				if len(qs) != len(want) {
					t.Fatalf("relist requests %q, want %d like %q", qs, len(want), want)
				}
				for i, q := range qs {
					if !strings.HasPrefix(q, want[i]) || want[i] == "limit=10" && q != want[i] {
						t.Errorf("relist request %d: %q, want %q", i, q, want[i])
					}
				}
			})
		})
	}
}

// A streaming list ends its initial events with a bookmark at the position
// the list was read at: the reflector's position moves past changes to
// other kinds made before it started, although no object of its own kind
// carries that resourceVersion. (Unlike periodic bookmarks, which
// kube-apiserver sends about once a minute, this one is immediate on both
// servers.)
func TestServerInitialEventsBookmark(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		tg := newTarget(t, env)
		ctx := t.Context()
		created, err := tg.cs.CoreV1().ConfigMaps(env.Namespace).Create(ctx,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// A change to another kind only, after the ConfigMap.
		secret, err := tg.cs.CoreV1().Secrets(env.Namespace).Create(ctx,
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rvAtLeast(t, created.ResourceVersion, secret.ResourceVersion) {
			t.Fatalf("ConfigMap at %s, Secret created after it at %s", created.ResourceVersion, secret.ResourceVersion)
		}
		lw, err := reflector.NewRESTListerWatcher[*corev1.ConfigMap](tg.cfg, configMapsGVR, env.Namespace,
			reflector.RESTOptions[*corev1.ConfigMap]{HTTPClient: tg.lwc})
		if err != nil {
			t.Fatal(err)
		}
		st := newMapStore(func(c *corev1.ConfigMap) string { return c.Data["v"] })
		r, err := reflector.New[*corev1.ConfigMap](lw, st, reflector.Options{})
		if err != nil {
			t.Fatal(err)
		}
		runUntilEnd(t, r)
		st.waitEqual(t, map[string]string{"cm": "1"})
		// The position is set right after the store's Replace.
		for deadline := time.Now().Add(10 * time.Second); !r.HasSynced(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("not synced after the Replace")
			}
		}
		if pos := r.LastSyncResourceVersion(); !rvAtLeast(t, pos, secret.ResourceVersion) {
			t.Fatalf("position %s after the streaming list, want at least %s (the Secret's)", pos, secret.ResourceVersion)
		}
		if q := tg.gate.watchQueries(); len(q) == 0 || !strings.Contains(q[0], "sendInitialEvents=true") {
			t.Fatalf("watches %q, want a streaming list", q)
		}
	})
}

// On a quiet watch, periodic bookmarks carry the position past changes to
// other kinds, so that a restarted watch does not start from an old
// revision. Embedded only: kube-apiserver sends them about once a minute
// (not configurable), too slow for a test; Options.BookmarkInterval makes
// the embedded server send them every 20 ms.
func TestEmbeddedServerPeriodicBookmarks(t *testing.T) {
	env := apiservertest.Start(t, apiservertest.Embedded, apiservertest.Options{BookmarkInterval: 20 * time.Millisecond})
	tg := newTarget(t, env)
	ctx := t.Context()
	if _, err := tg.cs.CoreV1().ConfigMaps(env.Namespace).Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lw, err := reflector.NewRESTListerWatcher[*corev1.ConfigMap](tg.cfg, configMapsGVR, env.Namespace,
		reflector.RESTOptions[*corev1.ConfigMap]{HTTPClient: tg.lwc})
	if err != nil {
		t.Fatal(err)
	}
	st := newMapStore(func(c *corev1.ConfigMap) string { return c.Data["v"] })
	r, err := reflector.New[*corev1.ConfigMap](lw, st, reflector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runUntilEnd(t, r)
	st.waitEqual(t, map[string]string{"cm": "1"})

	// Changes to another kind only.
	created, err := tg.cs.CoreV1().Secrets(env.Namespace).Create(ctx,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := created.ResourceVersion
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
func TestServerThrottledWatch(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		tg := newTarget(t, env)
		ctx := t.Context()
		cms := tg.cs.CoreV1().ConfigMaps(env.Namespace)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"v": "1"}}
		cm, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		lw, err := reflector.NewRESTListerWatcher[*corev1.ConfigMap](tg.cfg, configMapsGVR, env.Namespace,
			reflector.RESTOptions[*corev1.ConfigMap]{HTTPClient: tg.lwc})
		if err != nil {
			t.Fatal(err)
		}
		st := newMapStore(func(c *corev1.ConfigMap) string { return c.Data["v"] })
		r, err := reflector.New[*corev1.ConfigMap](lw, st, reflector.Options{DisableWatchList: true, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		runUntilEnd(t, r)
		st.waitEqual(t, map[string]string{"cm": "1"})
		cm.Data["v"] = "2"
		updated, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st.waitEqual(t, map[string]string{"cm": "2"}) // the watch is open
		// The position moves right after the store call.
		rv := updated.ResourceVersion
		for deadline := time.Now().Add(10 * time.Second); r.LastSyncResourceVersion() != rv; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("position %q, want %q", r.LastSyncResourceVersion(), rv)
			}
		}

		g := tg.gate
		g.mu.Lock()
		g.fail = []*http.Response{failure(429, "TooManyRequests", "1"), failure(500, "InternalError", ""), failure(500, "InternalError", "")}
		lists := g.lists
		g.mu.Unlock()
		start := time.Now()
		g.cut()
		updated.Data["v"] = "3"
		if _, err := cms.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
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
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
