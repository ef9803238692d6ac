package informer_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/reflector"
)

// The integration tests below run on both servers (apiservertest.ForEachTarget):
// kloop's embedded API server and a real kube-apiserver with etcd. On the real
// one every test of the binary shares the server, so tests work in their own
// namespaces and scope cluster-wide informers by a label of their own.

// link is an http.RoundTripper between the informers and a server (either
// target) that can be partitioned: open watches are cut and new ones refused
// with 503 until heal. It also records what was asked.
type link struct {
	next http.RoundTripper

	mu      sync.Mutex // guards the fields below
	blocked bool
	accepts []string                   // Accept headers seen
	answers map[string]int             // "resource media-type" → successful answers
	watches map[string]int             // resource → watch requests (streaming lists included)
	lists   map[string]int             // resource → other GET requests
	cancels map[int]context.CancelFunc // of the open watches
	bodies  map[int]*cutBody           // of the open watches
	nextID  int
	// refuseWatchList answers streaming lists with 422, as a server
	// without them does; refused counts those answers.
	refuseWatchList bool
	refused         int
}

func (l *link) RoundTrip(req *http.Request) (*http.Response, error) {
	isWatch := req.URL.Query().Get("watch") == "true"
	resource := path.Base(req.URL.Path)
	l.mu.Lock()
	l.accepts = append(l.accepts, req.Header.Get("Accept"))
	if !isWatch {
		if req.Method == http.MethodGet {
			l.lists[resource]++
		}
		l.mu.Unlock()
		resp, err := l.next.RoundTrip(req)
		if err == nil {
			l.answered(resource, resp)
		}
		return resp, err
	}
	l.watches[resource]++
	if l.refuseWatchList && req.URL.Query().Get("sendInitialEvents") == "true" {
		l.refused++
		l.mu.Unlock()
		// What a server without streaming lists answers.
		body := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","code":422,"reason":"Invalid","message":"sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"}`
		return &http.Response{StatusCode: http.StatusUnprocessableEntity, Status: "422 Unprocessable Entity",
			Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)),
			ContentLength: int64(len(body)), Request: req}, nil
	}
	if l.blocked {
		l.mu.Unlock()
		body := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","code":503,"reason":"ServiceUnavailable","message":"partitioned"}`
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable",
			Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)),
			ContentLength: int64(len(body)), Request: req}, nil
	}
	ctx, cancel := context.WithCancel(req.Context())
	id := l.nextID
	l.nextID++
	l.cancels[id] = cancel
	l.mu.Unlock()
	done := func() {
		l.mu.Lock()
		delete(l.cancels, id)
		delete(l.bodies, id)
		l.mu.Unlock()
		cancel()
	}
	resp, err := l.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		done()
		return nil, err
	}
	l.answered(resource, resp)
	body := &cutBody{ReadCloser: resp.Body, hook: done}
	l.mu.Lock()
	if ctx.Err() != nil {
		// Partitioned while the request was under way.
		body.cut.Store(true)
	}
	l.bodies[id] = body
	l.mu.Unlock()
	resp.Body = body
	return resp, nil
}

// answered records the media type of a successful answer about resource.
func (l *link) answered(resource string, resp *http.Response) {
	if resp.StatusCode != http.StatusOK {
		return
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	l.mu.Lock()
	if l.answers == nil {
		l.answers = map[string]int{}
	}
	l.answers[resource+" "+mt]++
	l.mu.Unlock()
}

// answeredOnly fails unless every successful answer about resource was of
// media type mt.
func (l *link) answeredOnly(t *testing.T, resource, mt string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, n := range l.answers {
		if r, got, _ := strings.Cut(k, " "); r == resource && got != mt {
			t.Errorf("%d answers about %s in %s, want %s only (%v)", n, resource, got, mt, l.answers)
		}
	}
	if l.answers[resource+" "+mt] == 0 {
		t.Errorf("no answer about %s in %s (%v)", resource, mt, l.answers)
	}
}

// cutBody is a watch's response body that the link can cut: from then on
// reads fail, even one under way whose bytes arrived after the cut (the
// transport closes the connection asynchronously; without this, an event
// written after the partition could still get through).
type cutBody struct {
	io.ReadCloser
	cut  atomic.Bool
	once sync.Once
	hook func()
}

var errPartitioned = errors.New("link partitioned")

func (b *cutBody) Read(p []byte) (int, error) {
	if b.cut.Load() {
		return 0, errPartitioned
	}
	n, err := b.ReadCloser.Read(p)
	if b.cut.Load() {
		return 0, errPartitioned
	}
	return n, err
}

func (b *cutBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.hook)
	return err
}

