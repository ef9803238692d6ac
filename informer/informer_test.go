package informer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/cache"
	"kloop.dev/kloop/reflector"
)

func newPodInformer(t *testing.T, srv *fakeServer, opts Options[*corev1.Pod]) *Informer[*corev1.Pod] {
	t.Helper()
	if opts.Reflector.InitialBackoff == 0 {
		opts.Reflector = quickReflector
	}
	opts.DetectMutations = true
	opts.OnMutation = func(err error) { t.Error(err) }
	inf, err := New[*corev1.Pod](srv, opts)
	if err != nil {
		t.Fatal(err)
	}
	return inf
}

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// bothDeliveries runs a handler test with buffered handlers (the default)
// and with inline ones (HandlerOptions.Inline): everything a handler can
// observe is the same.
func bothDeliveries(t *testing.T, f func(*testing.T, HandlerOptions)) {
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%t", inline), func(t *testing.T) { f(t, HandlerOptions{Inline: inline}) })
	}
}

func waitSynced(t *testing.T, ctx context.Context, reg *Registration) {
	t.Helper()
	for !reg.HasSynced() {
		select {
		case <-ctx.Done():
			t.Fatal("handler never synced")
		case <-time.After(time.Millisecond):
		}
	}
}

func TestSyncThenEvents(t *testing.T) { bothDeliveries(t, testSyncThenEvents) }

func testSyncThenEvents(t *testing.T, ho HandlerOptions) {
	ctx := timeout(t)
	srv := newFakeServer(pod("a"), pod("b"))
	inf := newPodInformer(t, srv, Options[*corev1.Pod]{})
	rec := newRecorder()
	reg, err := inf.AddHandler(rec, ho)
	if err != nil {
		t.Fatal(err)
	}
	if reg.HasSynced() || inf.HasSynced() {
		t.Fatal("synced before Run")
	}
	start(t, inf)
	if err := inf.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	waitSynced(t, ctx, reg)
	<-srv.watchOpened

	srv.create(pod("c"))
	srv.update(pod("a", "app", "web"))
	srv.remove(pod("b"))
	got := rec.waitFor(t, ctx, 5)
	want := []string{
		"add a@1 initial=true",
		"add b@2 initial=true",
		"add c@3 initial=false",
		"update a@1->4",
		"delete default/b@5 unknown=false",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events:\n got %q\nwant %q", got, want)
	}
	if err := inf.Check(); err != nil {
		t.Fatal(err)
	}
	assertCacheEquals(t, inf, srv)
	if a, ok := inf.Get("default", "a"); !ok || a.Labels["app"] != "web" {
		t.Fatalf("Get a = %v, %t", a, ok)
	}
	if got := len(inf.ListNamespace("default")); got != 2 {
		t.Fatalf("ListNamespace = %d objects, want 2", got)
	}
	if inf.LastSyncResourceVersion() != "5" {
		t.Fatalf("LastSyncResourceVersion = %q", inf.LastSyncResourceVersion())
	}
}

