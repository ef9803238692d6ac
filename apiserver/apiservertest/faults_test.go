package apiservertest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/reflector"
)

// The faults are shown through client-go (typed clients, raw watches, a
// shared informer) and through kloop's informer. Each test gives the fault
// to the controller's client only (user "controller") and checks with the
// administrator's, which the fault leaves alone; each fails without its
// fault.

// harness is an embedded server with faults, a record, the controller's
// client and the checker's.
type harness struct {
	t      *testing.T
	env    *apiservertest.Env
	faults *apiservertest.Faults
	rec    *apiservertest.Record
	ctrl   *rest.Config
	ctrlCS kubernetes.Interface
	admin  kubernetes.Interface
	ns     string
}

var controller = apiservertest.User("controller")

func newHarness(t *testing.T, opts apiservertest.Options) *harness {
	t.Helper()
	// A quiet server: the tests follow the exact events and requests of
	// their namespace, which the controllers' default ServiceAccount and
	// kube-root-ca.crt (and their requests) would join.
	opts.DisableControllers = true
	env := apiservertest.Start(t, apiservertest.Embedded, opts)
	h := &harness{t: t, env: env, faults: env.Faults(), ns: env.Namespace}
	h.rec = h.faults.Record(apiservertest.RecordOptions{})
	h.ctrl = env.ConfigFor(apiservertest.UserInfo{Name: "controller", Groups: []string{"system:masters"}})
	var err error
	if h.ctrlCS, err = kubernetes.NewForConfig(h.ctrl); err != nil {
		t.Fatal(err)
	}
	if h.admin, err = kubernetes.NewForConfig(env.Config()); err != nil {
		t.Fatal(err)
	}
	return h
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (h *harness) create(name, v string) *corev1.ConfigMap {
	h.t.Helper()
	cm, err := h.admin.CoreV1().ConfigMaps(h.ns).Create(ctxFor(h.t), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": v}}, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return cm
}

func (h *harness) update(name, v string) *corev1.ConfigMap {
	h.t.Helper()
	ctx := ctxFor(h.t)
	cm, err := h.admin.CoreV1().ConfigMaps(h.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	cm.Data["v"] = v
	if cm, err = h.admin.CoreV1().ConfigMaps(h.ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	return cm
}

// view is an informer's cache and notifications, whichever informer.
type view struct {
	get func(name string) (*corev1.ConfigMap, bool)
	// lastRV is the informer's position: the resourceVersion of the last
	// list, event or bookmark.
	lastRV func() string

	mu    sync.Mutex // guards notes
	notes []string   // "add a@5", "update a@5→6", "delete a"
}

func (v *view) note(format string, args ...any) {
	v.mu.Lock()
	v.notes = append(v.notes, fmt.Sprintf(format, args...))
	v.mu.Unlock()
}

func (v *view) notifications() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.notes)
}

// value returns the cached v of a ConfigMap, "-" if it is not cached.
func (v *view) value(name string) string {
	cm, ok := v.get(name)
	if !ok {
		return "-"
	}
	return cm.Data["v"]
}

// waitValue waits until the cache holds want for name.
func (v *view) waitValue(t *testing.T, name, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for v.value(name) != want {
		if time.Now().After(deadline) {
			t.Fatalf("the informer's cache has %s=%s, want %s", name, v.value(name), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitNote waits until a notification starts with prefix, and returns the
// notifications.
func (v *view) waitNote(t *testing.T, prefix string) []string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		notes := v.notifications()
		if slices.ContainsFunc(notes, func(n string) bool { return strings.HasPrefix(n, prefix) }) {
			return notes
		}
		if time.Now().After(deadline) {
			t.Fatalf("no notification %q: %v", prefix, notes)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// informerKind starts an informer of the namespace's ConfigMaps.
type informerKind struct {
	name  string
	start func(t *testing.T, cfg *rest.Config, ns string) *view
}

var informerKinds = []informerKind{
	{"client-go informer", startClientGoInformer},
	{"kloop informer", startKloopInformer},
}

func startClientGoInformer(t *testing.T, cfg *rest.Config, ns string) *view {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().ConfigMaps().Informer()
	v := &view{get: func(name string) (*corev1.ConfigMap, bool) {
		o, ok, _ := inf.GetStore().GetByKey(ns + "/" + name)
		if !ok {
			return nil, false
		}
		return o.(*corev1.ConfigMap), true
	}, lastRV: inf.LastSyncResourceVersion}
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			cm := obj.(*corev1.ConfigMap)
			v.note("add %s@%s", cm.Name, cm.ResourceVersion)
		},
		UpdateFunc: func(old, obj any) {
			o, cm := old.(*corev1.ConfigMap), obj.(*corev1.ConfigMap)
			v.note("update %s@%s→%s", cm.Name, o.ResourceVersion, cm.ResourceVersion)
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			v.note("delete %s", obj.(*corev1.ConfigMap).Name)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	if !cache.WaitForCacheSync(ctxFor(t).Done(), inf.HasSynced) {
		t.Fatal("the client-go informer did not sync")
	}
	return v
}

func startKloopInformer(t *testing.T, cfg *rest.Config, ns string) *view {
	t.Helper()
	lw, err := reflector.NewRESTListerWatcher[*corev1.ConfigMap](cfg, corev1.SchemeGroupVersion.WithResource("configmaps"), ns, reflector.RESTOptions[*corev1.ConfigMap]{})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := informer.New[*corev1.ConfigMap](lw, informer.Options[*corev1.ConfigMap]{})
	if err != nil {
		t.Fatal(err)
	}
	v := &view{get: func(name string) (*corev1.ConfigMap, bool) { return inf.Get(ns, name) }, lastRV: inf.LastSyncResourceVersion}
	_, err = inf.AddHandler(informer.HandlerFuncs[*corev1.ConfigMap]{
		AddFunc: func(cm *corev1.ConfigMap, _ bool) { v.note("add %s@%s", cm.Name, cm.ResourceVersion) },
		UpdateFunc: func(o, cm *corev1.ConfigMap) {
			v.note("update %s@%s→%s", cm.Name, o.ResourceVersion, cm.ResourceVersion)
		},
		DeleteFunc: func(d informer.Deleted[*corev1.ConfigMap]) { v.note("delete %s", d.Key[strings.Index(d.Key, "/")+1:]) },
	}, informer.HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if err := inf.WaitForCacheSync(ctxFor(t)); err != nil {
		t.Fatalf("the kloop informer did not sync: %v", err)
	}
	return v
}

// watches matches the controller's watches of ConfigMaps.
var watches = apiservertest.Match{Client: controller, Verb: "watch", Resource: "configmaps"}

// relists returns the controller's requests that read the whole state
// again: lists, and watches with initial events (streaming lists).
func relists(rec *apiservertest.Record) []apiservertest.Request {
	var out []apiservertest.Request
	for _, r := range rec.Requests(apiservertest.Match{Client: controller, Resource: "configmaps"}) {
		if r.Verb == "list" || r.Verb == "watch" && r.InitialEvents {
			out = append(out, r)
		}
	}
	return out
}

// DropWatches ends the controller's open watches: its informer watches
// again, from where it was (no relist), and misses nothing; the checker's
// watch goes on.
func TestDropWatches(t *testing.T) {
	for _, ik := range informerKinds {
		t.Run(ik.name, func(t *testing.T) {
			h := newHarness(t, apiservertest.Options{})
			h.create("a", "1")
			v := ik.start(t, h.ctrl, h.ns)
			// An event on the watch first: a watch that ends without
			// any is retried after a backoff, or (client-go) streamed
			// from scratch.
			h.create("b", "1")
			v.waitValue(t, "b", "1")
			checker, err := h.admin.CoreV1().ConfigMaps(h.ns).Watch(ctxFor(t), metav1.ListOptions{ResourceVersion: "0"})
			if err != nil {
				t.Fatal(err)
			}
			defer checker.Stop()
			<-checker.ResultChan() // ADDED a
			<-checker.ResultChan() // ADDED b
			ctx := ctxFor(t)
			if _, err := h.rec.Wait(ctx, watches, 1); err != nil {
				t.Fatal(err)
			}
			relisted := len(relists(h.rec))
			if n := h.faults.For(controller).DropWatches(); n != 1 {
				t.Fatalf("DropWatches ended %d watches, want the informer's one", n)
			}
			got, err := h.rec.Wait(ctx, watches, 2)
			if err != nil {
				t.Fatalf("the informer did not watch again: %v", err)
			}
			if got[1].InitialEvents || len(relists(h.rec)) != relisted {
				t.Errorf("the informer relisted instead of resuming: %v", h.rec.Requests(watches))
			}
			h.update("a", "2")
			v.waitValue(t, "a", "2")
			select {
			case ev := <-checker.ResultChan():
				if ev.Type != watch.Modified {
					t.Errorf("the checker's watch got %s", ev.Type)
				}
			case <-ctx.Done():
				t.Fatal("the checker's watch was dropped too")
			}
		})
	}
}

// ExpireWatches answers the controller's next watch with 410 Gone: its
// informer, whose watch was dropped, relists instead of resuming.
func TestExpireWatches(t *testing.T) {
	for _, ik := range informerKinds {
		t.Run(ik.name, func(t *testing.T) {
			h := newHarness(t, apiservertest.Options{})
			h.create("a", "1")
			v := ik.start(t, h.ctrl, h.ns)
			ctx := ctxFor(t)
			if _, err := h.rec.Wait(ctx, watches, 1); err != nil {
				t.Fatal(err)
			}
			before := len(relists(h.rec))
			expire := h.faults.For(controller).ExpireWatches(1)
			h.faults.For(controller).DropWatches()
			select {
			case <-expire.Done():
			case <-ctx.Done():
				t.Fatal("the informer did not watch again")
			}
			deadline := time.Now().Add(15 * time.Second)
			for len(relists(h.rec)) < before+1 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if got := relists(h.rec); len(got) < before+1 {
				t.Fatalf("the informer did not relist after 410 Gone: %v", h.rec.Requests(apiservertest.Match{Client: controller}))
			}
			expired := h.rec.Requests(apiservertest.Match{Client: controller, Verb: "watch"})
			if !slices.ContainsFunc(expired, func(r apiservertest.Request) bool { return r.Fault == expire.String() }) {
				t.Errorf("the record does not show the expired watch: %v", expired)
			}
			if expire.Hits() != 1 {
				t.Errorf("the fault expired %d watches, want 1", expire.Hits())
			}
			h.update("a", "2")
			v.waitValue(t, "a", "2")
		})
	}
}

// CompactResource compacts one resource's history: a watch from before
// gets 410 Gone, another resource's does not. With the controller's
// watches held, then dropped, an informer that missed a change finds its
// position compacted and relists: the change it never saw as an event
// (Sieve's unobserved state) arrives with the list.
func TestCompactResource(t *testing.T) {
	t.Run("client-go", func(t *testing.T) {
		h := newHarness(t, apiservertest.Options{})
		cm := h.create("a", "1")
		sec, err := h.admin.CoreV1().Secrets(h.ns).Create(ctxFor(t), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		h.update("a", "2")
		if err := h.faults.CompactResource("configmaps", 0); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name    string
			watch   func(context.Context) (watch.Interface, error)
			expired bool
		}{
			{"configmaps", func(ctx context.Context) (watch.Interface, error) {
				return h.ctrlCS.CoreV1().ConfigMaps(h.ns).Watch(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion})
			}, true},
			{"secrets", func(ctx context.Context) (watch.Interface, error) {
				return h.ctrlCS.CoreV1().Secrets(h.ns).Watch(ctx, metav1.ListOptions{ResourceVersion: sec.ResourceVersion})
			}, false},
		} {
			ctx, cancel := context.WithTimeout(ctxFor(t), 300*time.Millisecond)
			w, err := tc.watch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					got = append(got, fmt.Sprint(apierrors.FromObject(ev.Object)))
				} else {
					got = append(got, string(ev.Type))
				}
			}
			cancel()
			w.Stop()
			if expired := len(got) > 0 && strings.Contains(got[0], "too old"); expired != tc.expired {
				t.Errorf("watch of %s from before the compaction: %v", tc.name, got)
			}
		}
		if err := h.faults.CompactResource("nothings", 0); err == nil {
			t.Error("compacting a resource the server does not serve: no error")
		}
	})
	for _, ik := range informerKinds {
		t.Run(ik.name, func(t *testing.T) {
			h := newHarness(t, apiservertest.Options{})
			h.create("a", "1")
			v := ik.start(t, h.ctrl, h.ns)
			// An event on the watch first: a watch that ends without
			// any is retried after a backoff, or (client-go) streamed
			// from scratch.
			h.create("b", "1")
			v.waitValue(t, "b", "1")
			hold := h.faults.For(controller).HoldWatches()
			h.update("a", "2")
			h.update("a", "3")
			if err := h.faults.CompactResource("configmaps", 0); err != nil {
				t.Fatal(err)
			}
			before := len(relists(h.rec))
			h.faults.For(controller).DropWatches()
			hold.Release()
			v.waitValue(t, "a", "3")
			if len(relists(h.rec)) == before {
				t.Errorf("the informer did not relist: %v %v", h.rec.Requests(apiservertest.Match{Client: controller}), v.notifications())
			}
			if notes := strings.Join(v.waitNote(t, "update a"), ","); strings.Count(notes, "update a") != 1 {
				t.Errorf("the informer saw the intermediate state: %s", notes)
			}
		})
	}
}

// DelayWatches delays the events of the controller's watches: its
// informer sees a change a delay after it was written; the checker at
// once.
func TestDelayWatches(t *testing.T) {
	const delay = 400 * time.Millisecond
	for _, ik := range informerKinds {
		t.Run(ik.name, func(t *testing.T) {
			h := newHarness(t, apiservertest.Options{})
			h.create("a", "1")
			v := ik.start(t, h.ctrl, h.ns)
			fault := h.faults.For(controller).DelayWatches(delay)
			start := time.Now()
			h.update("a", "2")
			v.waitValue(t, "a", "2")
			if took := time.Since(start); took < delay {
				t.Errorf("the informer saw the update %s after it was written, want at least %s", took, delay)
			}
			if fault.Hits() == 0 {
				t.Error("the fault delayed no event")
			}
			fault.Release()
			delayed := fault.Hits()
			h.update("a", "3")
			v.waitValue(t, "a", "3")
			if fault.Hits() != delayed {
				t.Errorf("released, the fault still delayed %d events", fault.Hits()-delayed)
			}
		})
	}
}

// HoldWatches holds the controller's watch events: its informer's cache
// stays behind while the server and the checker have moved on, then
// catches up, in order, when the fault is released.
func TestHoldWatches(t *testing.T) {
	for _, ik := range informerKinds {
		t.Run(ik.name, func(t *testing.T) {
			h := newHarness(t, apiservertest.Options{})
			h.create("a", "1")
			v := ik.start(t, h.ctrl, h.ns)
			hold := h.faults.For(controller).HoldWatches()
			h.update("a", "2")
			h.create("b", "1")
			time.Sleep(300 * time.Millisecond)
			if got := v.value("a") + v.value("b"); got != "1-" {
				t.Fatalf("held, the informer's cache has a=%s b=%s", v.value("a"), v.value("b"))
			}
			// The controller's own requests are answered at once.
			cm, err := h.ctrlCS.CoreV1().ConfigMaps(h.ns).Get(ctxFor(t), "a", metav1.GetOptions{})
			if err != nil || cm.Data["v"] != "2" {
				t.Fatalf("held, the controller's GET: %v %v", cm, err)
			}
			hold.Release()
			v.waitValue(t, "a", "2")
			v.waitValue(t, "b", "1")
			if hold.Hits() < 2 {
				t.Errorf("the fault held %d events, want 2", hold.Hits())
			}
			if got := v.notifications(); !slices.Contains(got, "add b@"+mustGet(t, h, "b").ResourceVersion) {
				t.Errorf("notifications %v", got)
			}
		})
	}
}

func mustGet(t *testing.T, h *harness, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := h.admin.CoreV1().ConfigMaps(h.ns).Get(ctxFor(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// StaleReads makes the server answer the controller as of an older
// revision: its GET returns the older object, its LIST the older state, an
// informer started then caches the older state and catches up once the
// fault is released; the checker reads the present.
func TestStaleReads(t *testing.T) {
	t.Run("client-go", func(t *testing.T) {
		h := newHarness(t, apiservertest.Options{})
		old := h.create("a", "1")
		h.update("a", "2")
		h.create("b", "1")
		var rev int64
		fmt.Sscan(old.ResourceVersion, &rev)
		stale, err := h.faults.For(controller).StaleReads(rev)
		if err != nil {
			t.Fatal(err)
		}
		ctx := ctxFor(t)
		cms := h.ctrlCS.CoreV1().ConfigMaps(h.ns)
		if cm, err := cms.Get(ctx, "a", metav1.GetOptions{}); err != nil || cm.Data["v"] != "1" || cm.ResourceVersion != old.ResourceVersion {
			t.Errorf("stale GET: %v %v", cm, err)
		}
		if _, err := cms.Get(ctx, "b", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("stale GET of an object created later: %v", err)
		}
		list, err := cms.List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 || list.ResourceVersion != old.ResourceVersion {
			t.Errorf("stale LIST: %v %v", list, err)
		}
		if cm := mustGet(t, h, "a"); cm.Data["v"] != "2" {
			t.Errorf("the checker's GET: %v", cm.Data)
		}
		if _, err := h.faults.For(controller).StaleReads(h.env.Embedded.Revision() + 1); err == nil {
			t.Error("StaleReads of a future revision: no error")
		}
		stale.Release()
		if cm, err := cms.Get(ctx, "a", metav1.GetOptions{}); err != nil || cm.Data["v"] != "2" {
			t.Errorf("released, GET: %v %v", cm, err)
		}
	})
	for _, ik := range informerKinds {
		t.Run(ik.name, func(t *testing.T) {
			h := newHarness(t, apiservertest.Options{})
			old := h.create("a", "1")
			h.update("a", "2")
			var rev int64
			fmt.Sscan(old.ResourceVersion, &rev)
			stale, err := h.faults.For(controller).StaleReads(rev)
			if err != nil {
				t.Fatal(err)
			}
			v := ik.start(t, h.ctrl, h.ns)
			h.create("b", "1")
			time.Sleep(200 * time.Millisecond)
			if v.value("a") != "1" || v.value("b") != "-" {
				t.Fatalf("an informer on a stale view has a=%s b=%s, want a=1 and no b", v.value("a"), v.value("b"))
			}
			stale.Release()
			v.waitValue(t, "a", "2")
			v.waitValue(t, "b", "1")
		})
	}
}

// A stale view after a relist is what Sieve calls time travel: an informer
// that relists from a server behind the one it followed would move its
// cache back. kloop's refuses a list older than its position (and retries
// until the view catches up); client-go's is logged, whatever it does.
func TestStaleReadsAfterRelist(t *testing.T) {
	for _, ik := range informerKinds {
		t.Run(ik.name, func(t *testing.T) {
			h := newHarness(t, apiservertest.Options{})
			old := h.create("a", "1")
			v := ik.start(t, h.ctrl, h.ns)
			h.update("a", "2")
			v.waitValue(t, "a", "2")
			var rev int64
			fmt.Sscan(old.ResourceVersion, &rev)
			stale, err := h.faults.For(controller).StaleReads(rev)
			if err != nil {
				t.Fatal(err)
			}
			before := len(relists(h.rec))
			h.faults.For(controller).ExpireWatches(1)
			h.faults.For(controller).DropWatches()
			// kloop's informer refuses the stale list and lists again
			// (after a backoff): wait for its second list.
			want := before + 1
			if ik.name == "kloop informer" {
				want++
			}
			deadline := time.Now().Add(15 * time.Second)
			for len(relists(h.rec)) < want && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond) // the stale list handed over, or refused
			got := v.value("a")
			if ik.name == "kloop informer" && got != "2" {
				t.Errorf("the kloop informer went back in time: a=%s after a stale relist", got)
			}
			t.Logf("%s after a relist from a stale view: a=%s (was 2; the view has 1)", ik.name, got)
			stale.Release()
			v.waitValue(t, "a", "2")
		})
	}
}

// Fail answers the controller's next matching requests with a failure:
// client-go returns the Status (or retries a Retry-After), a write that
// times out after its commit is written all the same, and informers retry
// their failed list or watch.
func TestFail(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failure apiservertest.Failure
		check   func(error) bool
		// written: the update is committed despite the answer.
		written bool
		// retried: client-go retries it (Retry-After), and succeeds.
		retried bool
	}{
		{"409", apiservertest.Conflict, apierrors.IsConflict, false, false},
		{"429", apiservertest.TooManyRequests, nil, true, true},
		{"500", apiservertest.InternalError, apierrors.IsInternalError, false, false},
		{"503", apiservertest.Unavailable, apierrors.IsServiceUnavailable, false, false},
		{"503 Retry-After", apiservertest.Failure{Code: 503, RetryAfter: time.Second}, nil, true, true},
		{"504 after commit", apiservertest.TimeoutAfterCommit, apierrors.IsTimeout, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, apiservertest.Options{})
			cm := h.create("a", "1")
			fault, err := h.faults.For(controller).Fail(apiservertest.Match{Verb: "update", Resource: "configmaps", Name: "a"}, 1, tc.failure)
			if err != nil {
				t.Fatal(err)
			}
			// The checker's update is not the controller's: it passes.
			cm = h.update("a", "2")
			cm.Data["v"] = "3"
			_, err = h.ctrlCS.CoreV1().ConfigMaps(h.ns).Update(ctxFor(t), cm, metav1.UpdateOptions{})
			switch {
			case tc.retried && err != nil:
				t.Fatalf("client-go did not retry: %v", err)
			case !tc.retried && (err == nil || !tc.check(err)):
				t.Fatalf("the update's error: %v", err)
			}
			if got := mustGet(t, h, "a").Data["v"]; (got == "3") != tc.written {
				t.Errorf("after the failed update, the object has v=%s", got)
			}
			updates := h.rec.Requests(apiservertest.Match{Client: controller, Verb: "update"})
			if len(updates) == 0 || updates[0].Code != tc.failure.Code || updates[0].Fault != fault.String() {
				t.Errorf("the record of the update: %v", updates)
			}
			if tc.retried && (len(updates) != 2 || updates[1].Code != 200) {
				t.Errorf("the record of the retried update: %v", updates)
			}
			select {
			case <-fault.Done():
			default:
				t.Error("the fault is still in effect after its one request")
			}
		})
	}
	for _, ik := range informerKinds {
		t.Run(ik.name, func(t *testing.T) {
			h := newHarness(t, apiservertest.Options{})
			h.create("a", "1")
			// The informer's first read of the state fails: it retries.
			fault, err := h.faults.For(controller).Fail(apiservertest.Match{Resource: "configmaps"}, 1, apiservertest.InternalError)
			if err != nil {
				t.Fatal(err)
			}
			v := ik.start(t, h.ctrl, h.ns)
			if v.value("a") != "1" || fault.Hits() != 1 {
				t.Fatalf("after a failed read the informer has a=%s; the fault hit %d requests", v.value("a"), fault.Hits())
			}
			got := h.rec.Requests(apiservertest.Match{Client: controller})
			if len(got) < 2 || got[0].Code != 500 || got[1].Code != 200 {
				t.Errorf("the informer's requests: %v", got)
			}
		})
	}
	t.Run("invalid", func(t *testing.T) {
		h := newHarness(t, apiservertest.Options{})
		for _, fl := range []apiservertest.Failure{{Code: 404}, {Code: 200}, {Code: 500, RetryAfter: -time.Second}} {
			if _, err := h.faults.For(controller).Fail(apiservertest.Match{}, 1, fl); err == nil {
				t.Errorf("Fail with %+v: no error", fl)
			}
		}
	})
}

// watchEvents opens a raw client-go watch and reads its events until it
// has n of them (n > 0) or the window has passed.
func watchEvents(t *testing.T, cs kubernetes.Interface, ns string, opts metav1.ListOptions, n int, window time.Duration) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(ctxFor(t))
	defer cancel()
	end := time.After(window)
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []string
	for {
		select {
		case ev := <-w.ResultChan():
			m, err := metaOf(ev.Object)
			if err != nil {
				t.Fatal(err)
			}
			s := fmt.Sprintf("%s %s@%s", ev.Type, m.GetName(), m.GetResourceVersion())
			if ev.Type == watch.Bookmark {
				s = fmt.Sprintf("BOOKMARK end=%v", m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true")
			}
			got = append(got, s)
			if len(got) == n {
				return got
			}
		case <-end:
			return got
		}
	}
}

func metaOf(o any) (metav1.Object, error) {
	m, ok := o.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T is no object", o)
	}
	return m, nil
}

// ReorderInitialEvents reverses the initial events of the controller's
// next watch: client-go's watch shows them reversed; informers build the
// same cache.
func TestReorderInitialEvents(t *testing.T) {
	t.Run("client-go", func(t *testing.T) {
		h := newHarness(t, apiservertest.Options{})
		for _, n := range []string{"a", "b", "c"} {
			h.create(n, "1")
		}
		normal := watchEvents(t, h.admin, h.ns, metav1.ListOptions{ResourceVersion: "0"}, 3, 10*time.Second)
		fault := h.faults.For(controller).ReorderInitialEvents(1)
		// A watch without initial events does not take the fault.
		watchEvents(t, h.ctrlCS, h.ns, metav1.ListOptions{ResourceVersion: mustGet(t, h, "c").ResourceVersion}, 0, 50*time.Millisecond)
		reordered := watchEvents(t, h.ctrlCS, h.ns, metav1.ListOptions{ResourceVersion: "0"}, 3, 10*time.Second)
		want := slices.Clone(normal)
		slices.Reverse(want)
		if len(normal) != 3 || fmt.Sprint(reordered) != fmt.Sprint(want) {
			t.Errorf("initial events %v, reordered %v", normal, reordered)
		}
		if fault.Hits() != 1 {
			t.Errorf("the fault reordered %d watches", fault.Hits())
		}
		// Initial events of a streaming list: reversed, then the end bookmark.
		h.faults.For(controller).ReorderInitialEvents(1)
		yes := true
		got := watchEvents(t, h.ctrlCS, h.ns, metav1.ListOptions{SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true}, 4, 10*time.Second)
		if len(got) != 4 || got[0] != want[0] || got[2] != want[2] || got[3] != "BOOKMARK end=true" {
			t.Errorf("streaming list reordered: %v", got)
		}
	})
	for _, ik := range informerKinds {
		t.Run(ik.name, func(t *testing.T) {
			h := newHarness(t, apiservertest.Options{})
			for _, n := range []string{"a", "b", "c"} {
				h.create(n, n)
			}
			fault := h.faults.For(controller).ReorderInitialEvents(1)
			v := ik.start(t, h.ctrl, h.ns)
			for _, n := range []string{"a", "b", "c"} {
				v.waitValue(t, n, n)
			}
			// A list is a list: only a watch with initial events takes the
			// fault (client-go lists first, kloop streams its list).
			reorderedAWatch := slices.ContainsFunc(h.rec.Requests(watches), func(r apiservertest.Request) bool { return r.SentResourceVersion == "" || r.SentResourceVersion == "0" })
			if reorderedAWatch != (fault.Hits() == 1) {
				t.Errorf("the fault reordered %d watches; watches %v", fault.Hits(), h.rec.Requests(watches))
			}
		})
	}
}

// DuplicateEvents sends every event of the controller's next watch twice:
// a raw watch shows each twice; an informer's cache is the same, and a
// copy reaches its handlers, if at all, as an update to the same
// resourceVersion (what a resync looks like), which a handler can tell
// and ignore. (Today both informers pass it on.)
func TestDuplicateEvents(t *testing.T) {
	t.Run("client-go", func(t *testing.T) {
		h := newHarness(t, apiservertest.Options{})
		a := h.create("a", "1")
		h.faults.For(controller).DuplicateEvents(1)
		ctx, cancel := context.WithCancel(ctxFor(t))
		defer cancel()
		w, err := h.ctrlCS.CoreV1().ConfigMaps(h.ns).Watch(ctx, metav1.ListOptions{ResourceVersion: a.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		b := h.create("b", "1")
		var got []string
		for range 2 {
			ev := <-w.ResultChan()
			got = append(got, fmt.Sprintf("%s %s", ev.Type, ev.Object.(*corev1.ConfigMap).ResourceVersion))
		}
		want := "ADDED " + b.ResourceVersion
		if got[0] != want || got[1] != want {
			t.Errorf("events %v, want %s twice", got, want)
		}
	})
	for _, ik := range informerKinds {
		t.Run(ik.name, func(t *testing.T) {
			h := newHarness(t, apiservertest.Options{})
			h.create("a", "1")
			v := ik.start(t, h.ctrl, h.ns)
			// An event on the watch first, so that the informer resumes
			// its watch once dropped (a watch that ends without any is
			// retried after a backoff, or, by client-go, streamed again).
			h.create("b", "1")
			v.waitValue(t, "b", "1")
			ctx := ctxFor(t)
			dup := h.faults.For(controller).DuplicateEvents(1)
			h.faults.For(controller).DropWatches()
			if _, err := h.rec.Wait(ctx, watches, 2); err != nil {
				t.Fatal(err)
			}
			cm := h.update("a", "2")
			rv := cm.ResourceVersion
			v.waitValue(t, "a", "2")
			// A handler's notifications come in order: once c's add is
			// there, a's copy has come, if it comes at all.
			h.create("c", "1")
			v.waitNote(t, "add c@")
			var updates []string
			for _, n := range v.notifications() {
				if strings.HasPrefix(n, "update a@") {
					updates = append(updates, n)
				}
			}
			// The copy reaches the handler, if at all, as an update to
			// the same resourceVersion (what a resync looks like).
			if dup.Hits() < 2 || len(updates) == 0 || len(updates) > 2 || !strings.HasSuffix(updates[0], "→"+rv) ||
				len(updates) == 2 && updates[1] != "update a@"+rv+"→"+rv {
				t.Errorf("duplicated %d events; the handler's updates: %v", dup.Hits(), updates)
			}
			t.Logf("%s: the handler's updates of a: %v", ik.name, updates)
		})
	}
}

// DropBookmarks drops the controller's periodic bookmarks, not the one
// ending initial events.
func TestDropBookmarks(t *testing.T) {
	h := newHarness(t, apiservertest.Options{BookmarkInterval: 50 * time.Millisecond})
	a := h.create("a", "1")
	opts := metav1.ListOptions{ResourceVersion: a.ResourceVersion, AllowWatchBookmarks: true}
	count := func(events []string) int {
		n := 0
		for _, e := range events {
			if strings.HasPrefix(e, "BOOKMARK") {
				n++
			}
		}
		return n
	}
	if n := count(watchEvents(t, h.ctrlCS, h.ns, opts, 1, 10*time.Second)); n == 0 {
		t.Fatal("no bookmark without the fault")
	}
	drop := h.faults.For(controller).DropBookmarks()
	if got := watchEvents(t, h.ctrlCS, h.ns, opts, 0, 300*time.Millisecond); count(got) != 0 {
		t.Errorf("bookmarks despite the fault: %v", got)
	}
	if n := count(watchEvents(t, h.admin, h.ns, opts, 1, 10*time.Second)); n == 0 {
		t.Error("the checker's bookmarks were dropped too")
	}
	yes := true
	got := watchEvents(t, h.ctrlCS, h.ns, metav1.ListOptions{SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true}, 3, time.Second)
	if fmt.Sprint(got) != fmt.Sprintf("[ADDED a@%s BOOKMARK end=true]", a.ResourceVersion) {
		t.Errorf("a streaming list with bookmarks dropped: %v", got)
	}
	if drop.Hits() == 0 {
		t.Error("the fault dropped no bookmark")
	}
}

// Without bookmarks an informer's position stays at its last event while
// the server's revision moves on (writes elsewhere): it would resume from
// further back, which a correct client survives. With them it follows.
func TestDropBookmarksInformers(t *testing.T) {
	for _, ik := range informerKinds {
		t.Run(ik.name, func(t *testing.T) {
			h := newHarness(t, apiservertest.Options{BookmarkInterval: 50 * time.Millisecond})
			a := h.create("a", "1")
			drop := h.faults.For(controller).DropBookmarks()
			v := ik.start(t, h.ctrl, h.ns)
			elsewhere := func(name string) string {
				cm, err := h.admin.CoreV1().ConfigMaps("default").Create(ctxFor(t), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return cm.ResourceVersion
			}
			elsewhere("x1")
			time.Sleep(300 * time.Millisecond)
			if got := v.lastRV(); got != a.ResourceVersion {
				t.Errorf("without bookmarks the informer is at %s, want its last object's %s", got, a.ResourceVersion)
			}
			drop.Release()
			rv := elsewhere("x2")
			deadline := time.Now().Add(10 * time.Second)
			for v.lastRV() != rv && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if got := v.lastRV(); got != rv {
				t.Errorf("with bookmarks the informer is at %s, want the server's %s", got, rv)
			}
			h.update("a", "2")
			v.waitValue(t, "a", "2")
		})
	}
}

// The record keeps every request: who, what, the resourceVersions sent and
// answered, the code; newest ones within its size.
func TestRecord(t *testing.T) {
	h := newHarness(t, apiservertest.Options{})
	var seen []apiservertest.Request
	var mu sync.Mutex
	rec := h.faults.Record(apiservertest.RecordOptions{Size: 5, OnRequest: func(r apiservertest.Request) {
		mu.Lock()
		seen = append(seen, r)
		mu.Unlock()
	}})
	ctx := ctxFor(t)
	cms := h.ctrlCS.CoreV1().ConfigMaps(h.ns)
	created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "g-"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Data["v"] = "2"
	updated, err := cms.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Update(ctx, created, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: %v", err)
	}
	list, err := cms.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	rv := updated.ResourceVersion
	if err := cms.Delete(ctx, created.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}}); err != nil {
		t.Fatal(err)
	}
	h.admin.CoreV1().ConfigMaps(h.ns).Get(ctx, "nothing-to-see", metav1.GetOptions{}) // the checker's: a 404
	got := rec.Requests(apiservertest.Match{Client: controller})
	var lines []string
	for _, r := range got {
		lines = append(lines, fmt.Sprintf("%s %s %s %s→%s %d", r.User, r.Verb, r.Name, r.SentResourceVersion, r.ResourceVersion, r.Code))
		if r.Time.IsZero() || r.Revision == 0 || r.GroupResource() != "configmaps" || r.Namespace != h.ns {
			t.Errorf("request %v", r)
		}
	}
	// The size is 5: the create, the oldest, was dropped for the
	// checker's GET.
	want := []string{
		fmt.Sprintf("controller update %s %s→%s 200", created.Name, created.ResourceVersion, updated.ResourceVersion),
		fmt.Sprintf("controller update %s %s→ 409", created.Name, created.ResourceVersion),
		fmt.Sprintf("controller list  0→%s 200", list.ResourceVersion),
		fmt.Sprintf("controller delete %s %s→", created.Name, updated.ResourceVersion),
	}
	if len(lines) != len(want) {
		t.Fatalf("recorded:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("recorded %q, want %q", lines[i], want[i])
		}
	}
	if rec.Dropped() != 1 || rec.Count(apiservertest.Match{}) != 5 || rec.Count(apiservertest.Match{Verb: "get"}) != 1 {
		t.Errorf("dropped %d, kept %v", rec.Dropped(), rec.Requests(apiservertest.Match{}))
	}
	mu.Lock()
	if len(seen) != 6 || seen[0].Verb != "create" || seen[0].Name != created.Name || seen[0].ResourceVersion != created.ResourceVersion || seen[0].Code != 201 {
		t.Errorf("OnRequest saw %v", seen)
	}
	mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := rec.Wait(wctx, apiservertest.Match{Verb: "watch"}, 1); err == nil {
		t.Error("Wait for a watch that never came: no error")
	}
	rec.Stop()
	h.admin.CoreV1().ConfigMaps(h.ns).Get(ctx, "still-nothing", metav1.GetOptions{})
	if rec.Dropped() != 1 {
		t.Error("a stopped record still records")
	}
}

// A fault ends when released, when its count is spent, or after
// ReleaseAfter; released again, nothing happens.
func TestFaultLifecycle(t *testing.T) {
	h := newHarness(t, apiservertest.Options{})
	h.create("a", "1")
	get := func() error {
		_, err := h.ctrlCS.CoreV1().ConfigMaps(h.ns).Get(ctxFor(t), "a", metav1.GetOptions{})
		return err
	}
	fail := func(n int) *apiservertest.Fault {
		f, err := h.faults.For(controller).Fail(apiservertest.Match{Verb: "get"}, n, apiservertest.InternalError)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	f := fail(2)
	if get() == nil || get() == nil || get() != nil {
		t.Error("Fail(2) did not fail exactly two requests")
	}
	if f.Hits() != 2 {
		t.Errorf("hits %d", f.Hits())
	}
	f = fail(100)
	f.Release()
	f.Release()
	if get() != nil {
		t.Error("a released fault still fails")
	}
	f = fail(100).ReleaseAfter(100 * time.Millisecond)
	if get() == nil {
		t.Error("the fault did not act before its time")
	}
	<-f.Done()
	if get() != nil {
		t.Error("the fault acted after its time")
	}
	// Another client's requests, and a token's scope.
	fail(100)
	if _, err := h.admin.CoreV1().ConfigMaps(h.ns).Get(ctxFor(t), "a", metav1.GetOptions{}); err != nil {
		t.Errorf("the checker's GET failed: %v", err)
	}
	h.faults.ReleaseAll()
	other := h.env.ConfigFor(apiservertest.UserInfo{Name: "controller", Groups: []string{"system:masters"}})
	byToken, err := h.faults.For(apiservertest.ClientOf(h.ctrl)).Fail(apiservertest.Match{}, 100, apiservertest.InternalError)
	if err != nil {
		t.Fatal(err)
	}
	ocs, err := kubernetes.NewForConfig(other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ocs.CoreV1().ConfigMaps(h.ns).Get(ctxFor(t), "a", metav1.GetOptions{}); err != nil {
		t.Errorf("the same user with another token failed: %v", err)
	}
	if get() == nil {
		t.Error("the token's own request did not fail")
	}
	byToken.Release()
	if s := byToken.String(); !strings.Contains(s, "Fail(") || !strings.Contains(s, "a token") {
		t.Errorf("String() = %q", s)
	}
}

// Faults are the embedded server's: on the real kube-apiserver Env.Faults
// skips the test, loudly.
func TestFaultsOnTargets(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		f := env.Faults() // skips on the real server
		if env.Target != apiservertest.Embedded {
			t.Fatal("Env.Faults returned on the real server")
		}
		if f != env.Embedded.Faults() {
			t.Error("two Faults for one server")
		}
	})
}