// partition cuts the open watches and refuses new ones until heal.
func (l *link) partition() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.blocked = true
	for _, b := range l.bodies {
		b.cut.Store(true)
	}
	for _, cancel := range l.cancels {
		cancel()
	}
}

func (l *link) heal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.blocked = false
}

// counts returns the watch and list requests of a resource collection
// ("pods") so far.
func (l *link) counts(resource string) (watches, lists int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.watches[resource], l.lists[resource]
}

// testEnv is a server under test: the informers reach it through a link,
// the test's writes (cs) directly.
type testEnv struct {
	*apiservertest.Env
	cfg    *rest.Config
	client *http.Client // through net
	plain  *http.Client // straight to the server: the test's writes
	cs     *kubernetes.Clientset
	net    *link
}

// newEnv wraps env with HTTP clients whose connections are closed when the
// test ends (the real server outlives the test).
func newEnv(t *testing.T, env *apiservertest.Env) *testEnv {
	t.Helper()
	cfg := env.Config()
	l := &link{cancels: map[int]context.CancelFunc{}, bodies: map[int]*cutBody{}, watches: map[string]int{}, lists: map[string]int{}}
	t.Cleanup(l.partition)
	plain := env.HTTPClient(nil)
	cs, err := kubernetes.NewForConfigAndClient(cfg, plain)
	if err != nil {
		t.Fatal(err)
	}
	return &testEnv{Env: env, cfg: cfg, client: env.HTTPClient(func(rt http.RoundTripper) http.RoundTripper { l.next = rt; return l }), plain: plain, cs: cs, net: l}
}