// cacheState returns the informer's cache as key → resourceVersion, the
// form of fakeServer.state.
func cacheState(inf *Informer[*corev1.Pod]) map[string]string {
	got := map[string]string{}
	for _, p := range inf.List() {
		got[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	return got
}

func assertCacheEquals(t *testing.T, inf *Informer[*corev1.Pod], srv *fakeServer) {
	t.Helper()
	got := cacheState(inf)
	want := srv.state()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("cache %v, server %v", got, want)
	}
}

// Every handler call must find the cache already holding (at least) the
// state of its event.
func TestCacheUpdatedBeforeNotification(t *testing.T) {
	bothDeliveries(t, testCacheUpdatedBeforeNotification)
}

func testCacheUpdatedBeforeNotification(t *testing.T, ho HandlerOptions) {
	ctx := timeout(t)
	srv := newFakeServer(pod("a"), pod("b"))
	inf := newPodInformer(t, srv, Options[*corev1.Pod]{})
	var checked atomic.Int32
	rec := newRecorder()
	rec.check = func(ev string, p *corev1.Pod) {
		checked.Add(1)
		cached, ok := inf.Get(p.Namespace, p.Name)
		if ev[:6] == "delete" {
			if ok {
				t.Errorf("%s: object still cached", ev)
			}
			return
		}
		if !ok {
			t.Errorf("%s: not in the cache", ev)
			return
		}
		c, _ := strconv.Atoi(cached.ResourceVersion)
		e, _ := strconv.Atoi(p.ResourceVersion)
		if c < e {
			t.Errorf("%s: cache has resourceVersion %d, older than the event's", ev, c)
		}
	}
	if _, err := inf.AddHandler(rec, ho); err != nil {
		t.Fatal(err)
	}
	start(t, inf)
	<-srv.watchOpened
	// No object is deleted before all adds and updates are seen, so an add
	// or update must find its object cached at least as new as the event.
	for i := range 50 {
		srv.create(pod(fmt.Sprint("p", i)))
		srv.update(pod(fmt.Sprint("p", i), "v", "2"))
	}
	rec.waitFor(t, ctx, 2+50*2)
	for i := range 50 {
		srv.remove(pod(fmt.Sprint("p", i)))
	}
	rec.waitFor(t, ctx, 2+50*3)
	if checked.Load() != 152 {
		t.Fatalf("checked %d calls", checked.Load())
	}
}

// A watch that breaks with 410 Gone while objects were deleted, changed and
// created: the relist yields tombstones with FinalStateUnknown carrying the
// last cached state, updates and adds, and the cache equals the server.
func TestRelistTombstones(t *testing.T) { bothDeliveries(t, testRelistTombstones) }

func testRelistTombstones(t *testing.T, ho HandlerOptions) {
	ctx := timeout(t)
	srv := newFakeServer(pod("a"), pod("b"), pod("c"))
	inf := newPodInformer(t, srv, Options[*corev1.Pod]{})
	rec := newRecorder()
	reg, err := inf.AddHandler(rec, ho)
	if err != nil {
		t.Fatal(err)
	}
	start(t, inf)
	waitSynced(t, ctx, reg)
	<-srv.watchOpened
	srv.update(pod("a", "x", "1")) // rv 4, seen
	rec.waitFor(t, ctx, 4)

	// The gap: nothing of this reaches the watch.
	srv.change("DELETED", pod("b"), false)            // rv 5
	srv.change("MODIFIED", pod("c", "y", "1"), false) // rv 6
	srv.change("ADDED", pod("d"), false)              // rv 7
	srv.gone()

	got := rec.waitFor(t, ctx, 7)
	want := []string{
		"add a@1 initial=true",
		"add b@2 initial=true",
		"add c@3 initial=true",
		"update a@1->4",
		// a@4, relisted unchanged, is no notification (client-go: a resync).
		"update c@3->6",
		"add d@7 initial=false",
		"delete default/b@2 unknown=true",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events:\n got %q\nwant %q", got, want)
	}
	assertCacheEquals(t, inf, srv)
	srv.mu.Lock()
	lists := srv.lists
	srv.mu.Unlock()
	if lists != 2 {
		t.Fatalf("%d lists, want 2", lists)
	}
}

// A relist that finds objects unchanged (the resourceVersion the cache
// holds) refreshes the cache without notifying handlers, as client-go treats
// such Replaced deltas as resyncs: a 410 does not make every controller
// reconcile every object. Changed, new and missing objects are notified.
func TestRelistUnchangedIsSilent(t *testing.T) { bothDeliveries(t, testRelistUnchangedIsSilent) }

func testRelistUnchangedIsSilent(t *testing.T, ho HandlerOptions) {
	ctx := timeout(t)
	srv := newFakeServer(pod("a"), pod("b"))
	inf := newPodInformer(t, srv, Options[*corev1.Pod]{})
	rec := newRecorder()
	reg, err := inf.AddHandler(rec, ho)
	if err != nil {
		t.Fatal(err)
	}
	start(t, inf)
	waitSynced(t, ctx, reg)
	<-srv.watchOpened
	before, _ := inf.Get("default", "a")
	srv.gone()
	<-srv.watchOpened // the relist is in the cache once the new watch opens
	waitUntil(t, ctx, "the relisted a in the cache", func() bool {
		after, _ := inf.Get("default", "a")
		return after != before
	})
	srv.create(pod("c")) // anything the relist notified comes before it
	got := rec.waitFor(t, ctx, 3)
	want := []string{"add a@1 initial=true", "add b@2 initial=true", "add c@3 initial=false"}
	if !slices.Equal(got, want) {
		t.Fatalf("events:\n got %q\nwant %q", got, want)
	}
	assertCacheEquals(t, inf, srv)
}

// Ten fast handlers get every event while a slow one is stuck; the slow one
// then gets them all, in order.
func TestSlowHandlerDoesNotBlockOthers(t *testing.T) {
	ctx := timeout(t)
	srv := newFakeServer()
	inf := newPodInformer(t, srv, Options[*corev1.Pod]{})
	release := make(chan struct{})
	slow := newRecorder()
	var once sync.Once
	slow.check = func(string, *corev1.Pod) { once.Do(func() { <-release }) }
	slowReg, err := inf.AddHandler(slow, HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fast := make([]*recorder, 10)
	for i := range fast {
		fast[i] = newRecorder()
		if _, err := inf.AddHandler(fast[i], HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	start(t, inf)
	<-srv.watchOpened
	const n = 1000
	for i := range n {
		srv.create(pod(fmt.Sprint("p", i)))
	}
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("add p%d@%d initial=false", i, i+1))
	}
	for _, r := range fast {
		if got := r.waitFor(t, ctx, n); !slices.Equal(got, want) {
			t.Fatalf("fast handler got %d events, out of order or wrong", len(got))
		}
	}
	if got := len(slow.snapshot()); got != 0 {
		t.Fatalf("slow handler got %d events while stuck", got)
	}
	// One notification is being delivered; the others wait in its buffer.
	if got := slowReg.Pending(); got != n-1 {
		t.Fatalf("slow handler has %d pending, want %d", got, n-1)
	}
	close(release)
	if got := slow.waitFor(t, ctx, n); !slices.Equal(got, want) {
		t.Fatal("slow handler's events wrong or out of order")
	}
}

func TestLateHandlerGetsSyntheticAdds(t *testing.T) {
	bothDeliveries(t, testLateHandlerGetsSyntheticAdds)
}

func testLateHandlerGetsSyntheticAdds(t *testing.T, ho HandlerOptions) {
	ctx := timeout(t)
	srv := newFakeServer(pod("a"), pod("b"))
	inf := newPodInformer(t, srv, Options[*corev1.Pod]{})
	start(t, inf)
	if err := inf.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	<-srv.watchOpened
	srv.create(pod("c"))
	for inf.Len() != 3 {
		time.Sleep(time.Millisecond)
	}
	late := newRecorder()
	reg, err := inf.AddHandler(late, ho)
	if err != nil {
		t.Fatal(err)
	}
	waitSynced(t, ctx, reg)
	got := late.snapshot()
	slices.Sort(got)
	want := []string{"add a@1 initial=true", "add b@2 initial=true", "add c@3 initial=true"}
	if !slices.Equal(got, want) {
		t.Fatalf("synthetic adds %q, want %q", got, want)
	}
	srv.remove(pod("a"))
	if got := late.waitFor(t, ctx, 4); got[3] != "delete default/a@4 unknown=false" {
		t.Fatalf("after the synthetic adds: %q", got[3])
	}
}

func TestRemoveHandler(t *testing.T) { bothDeliveries(t, testRemoveHandler) }

func testRemoveHandler(t *testing.T, ho HandlerOptions) {
	ctx := timeout(t)
	srv := newFakeServer(pod("a"))
	inf := newPodInformer(t, srv, Options[*corev1.Pod]{})
	kept, gone := newRecorder(), newRecorder()
	if _, err := inf.AddHandler(kept, ho); err != nil {
		t.Fatal(err)
	}
	reg, err := inf.AddHandler(gone, ho)
	if err != nil {
		t.Fatal(err)
	}
	start(t, inf)
	waitSynced(t, ctx, reg)
	gone.waitFor(t, ctx, 1)
	if err := inf.RemoveHandler(reg); err != nil {
		t.Fatal(err)
	}
	if err := inf.RemoveHandler(reg); !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("second RemoveHandler: %v", err)
	}
	<-srv.watchOpened
	srv.create(pod("b"))
	kept.waitFor(t, ctx, 2)
	if got := gone.snapshot(); len(got) != 1 {
		t.Fatalf("removed handler got %q", got)
	}
}

// Resyncs reach only the handlers that asked, as updates with old == new,
// every period ± 10 %.
func TestResync(t *testing.T) { bothDeliveries(t, testResync) }

func testResync(t *testing.T, ho HandlerOptions) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(pod("a"), pod("b"))
		inf := newPodInformer(t, srv, Options[*corev1.Pod]{})
		every, never, dflt := newRecorder(), newRecorder(), newRecorder()
		var sameObj atomic.Bool
		sameObj.Store(true)
		if _, err := inf.AddHandler(HandlerFuncs[*corev1.Pod]{
			AddFunc: every.OnAdd,
			UpdateFunc: func(old, p *corev1.Pod) {
				if old != p {
					sameObj.Store(false)
				}
				every.OnUpdate(old, p)
			},
		}, HandlerOptions{ResyncPeriod: time.Minute, Inline: ho.Inline}); err != nil {
			t.Fatal(err)
		}
		if _, err := inf.AddHandler(never, HandlerOptions{ResyncPeriod: NoResync, Inline: ho.Inline}); err != nil {
			t.Fatal(err)
		}
		if _, err := inf.AddHandler(dflt, ho); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- inf.Run(ctx) }()
		synctest.Wait()
		if got := len(every.snapshot()); got != 2 {
			t.Fatalf("%d events before the first resync", got)
		}
		time.Sleep(54 * time.Second) // < 0.9 min
		synctest.Wait()
		if got := len(every.snapshot()); got != 2 {
			t.Fatalf("resynced before 0.9×period: %q", every.snapshot())
		}
		time.Sleep(12 * time.Second) // > 1.1 min
		synctest.Wait()
		got := every.snapshot()
		if len(got) != 4 || !slices.Contains(got, "update a@1->1") || !slices.Contains(got, "update b@2->2") {
			t.Fatalf("after one period: %q", got)
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if n := len(every.snapshot()); n < 6 || n > 8 {
			t.Fatalf("after three periods %d events", n)
		}
		if !sameObj.Load() {
			t.Fatal("resync update with old != new")
		}
		if got := len(never.snapshot()); got != 2 {
			t.Fatalf("NoResync handler got %d events", got)
		}
		if got := len(dflt.snapshot()); got != 2 {
			t.Fatalf("default (10 h) handler got %d events after 3 min", got)
		}
		time.Sleep(11 * time.Hour)
		synctest.Wait()
		if got := len(dflt.snapshot()); got != 4 {
			t.Fatalf("default handler got %d events after 11 h", got)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func TestDefaultTransform(t *testing.T) {
	withMF := func(name string) *corev1.Pod {
		// Distinct copies of each string, as a JSON decoder makes them.
		p := pod(name, strings.Clone("app.kubernetes.io/name"), strings.Clone("web"), strings.Clone("tier"), strings.Clone("frontend"))
		p.Namespace = strings.Clone(p.Namespace)
		p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: strings.Clone("apps/v1"), Kind: strings.Clone("ReplicaSet"), Name: "web-1", UID: "u"}}
		return p
	}
	for _, tc := range []struct {
		name         string
		opts         Options[*corev1.Pod]
		wantMF       bool
		wantInterned bool
	}{
		{"default", Options[*corev1.Pod]{}, false, true},
		{"keep managed fields", Options[*corev1.Pod]{KeepManagedFields: true}, true, true},
		{"no interning", Options[*corev1.Pod]{DisableInterning: true}, false, false},
		{"user transform after", Options[*corev1.Pod]{Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
			p.Spec = corev1.PodSpec{}
			p.Annotations = map[string]string{"transformed": "yes"}
			return p, nil
		}}, false, true},
		{"failing user transform keeps the object", Options[*corev1.Pod]{Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
			return nil, errors.New("boom")
		}}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := timeout(t)
			srv := newFakeServer(withMF("a"), withMF("b"))
			inf := newPodInformer(t, srv, tc.opts)
			start(t, inf)
			if err := inf.WaitForCacheSync(ctx); err != nil {
				t.Fatal(err)
			}
			a, _ := inf.Get("default", "a")
			b, _ := inf.Get("default", "b")
			if got := a.ManagedFields != nil; got != tc.wantMF {
				t.Fatalf("managedFields kept = %t", got)
			}
			same := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
			interned := same(a.Labels["tier"], b.Labels["tier"]) &&
				same(a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind) &&
				same(a.Namespace, b.Namespace)
			if interned != tc.wantInterned {
				t.Fatalf("strings shared = %t", interned)
			}
			if got := a.Annotations["transformed"] == "yes"; got != (tc.name == "user transform after") {
				t.Fatalf("user transform applied = %t", got)
			}
			if inf.Len() != 2 {
				t.Fatalf("%d objects cached, want 2", inf.Len())
			}
		})
	}
}

func TestLifecycleErrors(t *testing.T) {
	srv := newFakeServer(pod("a"))
	if _, err := New[*corev1.Pod](nil, Options[*corev1.Pod]{}); err == nil {
		t.Fatal("nil ListerWatcher accepted")
	}
	if _, err := New[*corev1.Pod](srv, Options[*corev1.Pod]{OnMutation: func(error) {}}); err == nil {
		t.Fatal("OnMutation without DetectMutations accepted")
	}
	inf := newPodInformer(t, srv, Options[*corev1.Pod]{})
	if _, err := inf.AddHandler(nil, HandlerOptions{}); err == nil {
		t.Fatal("nil handler accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- inf.Run(ctx) }()
	if err := inf.WaitForCacheSync(timeout(t)); err != nil {
		t.Fatal(err)
	}
	if err := inf.Run(ctx); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("second Run: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddHandler(newRecorder(), HandlerOptions{}); !errors.Is(err, ErrStopped) {
		t.Fatalf("AddHandler after stop: %v", err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if err := newPodInformer(t, newFakeServer(), Options[*corev1.Pod]{}).WaitForCacheSync(ctx2); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitForCacheSync on a cancelled ctx: %v", err)
	}
}

// A panicking handler is logged and keeps receiving later notifications;
// the others are unaffected.
func TestPanickingHandler(t *testing.T) { bothDeliveries(t, testPanickingHandler) }

func testPanickingHandler(t *testing.T, ho HandlerOptions) {
	ctx := timeout(t)
	srv := newFakeServer(pod("a"), pod("b"))
	inf := newPodInformer(t, srv, Options[*corev1.Pod]{})
	rec := newRecorder()
	rec.check = func(ev string, p *corev1.Pod) {
		if p.Name == "a" {
			panic("boom")
		}
	}
	reg, err := inf.AddHandler(rec, ho)
	if err != nil {
		t.Fatal(err)
	}
	start(t, inf)
	waitSynced(t, ctx, reg)
	if got := rec.waitFor(t, ctx, 1); !slices.Equal(got, []string{"add b@2 initial=true"}) {
		t.Fatalf("events %q", got)
	}
}

// mirror is a handler that rebuilds the cache from its notifications and
// fails on any inconsistency (an add of a known key, an update or delete of
// an unknown one, an update whose old state is not the one it holds).
type mirror struct {
	t  *testing.T
	mu sync.Mutex // guards objs
	// objs is the handler's view: key → resourceVersion.
	objs map[string]string
}

func (m *mirror) OnAdd(p *corev1.Pod, _ bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := p.Namespace + "/" + p.Name
	if _, ok := m.objs[k]; ok {
		m.t.Errorf("add of %s, already known", k)
	}
	m.objs[k] = p.ResourceVersion
}

func (m *mirror) OnUpdate(old, p *corev1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := p.Namespace + "/" + p.Name
	if rv, ok := m.objs[k]; !ok || rv != old.ResourceVersion {
		m.t.Errorf("update of %s from %s, handler has %q", k, old.ResourceVersion, rv)
	}
	m.objs[k] = p.ResourceVersion
}

func (m *mirror) OnDelete(d Deleted[*corev1.Pod]) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objs[d.Key]; !ok {
		m.t.Errorf("delete of %s, unknown", d.Key)
	}
	delete(m.objs, d.Key)
}

func (m *mirror) view() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.objs)
}