// otherNamespace creates a second namespace for the test, unique like the
// first, and returns its name.
func (e *testEnv) otherNamespace(t *testing.T, ctx context.Context) string {
	t.Helper()
	name := e.Namespace
	if len(name) > 61 {
		name = name[len(name)-61:] // keeps the random suffix
	}
	name = "b-" + name
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := e.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

func (e *testEnv) factory(t *testing.T, opts informer.FactoryOptions) *informer.Factory {
	t.Helper()
	opts.HTTPClient = e.client
	if opts.Reflector.InitialBackoff == 0 {
		opts.Reflector.InitialBackoff = 5 * time.Millisecond
		opts.Reflector.MaxBackoff = 20 * time.Millisecond
	}
	f, err := informer.NewFactory(e.cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// startFactory runs f until the test ends.
func startFactory(t *testing.T, f *informer.Factory) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
}

func (e *testEnv) createPod(t *testing.T, ctx context.Context, ns, name string, labels map[string]string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
	out, err := e.cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rvOrder compares two resourceVersions. They are opaque to clients; both
// servers make them decimal numbers growing with each write, and tests
// compare only their order.
func rvOrder(t *testing.T, a, b string) int {
	t.Helper()
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil {
		t.Errorf("resourceVersions %q, %q are not decimal", a, b)
		return 0
	}
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// splitDeleting separates the recorded updates that set a deletionTimestamp
// from the other events.
func splitDeleting(evs []string) (others, deleting []string) {
	for _, ev := range evs {
		if strings.HasSuffix(ev, " deleting") {
			deleting = append(deleting, ev)
		} else {
			others = append(others, ev)
		}
	}
	return others, deleting
}

// Sync, updates and deletes through shared informers (one per scope) of
// namespace and label scope, then handlers added after the sync.
func TestIntegrationSyncUpdateDelete(t *testing.T) {
	for _, tc := range []struct {
		name      string
		watchList bool
		refused   bool // the server refuses streaming lists
		protobuf  bool // informer.FactoryOptions.Protobuf
	}{{"list then watch", false, false, false}, {"streaming list", true, false, false}, {"streaming list refused", true, true, false},
		{"protobuf list then watch", false, false, true}, {"protobuf streaming list", true, false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
				ctx := informer.Timeout(t)
				env := newEnv(t, ae)
				env.net.refuseWatchList = tc.refused
				ns, ns2 := env.Namespace, env.otherNamespace(t, ctx)
				// Cluster-wide scopes select this test's objects by label.
				mine := "kloop-test=" + ns
				labels := func(app string) map[string]string { return map[string]string{"app": app, "kloop-test": ns} }
				env.createPod(t, ctx, ns, "a", labels("web"))
				env.createPod(t, ctx, ns, "b", labels("db"))
				env.createPod(t, ctx, ns2, "c", labels("web"))

				f := env.factory(t, informer.FactoryOptions{Reflector: reflector.Options{DisableWatchList: !tc.watchList}, Protobuf: tc.protobuf})
				pods, err := informer.InformerFor[*corev1.Pod](f, informer.Scope{Namespace: ns})
				if err != nil {
					t.Fatal(err)
				}
				same, err := informer.InformerFor[*corev1.Pod](f, informer.Scope{Namespace: ns})
				if err != nil {
					t.Fatal(err)
				}
				web, err := informer.InformerFor[*corev1.Pod](f, informer.Scope{LabelSelector: "app=web," + mine})
				if err != nil {
					t.Fatal(err)
				}
				if same.Shared() != pods.Shared() || web.Shared() == pods.Shared() {
					t.Fatal("the factory does not share exactly one informer per scope")
				}
				rec := informer.NewRecorder()
				reg, err := pods.AddHandler(rec, informer.HandlerOptions{})
				if err != nil {
					t.Fatal(err)
				}
				startFactory(t, f)
				if err := f.WaitForCacheSync(ctx); err != nil {
					t.Fatal(err)
				}
				informer.WaitSynced(t, ctx, reg)
				env.net.mu.Lock()
				refused, lists := env.net.refused, env.net.lists["pods"]
				env.net.mu.Unlock()
				switch {
				case tc.refused && (refused != 2 || lists != 2):
					t.Fatalf("%d streaming lists refused, %d lists, want 2 and 2 (one per informer: fallback)", refused, lists)
				case tc.watchList && !tc.refused && lists != 0:
					t.Fatalf("%d lists with streaming lists", lists)
				}
				if pods.Len() != 2 || web.Len() != 2 {
					t.Fatalf("%s: %d pods, app=web: %d pods", ns, pods.Len(), web.Len())
				}
				if _, ok := web.Get(ns2, "c"); !ok {
					t.Fatal("app=web: pod c of the other namespace missing")
				}
				for _, p := range pods.List() {
					if p.ManagedFields != nil {
						t.Fatal("managedFields cached")
					}
				}

				a, _ := pods.Get(ns, "a")
				a = a.DeepCopy()
				a.Labels["version"] = "2"
				if _, err := env.cs.CoreV1().Pods(ns).Update(ctx, a, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				if err := env.cs.CoreV1().Pods(ns).Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				all := rec.WaitUntil(t, ctx, "the delete of b", func(evs []string) bool {
					return slices.ContainsFunc(evs, func(ev string) bool { return strings.HasPrefix(ev, "delete "+ns+"/b@") })
				})
				// A Pod is deleted gracefully even when it is not scheduled:
				// an update sets its deletionTimestamp (grace period 0), then
				// it is deleted.
				got, marked := splitDeleting(all)
				if len(marked) != 1 || !strings.HasPrefix(marked[0], "update b@") {
					t.Fatalf("updates with a deletionTimestamp: %q (all: %q)", marked, all)
				}
				slices.Sort(got[:2])
				prefixes := []string{"add a@", "add b@", "update a@", "delete " + ns + "/b@"}
				if len(got) != 4 || !slices.EqualFunc(got, prefixes, strings.HasPrefix) {
					t.Fatalf("events %q", all)
				}
				informer.WaitUntil(t, ctx, "the update in the label-scoped informer", func() bool {
					p, ok := web.Get(ns, "a")
					return ok && p.Labels["version"] == "2"
				})

				// Handlers added late, from another caller of the factory: each
				// gets a synthetic add of what is cached, then the changes.
				late := make([]*informer.Recorder, 5)
				for i := range late {
					late[i] = informer.NewRecorder()
					reg, err := same.AddHandler(late[i], informer.HandlerOptions{})
					if err != nil {
						t.Fatal(err)
					}
					informer.WaitSynced(t, ctx, reg)
				}
				env.createPod(t, ctx, ns, "z", nil)
				for _, r := range late {
					got := r.WaitFor(t, ctx, 2)
					if !strings.HasPrefix(got[0], "add a@") || !strings.HasSuffix(got[0], "initial=true") || !strings.HasPrefix(got[1], "add z@") {
						t.Fatalf("late handler: %q", got)
					}
				}
				mt := "application/json"
				if tc.protobuf {
					mt = "application/vnd.kubernetes.protobuf"
				}
				env.net.answeredOnly(t, "pods", mt)
			})
		})
	}
}

// The watch is cut while objects are deleted, changed and created, and the
// server's history is compacted before it comes back: the informer gets
// 410 Gone, relists, and handlers get tombstones with FinalStateUnknown
// carrying the last cached state; the cache equals the server afterwards.
//
// The kind is core/v1 Event: kube-apiserver has no watch cache for Events,
// so its watches see etcd's compaction and answer 410 as kloop's embedded
// server does (its watch cache would keep serving other kinds from old
// positions).
func TestIntegrationRelistAfterGone(t *testing.T) {
	for _, tc := range []struct {
		name      string
		watchList bool
	}{{"list then watch", false}, {"streaming list", true}} {
		t.Run(tc.name, func(t *testing.T) {
			apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
				ctx := informer.Timeout(t)
				env := newEnv(t, ae)
				ns := env.Namespace
				ec := env.cs.CoreV1().Events(ns)
				for _, n := range []string{"a", "b", "c"} {
					if _, err := ec.Create(ctx, event(ns, n, "first"), metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				f := env.factory(t, informer.FactoryOptions{Reflector: reflector.Options{DisableWatchList: !tc.watchList}})
				events, err := informer.InformerFor[*corev1.Event](f, informer.Scope{Namespace: ns})
				if err != nil {
					t.Fatal(err)
				}
				rec := informer.NewRecorderOf[*corev1.Event]()
				reg, err := events.AddHandler(rec, informer.HandlerOptions{})
				if err != nil {
					t.Fatal(err)
				}
				startFactory(t, f)
				informer.WaitSynced(t, ctx, reg)
				rec.WaitFor(t, ctx, 3)
				lastB, _ := events.Get(ns, "b")

				env.net.partition()
				if err := ec.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				c, err := ec.Get(ctx, "c", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				c.Message = "changed"
				if _, err := ec.Update(ctx, c, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := ec.Create(ctx, event(ns, "d", "first"), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				// Every watch is refused until heal: the informer comes back
				// at its old position, which the compaction makes Gone.
				if err := env.Compact(ctx); err != nil {
					t.Fatal(err)
				}
				env.net.heal()

				// The relist: c changed, d added, b gone; a, unchanged, is
				// no notification.
				got := rec.WaitFor(t, ctx, 6)
				informer.WaitUntil(t, ctx, "the handler's notifications delivered", func() bool { return reg.Pending() == 0 })
				if got = rec.Snapshot(); len(got) != 6 || slices.ContainsFunc(got[3:], func(ev string) bool { return strings.Contains(ev, " a@") }) {
					t.Fatalf("events after the relist %q: want c updated, d added, b deleted, nothing of a", got)
				}
				var tomb []string
				for _, ev := range got[3:] {
					if strings.HasPrefix(ev, "delete") {
						tomb = append(tomb, ev)
					}
				}
				if want := fmt.Sprintf("delete %s/b@%s unknown=true", ns, lastB.ResourceVersion); !slices.Equal(tomb, []string{want}) {
					t.Fatalf("tombstones %q, want %q (all: %q)", tomb, want, got)
				}
				list, err := ec.List(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				want := map[string]string{}
				for _, e := range list.Items {
					want[e.Name] = e.ResourceVersion + " " + e.Message
				}
				informer.WaitUntil(t, ctx, "the cache equal to the server", func() bool {
					have := map[string]string{}
					for _, e := range events.List() {
						have[e.Name] = e.ResourceVersion + " " + e.Message
					}
					return maps.Equal(have, want)
				})
				if len(want) != 3 || !strings.HasSuffix(want["c"], " changed") {
					t.Fatalf("server state %v", want)
				}
			})
		})
	}
}

func event(ns, name, msg string) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: name},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "subject"},
		Reason:         "Test", Message: msg, Type: corev1.EventTypeNormal,
	}
}

// Many handlers on one informer share its one watch; each gets every event
// in the server's order, and a stuck handler holds up none of the others
// and then gets everything, in order, too.
func TestIntegrationManyHandlers(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := informer.Timeout(t)
		env := newEnv(t, ae)
		ns := env.Namespace
		env.createPod(t, ctx, ns, "before", nil)
		f := env.factory(t, informer.FactoryOptions{})
		pods, err := informer.InformerFor[*corev1.Pod](f, informer.Scope{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		releaseOnce := sync.OnceFunc(func() { close(release) })
		defer releaseOnce() // a failing test must not leave it stuck
		stuck := informer.NewRecorder()
		var once sync.Once
		stuck.SetCheck(func(string, *corev1.Pod) { once.Do(func() { <-release }) })
		if _, err := pods.AddHandler(stuck, informer.HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
		fast := make([]*informer.Recorder, 20)
		for i := range fast {
			fast[i] = informer.NewRecorder()
			if _, err := pods.AddHandler(fast[i], informer.HandlerOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		startFactory(t, f)
		if err := f.WaitForCacheSync(ctx); err != nil {
			t.Fatal(err)
		}
		const n = 20
		var want []string
		for i := range n {
			p := env.createPod(t, ctx, ns, fmt.Sprint("p", i), nil)
			want = append(want, fmt.Sprintf("add %s@%s initial=false", p.Name, p.ResourceVersion))
		}
		want = append([]string{"add before@"}, want...)
		match := func(got []string) bool {
			return len(got) == len(want) && strings.HasPrefix(got[0], want[0]) &&
				strings.HasSuffix(got[0], "initial=true") && slices.Equal(got[1:], want[1:])
		}
		for i, r := range fast {
			if got := r.WaitFor(t, ctx, n+1); !match(got) {
				t.Fatalf("handler %d got\n%q\nwant\n%q", i, got, want)
			}
		}
		if got := len(stuck.Snapshot()); got != 0 {
			t.Fatalf("the stuck handler got %d events", got)
		}
		if watches, lists := env.net.counts("pods"); watches != 1 || lists != 0 {
			t.Errorf("%d watch and %d list requests for %d handlers, want one streaming list", watches, lists, len(fast)+1)
		}
		releaseOnce()
		if got := stuck.WaitFor(t, ctx, n+1); !match(got) {
			t.Fatalf("the stuck handler, released, got\n%q\nwant\n%q", got, want)
		}
	})
}

// Every handler call finds the cache already holding (at least) the state
// of its event: the informer updates the cache, then notifies.
func TestIntegrationCacheBeforeNotification(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := informer.Timeout(t)
		env := newEnv(t, ae)
		ns := env.Namespace
		f := env.factory(t, informer.FactoryOptions{})
		pods, err := informer.InformerFor[*corev1.Pod](f, informer.Scope{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		var (
			mu      sync.Mutex // guards checked
			checked int
		)
		rec := informer.NewRecorder()
		rec.SetCheck(func(ev string, p *corev1.Pod) {
			mu.Lock()
			checked++
			mu.Unlock()
			cached, ok := pods.Get(p.Namespace, p.Name)
			if strings.HasPrefix(ev, "delete") {
				if ok {
					t.Errorf("%s: object still cached", ev)
				}
				return
			}
			if !ok {
				// A deletion mark is followed at once by the delete, which
				// the cache may hold already: newer than the event.
				if !strings.HasSuffix(ev, " deleting") {
					t.Errorf("%s: not in the cache", ev)
				}
				return
			}
			if rvOrder(t, cached.ResourceVersion, p.ResourceVersion) < 0 {
				t.Errorf("%s: cache has resourceVersion %s, older than the event's", ev, cached.ResourceVersion)
			}
		})
		if _, err := pods.AddHandler(rec, informer.HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
		startFactory(t, f)
		if err := f.WaitForCacheSync(ctx); err != nil {
			t.Fatal(err)
		}
		// No object is deleted before all adds and updates are seen, and no
		// name comes back, so an add or update must find its object cached
		// at least as new as the event, and a delete must find it gone.
		const n = 10
		pc := env.cs.CoreV1().Pods(ns)
		for i := range n {
			p := env.createPod(t, ctx, ns, fmt.Sprint("p", i), nil)
			p.Labels = map[string]string{"v": "2"}
			if _, err := pc.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		rec.WaitFor(t, ctx, 2*n)
		for i := range n {
			if err := pc.Delete(ctx, fmt.Sprint("p", i), metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		got := rec.WaitUntil(t, ctx, "the deletes", func(evs []string) bool {
			return len(slices.DeleteFunc(slices.Clone(evs), func(ev string) bool { return !strings.HasPrefix(ev, "delete") })) == n
		})
		// Each Pod is marked (an update with a deletionTimestamp) before it
		// is deleted.
		if others, marks := splitDeleting(got); len(others) != 3*n || len(marks) != n {
			t.Fatalf("%d events besides %d deletion marks, want %d and %d: %q", len(others), len(marks), 3*n, n, got)
		}
		mu.Lock()
		defer mu.Unlock()
		if checked != len(got) {
			t.Fatalf("checked %d calls, %d events: %q", checked, len(got), got)
		}
	})
}

func TestIntegrationUnstructuredAndMetadata(t *testing.T) {
	for _, pb := range []bool{false, true} {
		t.Run(fmt.Sprintf("protobuf=%v", pb), func(t *testing.T) { testUnstructuredAndMetadata(t, pb) })
	}
}

// testUnstructuredAndMetadata: with protobuf, the typed and metadata-only
// informers list and watch in protobuf, the unstructured one in JSON.
func testUnstructuredAndMetadata(t *testing.T, protobuf bool) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := informer.Timeout(t)
		env := newEnv(t, ae)
		ns := env.Namespace
		env.createPod(t, ctx, ns, "a", map[string]string{"app": "web"})
		f := env.factory(t, informer.FactoryOptions{Protobuf: protobuf})
		gvk := corev1.SchemeGroupVersion.WithKind("Pod")
		u, err := f.Unstructured(gvk, informer.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := f.Metadata(gvk, informer.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		typed, err := informer.InformerFor[*corev1.Pod](f, informer.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		if u.Shared() == m.Shared() || u.Shared() == typed.Shared() || m.Shared() == typed.Shared() {
			t.Fatal("forms share an informer")
		}
		startFactory(t, f)
		if err := f.WaitForCacheSync(ctx); err != nil {
			t.Fatal(err)
		}
		uo, ok := u.Get(ns, "a")
		if !ok || uo.GetKind() != "Pod" || uo.GetLabels()["app"] != "web" {
			t.Fatalf("unstructured: %v %v", uo, ok)
		}
		if _, found, _ := unstructured.NestedSlice(uo.Object, "spec", "containers"); !found {
			t.Fatal("unstructured pod without spec.containers")
		}
		if uo.GetManagedFields() != nil {
			t.Fatal("managedFields cached")
		}
		env.net.mu.Lock()
		metaAsked := slices.ContainsFunc(env.net.accepts, func(a string) bool { return strings.Contains(a, "as=PartialObjectMetadata") })
		pbMetaAsked := slices.ContainsFunc(env.net.accepts, func(a string) bool {
			return strings.HasPrefix(a, "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata")
		})
		pbAnswers, jsonAnswers := env.net.answers["pods application/vnd.kubernetes.protobuf"], env.net.answers["pods application/json"]
		env.net.mu.Unlock()
		if !metaAsked {
			t.Fatal("the metadata informer never asked for PartialObjectMetadata")
		}
		// Each informer's streaming list: in protobuf, the typed and the
		// metadata one's.
		if pbMetaAsked != protobuf || protobuf && (pbAnswers < 2 || jsonAnswers < 1) || !protobuf && (pbAnswers > 0 || jsonAnswers < 3) {
			t.Fatalf("protobuf %v: metadata asked in protobuf %v; answers about pods: %d in protobuf, %d in JSON", protobuf, pbMetaAsked, pbAnswers, jsonAnswers)
		}
		mo, ok := m.Get(ns, "a")
		if !ok || mo.Labels["app"] != "web" || mo.Kind != "Pod" || mo.APIVersion != "v1" {
			t.Fatalf("metadata: %+v %v", mo, ok)
		}
		// Created after Start: runs at once.
		ns2 := env.otherNamespace(t, ctx)
		env.createPod(t, ctx, ns2, "b", nil)
		late, err := f.Metadata(gvk, informer.Scope{Namespace: ns2})
		if err != nil {
			t.Fatal(err)
		}
		if err := late.WaitForCacheSync(ctx); err != nil {
			t.Fatal(err)
		}
		if late.Len() != 1 {
			t.Fatalf("late informer has %d objects", late.Len())
		}
		informer.WaitUntil(t, ctx, "the new pod in the all-namespaces metadata informer", func() bool {
			_, ok := m.Get(ns2, "b")
			return ok
		})
	})
}

func TestFactoryErrors(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		env := newEnv(t, ae)
		f := env.factory(t, informer.FactoryOptions{})
		for name, fn := range map[string]func() error{
			"namespace on a cluster-scoped kind": func() error {
				_, err := informer.InformerFor[*corev1.Namespace](f, informer.Scope{Namespace: env.Namespace})
				return err
			},
			"bad label selector": func() error {
				_, err := informer.InformerFor[*corev1.Pod](f, informer.Scope{LabelSelector: "a=(b"})
				return err
			},
			"unknown kind": func() error {
				_, err := f.Unstructured(corev1.SchemeGroupVersion.WithKind("Nope"), informer.Scope{})
				return err
			},
			"unstructured through informer.InformerFor": func() error {
				_, err := informer.InformerFor[*unstructured.Unstructured](f, informer.Scope{})
				return err
			},
			"type not in scheme": func() error {
				_, err := informer.InformerFor[*notRegistered](f, informer.Scope{})
				return err
			},
		} {
			if err := fn(); err == nil {
				t.Errorf("%s: no error", name)
			}
		}
		if _, err := informer.NewFactory(nil, informer.FactoryOptions{}); err == nil {
			t.Error("nil config accepted")
		}
	})
}

// notRegistered is an object type that no scheme knows.
type notRegistered struct{ corev1.Pod }

// An explicit mapper (no discovery) is enough for the factory.
func TestIntegrationExplicitMapper(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := informer.Timeout(t)
		env := newEnv(t, ae)
		if _, err := env.cs.CoreV1().ConfigMaps(env.Namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		m := meta.NewDefaultRESTMapper(nil)
		m.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
		f := env.factory(t, informer.FactoryOptions{Mapper: informer.StaticMapper(m)})
		cms, err := informer.InformerFor[*corev1.ConfigMap](f, informer.Scope{Namespace: env.Namespace})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := informer.InformerFor[*corev1.Secret](f, informer.Scope{}); !meta.IsNoMatchError(err) {
			t.Fatalf("a kind the mapper does not know: %v", err)
		}
		startFactory(t, f)
		if err := f.WaitForCacheSync(ctx); err != nil {
			t.Fatal(err)
		}
		if _, ok := cms.Get(env.Namespace, "c"); !ok {
			t.Fatal("configmap not cached")
		}
	})
}

// gadgetGVK is a cluster-scoped custom resource of the tests (the embedded
// server serves no cluster-scoped built-in kind but Namespaces, whose
// deletion needs a namespace controller on the real server).
var gadgetGVK = schema.GroupVersionKind{Group: "clustertest.kloop.dev", Version: "v1", Kind: "Gadget"}

// installGadgets creates the Gadget CRD unless it exists (on the real
// server every test of the binary shares it) and waits until Gadgets can
// be listed.
func (e *testEnv) installGadgets(t *testing.T, ctx context.Context) dynamic.NamespaceableResourceInterface {
	t.Helper()
	dyn, err := dynamic.NewForConfigAndClient(e.cfg, e.plain)
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "gadgets.clustertest.kloop.dev"},
		"spec": map[string]any{
			"group": gadgetGVK.Group,
			"scope": "Cluster",
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
			"versions": []any{map[string]any{
				"name": gadgetGVK.Version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec": map[string]any{"type": "object", "properties": map[string]any{"size": map[string]any{"type": "integer"}}},
					},
				}},
			}},
		},
	}}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	gadgets := dyn.Resource(gadgetGVK.GroupVersion().WithResource("gadgets"))
	informer.WaitUntil(t, ctx, "the Gadget CRD served", func() bool {
		got, err := dyn.Resource(crdGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return false
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		established := slices.ContainsFunc(conds, func(c any) bool {
			m, ok := c.(map[string]any)
			return ok && m["type"] == "Established" && m["status"] == "True"
		})
		_, err = gadgets.List(ctx, metav1.ListOptions{Limit: 1})
		return established && err == nil
	})
	return gadgets
}

// A cluster-scoped kind (custom resources, through unstructured informers),
// scoped by a label (this test's) and by a field selector: sync, add,
// update and delete through the server's filtering. On the real server the
// objects of every test share one scope: unique names and the label.
func TestIntegrationClusterScoped(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := informer.Timeout(t)
		env := newEnv(t, ae)
		gadgets := env.installGadgets(t, ctx)
		name := func(s string) string { return env.Namespace + "-" + s }
		create := func(n string) *unstructured.Unstructured {
			t.Helper()
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gadgetGVK)
			u.SetName(name(n))
			u.SetLabels(map[string]string{"kloop-test": env.Namespace})
			out, err := gadgets.Create(ctx, u, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		create("a")
		f := env.factory(t, informer.FactoryOptions{})
		labeled, err := f.Unstructured(gadgetGVK, informer.Scope{LabelSelector: "kloop-test=" + env.Namespace})
		if err != nil {
			t.Fatal(err)
		}
		byName, err := f.Unstructured(gadgetGVK, informer.Scope{FieldSelector: "metadata.name=" + name("b")})
		if err != nil {
			t.Fatal(err)
		}
		rec := informer.NewRecorderOf[*unstructured.Unstructured]()
		if _, err := labeled.AddHandler(rec, informer.HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
		startFactory(t, f)
		if err := f.WaitForCacheSync(ctx); err != nil {
			t.Fatal(err)
		}
		if byName.Len() != 0 {
			t.Fatalf("field-scoped informer holds %d objects before b exists", byName.Len())
		}
		b := create("b")
		if err := unstructured.SetNestedField(b.Object, int64(3), "spec", "size"); err != nil {
			t.Fatal(err)
		}
		if _, err := gadgets.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := gadgets.Delete(ctx, name("a"), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		got := rec.WaitFor(t, ctx, 4)
		want := []string{"add " + name("a") + "@", "add " + name("b") + "@", "update " + name("b") + "@", "delete " + name("a") + "@"}
		if len(got) != 4 || !slices.EqualFunc(got, want, strings.HasPrefix) {
			t.Fatalf("events %q, want prefixes %q", got, want)
		}
		if _, ok := labeled.Get("", name("b")); !ok || labeled.Len() != 1 {
			t.Fatalf("label-scoped informer: %d objects", labeled.Len())
		}
		informer.WaitUntil(t, ctx, "the update in the field-scoped informer", func() bool {
			g, ok := byName.Get("", name("b"))
			if !ok {
				return false
			}
			size, _, _ := unstructured.NestedInt64(g.Object, "spec", "size")
			return size == 3 && byName.Len() == 1
		})
	})
}

// TestIntegrationManagedFields: the factory's informers cache objects
// without managedFields (skipped while decoding, list and watch) unless
// KeepManagedFields; both servers record them on every write.
func TestIntegrationManagedFields(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		for _, keep := range []bool{false, true} {
			t.Run(fmt.Sprint("keep=", keep), func(t *testing.T) {
				ctx := informer.Timeout(t)
				env := newEnv(t, ae)
				ns := env.Namespace
				name := fmt.Sprint("listed-", keep)
				env.createPod(t, ctx, ns, name, map[string]string{"keep": fmt.Sprint(keep)})
				f := env.factory(t, informer.FactoryOptions{KeepManagedFields: keep})
				pods, err := informer.InformerFor[*corev1.Pod](f, informer.Scope{Namespace: ns, LabelSelector: fmt.Sprint("keep=", keep)})
				if err != nil {
					t.Fatal(err)
				}
				startFactory(t, f)
				if err := f.WaitForCacheSync(ctx); err != nil {
					t.Fatal(err)
				}
				watched := env.createPod(t, ctx, ns, fmt.Sprint("watched-", keep), map[string]string{"keep": fmt.Sprint(keep)})
				informer.WaitUntil(t, ctx, "the watched pod", func() bool { _, ok := pods.Get(ns, watched.Name); return ok })
				want := keep
				for _, p := range pods.List() {
					if got := p.ManagedFields != nil; got != want {
						t.Errorf("%s: managedFields cached %v, want %v", p.Name, got, want)
					}
				}
			})
		}
	})
}