// Handlers added and removed while changes and relists flow each see a
// consistent stream — every object added once, updated from the state they
// hold, deleted once — that ends equal to the cache.
func TestHandlersAddedDuringChurn(t *testing.T) { bothDeliveries(t, testHandlersAddedDuringChurn) }

func testHandlersAddedDuringChurn(t *testing.T, ho HandlerOptions) {
	ctx := timeout(t)
	srv := newFakeServer()
	inf := newPodInformer(t, srv, Options[*corev1.Pod]{})
	start(t, inf)
	if err := inf.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	<-srv.watchOpened
	var mirrors []*mirror
	var regs []*Registration
	for i := range 400 {
		srv.churn(i, 40, i <= 200) // the relist comes at i == 200
		if i%40 == 0 {
			m := &mirror{t: t, objs: map[string]string{}}
			reg, err := inf.AddHandler(m, ho)
			if err != nil {
				t.Fatal(err)
			}
			mirrors, regs = append(mirrors, m), append(regs, reg)
		}
		if i == 200 {
			srv.gone()        // a relist in the middle
			<-srv.watchOpened // the fake does not replay: wait for the new watch
			if err := inf.RemoveHandler(regs[1]); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Let everything settle: the cache equals the server, and every
	// remaining handler's view equals the cache.
	want := srv.state()
	waitUntil(t, ctx, "cache equal to the server", func() bool {
		return maps.Equal(cacheState(inf), want)
	})
	for i, m := range mirrors {
		if i == 1 {
			continue // removed
		}
		waitUntil(t, ctx, fmt.Sprintf("handler %d's view equal to the cache", i), func() bool {
			return regs[i].Pending() == 0 && maps.Equal(m.view(), want)
		})
	}
}

// An inline handler is called on the informer's goroutine: a late one gets
// its synthetic adds before AddHandler returns, and while one is stuck the
// cache waits for it too (the price of Inline, documented on the option).
func TestInlineHandler(t *testing.T) {
	ctx := timeout(t)
	srv := newFakeServer(pod("a"), pod("b"))
	inf := newPodInformer(t, srv, Options[*corev1.Pod]{})
	start(t, inf)
	if err := inf.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	<-srv.watchOpened
	late := newRecorder()
	release, stuck := make(chan struct{}), make(chan struct{})
	late.check = func(ev string, p *corev1.Pod) {
		if p.Name == "c" {
			close(stuck)
			<-release
		}
	}
	reg, err := inf.AddHandler(late, HandlerOptions{Inline: true})
	if err != nil {
		t.Fatal(err)
	}
	got := late.snapshot()
	slices.Sort(got)
	if want := []string{"add a@1 initial=true", "add b@2 initial=true"}; !slices.Equal(got, want) {
		t.Fatalf("right after AddHandler: %q, want %q", got, want)
	}
	waitSynced(t, ctx, reg) // once the informer has marked its initial list
	if reg.Pending() != 0 {
		t.Fatalf("inline handler has %d pending", reg.Pending())
	}
	srv.create(pod("c"))
	<-stuck
	srv.create(pod("d"))
	time.Sleep(20 * time.Millisecond)
	if _, ok := inf.Get("default", "d"); ok {
		t.Fatal("the cache moved on while an inline handler was stuck")
	}
	close(release)
	if got := late.waitFor(t, ctx, 4); got[3] != "add d@4 initial=false" {
		t.Fatalf("after the release: %q", got)
	}
}

// blockingLW never answers: a server that cannot be reached.
type blockingLW struct{}

func (blockingLW) List(ctx context.Context, _ metav1.ListOptions) (*reflector.List[*corev1.Pod], error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (blockingLW) Watch(ctx context.Context, _ metav1.ListOptions) (reflector.Watch[*corev1.Pod], error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// WaitForCacheSync returns ErrStopped once the informer (or its factory)
// stopped without syncing, instead of blocking until the caller's own
// context ends (client-go's WaitForCacheSync returns false when the
// informer's stop channel closes).
func TestWaitForCacheSyncAfterStop(t *testing.T) {
	inf, err := New[*corev1.Pod](blockingLW{}, Options[*corev1.Pod]{Reflector: quickReflector})
	if err != nil {
		t.Fatal(err)
	}
	_, stop := start(t, inf)
	stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := inf.WaitForCacheSync(ctx); !errors.Is(err, ErrStopped) {
		t.Fatalf("WaitForCacheSync on a stopped informer: %v, want ErrStopped", err)
	}
}

// The factory's WaitForCacheSync returns ErrStopped too once Start's context
// ended before its informers synced (a server never reached).
func TestFactoryWaitForCacheSyncAfterStop(t *testing.T) {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	f, err := NewFactory(&rest.Config{Host: "http://127.0.0.1:1"}, FactoryOptions{Mapper: StaticMapper(m), Reflector: quickReflector})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := InformerFor[*corev1.Pod](f, Scope{}); err != nil {
		t.Fatal(err)
	}
	startCtx, cancelStart := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Start(startCtx) }()
	if err := f.WaitForStart(context.Background()); err != nil {
		t.Fatal(err)
	}
	cancelStart()
	if err := <-done; err != nil {
		t.Fatalf("Start: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.WaitForCacheSync(ctx); !errors.Is(err, ErrStopped) {
		t.Fatalf("WaitForCacheSync after Start returned: %v, want ErrStopped", err)
	}
}

// NewFactory refuses reflector options that every informer would refuse,
// rather than failing each InformerFor later.
func TestNewFactoryValidatesReflector(t *testing.T) {
	tests := []struct {
		name string
		opts reflector.Options
		ok   bool
	}{
		{"zero", reflector.Options{}, true},
		{"custom", reflector.Options{InitialBackoff: time.Second, MaxBackoff: time.Minute, MinWatchTimeout: time.Minute}, true},
		{"negative backoff", reflector.Options{InitialBackoff: -1}, false},
		{"initial above default max", reflector.Options{InitialBackoff: time.Hour}, false},
		{"max below initial", reflector.Options{InitialBackoff: time.Minute, MaxBackoff: time.Second}, false},
		{"watch timeout below 1s", reflector.Options{MinWatchTimeout: time.Millisecond}, false},
		{"max watch timeout below min", reflector.Options{MinWatchTimeout: time.Minute, MaxWatchTimeout: time.Second}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewFactory(&rest.Config{Host: "http://127.0.0.1:1"}, FactoryOptions{Mapper: StaticMapper(meta.NewDefaultRESTMapper(nil)), Reflector: tc.opts})
			if tc.ok != (err == nil) {
				t.Errorf("NewFactory: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// A resync period under one second (client-go's minimum) is refused: one
// of 30 — meant as seconds, read as nanoseconds — would resync every
// object without pause and grow the handler's buffer without bound.
func TestResyncPeriodMinimum(t *testing.T) {
	for _, tc := range []struct {
		period time.Duration
		ok     bool
	}{{0, true}, {NoResync, true}, {-time.Hour, true}, {time.Second, true}, {10 * time.Hour, true}, {30, false}, {999 * time.Millisecond, false}} {
		t.Run(tc.period.String(), func(t *testing.T) {
			srv := newFakeServer()
			inf, err := New[*corev1.Pod](srv, Options[*corev1.Pod]{ResyncPeriod: tc.period})
			if tc.ok != (err == nil) {
				t.Errorf("New with ResyncPeriod %v: %v, want ok=%v", tc.period, err, tc.ok)
			}
			if inf == nil {
				inf, err = New[*corev1.Pod](srv, Options[*corev1.Pod]{})
				if err != nil {
					t.Fatal(err)
				}
			}
			if _, err := inf.AddHandler(newRecorder(), HandlerOptions{ResyncPeriod: tc.period}); tc.ok != (err == nil) {
				t.Errorf("AddHandler with ResyncPeriod %v: %v, want ok=%v", tc.period, err, tc.ok)
			}
			_, err = NewFactory(&rest.Config{Host: "http://127.0.0.1:1"}, FactoryOptions{Mapper: StaticMapper(meta.NewDefaultRESTMapper(nil)), ResyncPeriod: tc.period})
			if tc.ok != (err == nil) {
				t.Errorf("NewFactory with ResyncPeriod %v: %v, want ok=%v", tc.period, err, tc.ok)
			}
		})
	}
}

// TestLargeRelist: lists of pipelinedReplace objects or more are cached by
// the pipeline of applyReplace (interning while the cache builds). The
// initial list and a relist after a gap end as smaller ones do: the cache
// equals the server, its indexes hold every object, handlers hear of every
// change and of nothing unchanged; an index func that fails on one object
// makes the batch go in one delta at a time, without that object.
func TestLargeRelist(t *testing.T) {
	const n = 3 * pipelinedReplace
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = pod(fmt.Sprintf("p%05d", i), "app", strings.Clone("web"))
	}
	for _, failing := range []bool{false, true} {
		t.Run(fmt.Sprintf("failingIndex=%t", failing), func(t *testing.T) {
			ctx := timeout(t)
			srv := newFakeServer(pods...)
			byApp := func(p *corev1.Pod) ([]string, error) {
				if failing && p.Labels["app"] == "bad" {
					return nil, errors.New("refused")
				}
				return []string{p.Labels["app"]}, nil
			}
			inf := newPodInformer(t, srv, Options[*corev1.Pod]{Indexers: map[string]cache.IndexFunc[*corev1.Pod]{"app": byApp}})
			var adds, updates, deletes atomic.Int64
			reg, err := inf.AddHandler(HandlerFuncs[*corev1.Pod]{
				AddFunc:    func(*corev1.Pod, bool) { adds.Add(1) },
				UpdateFunc: func(_, _ *corev1.Pod) { updates.Add(1) },
				DeleteFunc: func(Deleted[*corev1.Pod]) { deletes.Add(1) },
			}, HandlerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			start(t, inf)
			waitSynced(t, ctx, reg)
			<-srv.watchOpened
			assertCacheEquals(t, inf, srv)
			if web, _ := inf.ByIndex("app", "web"); len(web) != n || adds.Load() != n {
				t.Fatalf("%d objects indexed, %d adds; want %d", len(web), adds.Load(), n)
			}
			a, _ := inf.Get("default", "p00000")
			b, _ := inf.Get("default", "p02999")
			if unsafe.StringData(a.Labels["app"]) != unsafe.StringData(b.Labels["app"]) {
				t.Fatal("the label values of the list are not interned")
			}

			// The gap: a tenth changed, a tenth deleted, 500 created.
			for i := 0; i < n/10; i++ {
				srv.change("MODIFIED", pod(fmt.Sprintf("p%05d", i), "app", "db"), false)
				srv.change("DELETED", pod(fmt.Sprintf("p%05d", n-1-i), "app", "web"), false)
			}
			for i := range 500 {
				app := "web"
				if failing && i == 7 {
					app = "bad"
				}
				srv.change("ADDED", pod(fmt.Sprintf("q%05d", i), "app", app), false)
			}
			srv.gone()
			wantAdds := int64(n + 500)
			if failing {
				wantAdds-- // the object the index refuses
			}
			waitUntil(t, ctx, "the relist's notifications", func() bool {
				return deletes.Load() == n/10 && updates.Load() == n/10 && adds.Load() == wantAdds
			})
			if failing {
				if _, ok := inf.Get("default", "q00007"); ok {
					t.Fatal("the object the index refuses is cached")
				}
				srv.change("DELETED", pod("q00007"), false) // the rest of the cache must equal the server
			}
			assertCacheEquals(t, inf, srv)
			if db, _ := inf.ByIndex("app", "db"); len(db) != n/10 {
				t.Fatalf("%d objects indexed under db, want %d", len(db), n/10)
			}
			time.Sleep(50 * time.Millisecond) // nothing more comes
			if got, want := adds.Load()+updates.Load()+deletes.Load(), wantAdds+2*n/10; got != want {
				t.Fatalf("%d notifications, want %d", got, want)
			}
		})
	}
}

// TestReplaceFallbackWritesNoCachedMap: when the cache refuses a relist (an
// index func fails) the informer applies its deltas one by one; the objects
// were interned already, and interning them again must not write into a
// canonical map that cached objects share (readers hold no lock on an
// object's maps). A map the list's first pass took from the tables (here
// x's labels, shared by the new object a) may have left them since, after
// two generations of new maps; interning a again would then take that map
// as a new canonical one and intern its strings in place, under the reader
// (-race; "concurrent map read and map write" without it).
func TestReplaceFallbackWritesNoCachedMap(t *testing.T) {
	ctx := timeout(t)
	srv := newFakeServer(pod("x", "app", "shared"))
	byApp := func(p *corev1.Pod) ([]string, error) {
		if p.Labels["app"] == "bad" {
			return nil, errors.New("refused")
		}
		return []string{p.Labels["app"]}, nil
	}
	inf := newPodInformer(t, srv, Options[*corev1.Pod]{Indexers: map[string]cache.IndexFunc[*corev1.Pod]{"app": byApp}})
	var adds atomic.Int64
	reg, err := inf.AddHandler(HandlerFuncs[*corev1.Pod]{AddFunc: func(*corev1.Pod, bool) { adds.Add(1) }}, HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, inf)
	waitSynced(t, ctx, reg)
	<-srv.watchOpened

	x0, _ := inf.Get("default", "x")
	before := unsafe.StringData(x0.Labels["app"])
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if x, ok := inf.Get("default", "x"); ok {
				for k, v := range x.Labels {
					if k != "app" || v != "shared" {
						t.Errorf("x's labels hold %q=%q", k, v)
					}
				}
			}
		}
	})
	defer readers.Wait()
	defer close(stop)

	// Sorted by key, the relist is: a (labels equal to x's), the fillers
	// (two generations of new maps and more), x unchanged, zbad.
	fillers := 2*minGeneration + 500
	srv.change("ADDED", pod("a", "app", "shared"), false)
	for i := range fillers {
		srv.change("ADDED", pod(fmt.Sprintf("f%05d", i), "app", fmt.Sprintf("u%d", i)), false)
	}
	srv.change("ADDED", pod("zbad", "app", "bad"), false)
	srv.gone()
	want := int64(1 + 1 + fillers) // x, then a and the fillers (not zbad)
	waitUntil(t, ctx, "the relist's adds", func() bool { return adds.Load() == want })
	a, _ := inf.Get("default", "a")
	x, _ := inf.Get("default", "x")
	if a == nil || x == nil || a.Labels["app"] != "shared" || x.Labels["app"] != "shared" {
		t.Fatalf("a %v, x %v", a, x)
	}
	// A write into x's labels replaces its value by the interner's copy
	// of the day (the first one left the string table with the fillers).
	if unsafe.StringData(x.Labels["app"]) != before {
		t.Fatal("x's cached labels were written during the relist")
	}
}

// TestLargeRelistReadersSeeOldOrNew: while a large relist is cached by the
// pipeline (the cache builds the new content as the objects are interned),
// readers see the whole old content or the whole new one, never a mix,
// through List, ByIndex and Get alike.
func TestLargeRelistReadersSeeOldOrNew(t *testing.T) {
	const n = 3 * pipelinedReplace
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = pod(fmt.Sprintf("p%05d", i), "gen", "1")
	}
	ctx := timeout(t)
	srv := newFakeServer(pods...)
	byGen := func(p *corev1.Pod) ([]string, error) { return []string{p.Labels["gen"]}, nil }
	inf := newPodInformer(t, srv, Options[*corev1.Pod]{Indexers: map[string]cache.IndexFunc[*corev1.Pod]{"gen": byGen}})
	var updates atomic.Int64
	reg, err := inf.AddHandler(HandlerFuncs[*corev1.Pod]{UpdateFunc: func(_, _ *corev1.Pod) { updates.Add(1) }}, HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, inf)
	waitSynced(t, ctx, reg)
	<-srv.watchOpened

	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			objs := inf.List()
			gens := map[string]int{}
			for _, p := range objs {
				gens[p.Labels["gen"]]++
			}
			if len(objs) != n || len(gens) != 1 {
				t.Errorf("List: %d objects, generations %v", len(objs), gens)
				return
			}
			for _, gen := range []string{"1", "2"} { // two reads: the swap may come between
				objs, _ := inf.ByIndex("gen", gen)
				if len(objs) != 0 && len(objs) != n {
					t.Errorf("ByIndex: %d objects under gen=%s, want 0 or %d", len(objs), gen, n)
					return
				}
			}
			if p, ok := inf.Get("default", fmt.Sprintf("p%05d", n-1)); !ok || (p.Labels["gen"] != "1" && p.Labels["gen"] != "2") {
				t.Errorf("Get: %v", p)
				return
			}
		}
	})
	for i := range n {
		srv.change("MODIFIED", pod(fmt.Sprintf("p%05d", i), "gen", "2"), false)
	}
	srv.gone()
	waitUntil(t, ctx, "the relist's updates", func() bool { return updates.Load() == n })
	close(stop)
	readers.Wait()
	if p, ok := inf.Get("default", "p00000"); !ok || p.Labels["gen"] != "2" {
		t.Fatalf("after the relist: %v", p)
	}
	if objs, _ := inf.ByIndex("gen", "2"); len(objs) != n {
		t.Fatalf("%d objects under gen=2 after the relist, want %d", len(objs), n)
	}
}

// A burst queued while an inline handler is stuck — watch events, a relist
// after 410 Gone, more events — is taken in runs once it returns: the
// handler sees a consistent stream (every add, update and delete from the
// state it holds) that ends equal to the cache and the server, and some of
// its calls find the cache already newer than their event (a run was
// applied before its notifications).
func TestBurstInRuns(t *testing.T) {
	ctx := timeout(t)
	srv := newFakeServer(pod("a"))
	inf := newPodInformer(t, srv, Options[*corev1.Pod]{})
	m := &mirror{t: t, objs: map[string]string{}}
	gate, stuck := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var newer atomic.Int32
	seen := func(p *corev1.Pod) {
		cached, ok := inf.Get(p.Namespace, p.Name)
		if !ok {
			return // deleted later in the same run
		}
		c, _ := strconv.Atoi(cached.ResourceVersion)
		e, _ := strconv.Atoi(p.ResourceVersion)
		switch {
		case c < e:
			t.Errorf("%s: cache has resourceVersion %d, older than the event's %d", p.Name, c, e)
		case c > e:
			newer.Add(1)
		}
	}
	h := HandlerFuncs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, initial bool) { seen(p); m.OnAdd(p, initial) },
		UpdateFunc: func(old, p *corev1.Pod) {
			if p.Name == "a" && p.Labels["v"] == "stuck" {
				once.Do(func() { close(stuck); <-gate })
			}
			seen(p)
			m.OnUpdate(old, p)
		},
		DeleteFunc: m.OnDelete,
	}
	reg, err := inf.AddHandler(h, HandlerOptions{Inline: true})
	if err != nil {
		t.Fatal(err)
	}
	start(t, inf)
	waitSynced(t, ctx, reg)
	<-srv.watchOpened
	srv.update(pod("a", "v", "stuck"))
	<-stuck
	churn := func(from, to int) {
		for i := from; i < to; i++ {
			srv.churn(i, 20, i < 300) // the relist comes after i == 299
		}
	}
	churn(0, 300)
	srv.gone()
	<-srv.watchOpened // the reflector relisted while the handler is stuck
	churn(300, 600)
	close(gate)
	want := srv.state()
	waitUntil(t, ctx, "cache and handler equal to the server", func() bool {
		return maps.Equal(cacheState(inf), want) && maps.Equal(m.view(), want)
	})
	if newer.Load() == 0 {
		t.Fatal("no handler call found the cache newer than its event: the burst was not taken in runs")
	}
}
