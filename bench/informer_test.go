package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cgcache "k8s.io/client-go/tools/cache"
	cgworkqueue "k8s.io/client-go/util/workqueue"

	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/reflector"
	"kloop.dev/kloop/workqueue"
)

// informerObjects is the number of objects the informer benchmarks cache:
// BENCH_INFORMER_OBJECTS, default 10,000 (the issue also asks for 100,000).
func informerObjects() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_INFORMER_OBJECTS")); err == nil && n > 0 {
		return n
	}
	return 10_000
}

// listServer is a minimal API server for one resource: it serves a
// pre-encoded JSON list (whatever the limit), rejects streaming lists as a
// server without WatchList does (422), and holds watches open without events.
// Both contenders therefore decode the same bytes over the same transport.
func listServer(tb testing.TB, path string, list []byte) *rest.Config {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		w.Header().Set("Content-Type", "application/json")
		if q.Get("watch") == "true" || q.Get("watch") == "1" {
			if q.Get("sendInitialEvents") == "true" {
				st := apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), "", nil).Status()
				st.Message = "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
				w.WriteHeader(http.StatusUnprocessableEntity)
				_ = json.NewEncoder(w).Encode(st)
				return
			}
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		_, _ = w.Write(list)
	}))
	tb.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}, QPS: -1}
}

func encodeList(tb testing.TB, kind, apiVersion string, items []any) []byte {
	tb.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":"500000"},"items":[`, kind, apiVersion)
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		j, err := json.Marshal(it)
		if err != nil {
			tb.Fatal(err)
		}
		b.Write(j)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// heapInUse is the live heap after two collections.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

type syncResult struct {
	toSync   time.Duration
	perObj   float64
	objects  int
	released func()
}

// syncContender starts an informer against cfg, waits for it to sync, and
// measures the time and the live heap it added.
type syncContender struct {
	name  string
	start func(tb testing.TB, cfg *rest.Config, stop <-chan struct{}) (synced func() bool, count func() int)
}

func runSync(b *testing.B, cfg *rest.Config, n int, c syncContender) {
	var total time.Duration
	var perObj float64
	for range b.N {
		b.StopTimer()
		stop := make(chan struct{})
		before := heapInUse()
		b.StartTimer()
		start := time.Now()
		synced, count := c.start(b, cfg, stop)
		for !synced() {
			time.Sleep(100 * time.Microsecond)
		}
		total += time.Since(start)
		b.StopTimer()
		if got := count(); got != n {
			b.Fatalf("%s cached %d objects, want %d", c.name, got, n)
		}
		after := heapInUse()
		perObj += float64(after-before) / float64(n)
		runtime.KeepAlive(count)
		close(stop)
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-sync")
	b.ReportMetric(perObj/float64(b.N), "live-B/object")
}

// kloopPods: an informer over a REST ListerWatcher that skips managedFields
// while decoding (the informer strips them anyway), as the manager's and the
// factory's informers do by default. kloopPodsDecodeAll decodes them (the
// ListerWatcher's default), and the informer strips them.
func kloopPods(tb testing.TB, cfg *rest.Config, stop <-chan struct{}) (func() bool, func() int) {
	return kloopPodsWith(tb, cfg, stop, true)
}

func kloopPodsDecodeAll(tb testing.TB, cfg *rest.Config, stop <-chan struct{}) (func() bool, func() int) {
	return kloopPodsWith(tb, cfg, stop, false)
}

func kloopPodsWith(tb testing.TB, cfg *rest.Config, stop <-chan struct{}, drop bool) (func() bool, func() int) {
	lw, err := reflector.NewRESTListerWatcher[*corev1.Pod](cfg, corev1.SchemeGroupVersion.WithResource("pods"), "",
		reflector.RESTOptions[*corev1.Pod]{DropManagedFields: drop})
	if err != nil {
		tb.Fatal(err)
	}
	inf, err := informer.New[*corev1.Pod](lw, informer.Options[*corev1.Pod]{})
	if err != nil {
		tb.Fatal(err)
	}
	runInformer(tb, inf.Run, stop)
	return inf.HasSynced, inf.Len
}

func runInformer(tb testing.TB, run func(context.Context) error, stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			tb.Error(err)
		}
	}()
	go func() { <-stop; cancel() }()
	tb.Cleanup(func() { cancel(); <-done })
}

func clientGoPods(strip bool) func(tb testing.TB, cfg *rest.Config, stop <-chan struct{}) (func() bool, func() int) {
	return func(tb testing.TB, cfg *rest.Config, stop <-chan struct{}) (func() bool, func() int) {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			tb.Fatal(err)
		}
		lw := cgcache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", "", fields.Everything())
		inf := cgcache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cgcache.Indexers{cgcache.NamespaceIndex: cgcache.MetaNamespaceIndexFunc})
		if strip {
			_ = inf.SetTransform(func(o any) (any, error) {
				if m, ok := o.(metav1.Object); ok {
					m.SetManagedFields(nil)
				}
				return o, nil
			})
		}
		go inf.Run(stop)
		return inf.HasSynced, func() int { return len(inf.GetStore().ListKeys()) }
	}
}

// BenchmarkInformerSyncPods: time to synced and live heap per cached Pod, for
// realistic Pods with managedFields, listed over HTTP as JSON.
// client-go+strip is client-go with a transform that drops managedFields.
func BenchmarkInformerSyncPods(b *testing.B) {
	n := informerObjects()
	items := make([]any, n)
	for i := range items {
		items[i] = makePod(i)
	}
	list := encodeList(b, "PodList", "v1", items)
	items = nil
	cfg := listServer(b, "/api/v1/pods", list)
	b.Logf("%d pods, %d bytes of JSON (%d per pod)", n, len(list), len(list)/n)
	var r ratios
	for _, c := range []syncContender{
		{"kloop", kloopPods},
		{"kloop-decode-managedfields", kloopPodsDecodeAll},
		{"client-go", clientGoPods(false)},
		{"client-go+strip", clientGoPods(true)},
	} {
		b.Run(fmt.Sprintf("objects=%d/%s", n, c.name), func(b *testing.B) {
			runSync(b, cfg, n, c)
			r.record(c.name, b)
		})
	}
	r.print(fmt.Sprintf("informer sync %d pods", n))
}

func widgetScheme() *kruntime.Scheme {
	s := kruntime.NewScheme()
	s.AddKnownTypes(widgetGV, &Widget{}, &WidgetList{})
	metav1.AddToGroupVersion(s, widgetGV)
	return s
}

func kloopWidgets(tb testing.TB, cfg *rest.Config, stop <-chan struct{}) (func() bool, func() int) {
	lw, err := reflector.NewRESTListerWatcher[*Widget](cfg, widgetGV.WithResource("widgets"), "", reflector.RESTOptions[*Widget]{})
	if err != nil {
		tb.Fatal(err)
	}
	inf, err := informer.New[*Widget](lw, informer.Options[*Widget]{})
	if err != nil {
		tb.Fatal(err)
	}
	runInformer(tb, inf.Run, stop)
	return inf.HasSynced, inf.Len
}

func clientGoWidgets(tb testing.TB, cfg *rest.Config, stop <-chan struct{}) (func() bool, func() int) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &widgetGV
	c.APIPath = "/apis"
	c.NegotiatedSerializer = serializer.NewCodecFactory(widgetScheme()).WithoutConversion()
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		tb.Fatal(err)
	}
	lw := cgcache.NewListWatchFromClient(rc, "widgets", "", fields.Everything())
	inf := cgcache.NewSharedIndexInformer(lw, &Widget{}, 0, cgcache.Indexers{cgcache.NamespaceIndex: cgcache.MetaNamespaceIndexFunc})
	go inf.Run(stop)
	return inf.HasSynced, func() int { return len(inf.GetStore().ListKeys()) }
}

// BenchmarkInformerSyncCRs: time to synced for a custom resource with a
// 2 KB spec decoded into a Go struct, as controllers decode their own kinds.
func BenchmarkInformerSyncCRs(b *testing.B) {
	n := informerObjects()
	items := make([]any, n)
	for i := range items {
		items[i] = makeWidget(i)
	}
	list := encodeList(b, "WidgetList", widgetGV.String(), items)
	items = nil
	cfg := listServer(b, "/apis/example.com/v1/widgets", list)
	b.Logf("%d widgets, %d bytes of JSON (%d per widget)", n, len(list), len(list)/n)
	var r ratios
	for _, c := range []syncContender{{"kloop", kloopWidgets}, {"client-go", clientGoWidgets}} {
		b.Run(fmt.Sprintf("objects=%d/%s", n, c.name), func(b *testing.B) {
			runSync(b, cfg, n, c)
			r.record(c.name, b)
		})
	}
	r.print(fmt.Sprintf("informer sync %d CRs", n))
}

// chanWatch is a kloop reflector.Watch fed from a channel.
type chanWatch[T reflector.Object] struct {
	ch   chan reflector.Event[T]
	stop chan struct{}
}

func newChanWatch[T reflector.Object]() *chanWatch[T] {
	return &chanWatch[T]{ch: make(chan reflector.Event[T], 1024), stop: make(chan struct{})}
}

func (w *chanWatch[T]) Next() (reflector.Event[T], error) {
	select {
	case e := <-w.ch:
		return e, nil
	case <-w.stop:
		return reflector.Event[T]{}, io.EOF
	}
}
func (w *chanWatch[T]) Stop() {}

// chanLW lists the initial objects and opens one watch, w; a second watch
// waits for the end (without watch-list, as a server without it: 422).
type chanLW[T reflector.Object] struct {
	items []T
	w     *chanWatch[T]
	once  atomic.Bool
}

func (l *chanLW[T]) List(context.Context, metav1.ListOptions) (*reflector.List[T], error) {
	return &reflector.List[T]{Items: l.items, ResourceVersion: "1"}, nil
}

func (l *chanLW[T]) Watch(ctx context.Context, opts metav1.ListOptions) (reflector.Watch[T], error) {
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		return nil, apierrors.NewInvalid(schema.GroupKind{}, "", nil)
	}
	if !l.once.CompareAndSwap(false, true) {
		<-ctx.Done() // one watch only: later ones wait for the end
		return nil, ctx.Err()
	}
	return l.w, nil
}

// cgLW is a client-go ListerWatcher over a channel, without watch-list.
type cgLW struct {
	items []corev1.Pod
	w     *watch.FakeWatcher
}

func (l *cgLW) List(metav1.ListOptions) (kruntime.Object, error) {
	return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: l.items}, nil
}
func (l *cgLW) Watch(metav1.ListOptions) (watch.Interface, error) { return l.w, nil }
func (l *cgLW) IsWatchListSemanticsUnSupported() bool             { return true }

// BenchmarkInformerUpdateEvents: pre-decoded update events of 1,000 cached
// Pods go through the informer to a handler that enqueues the object's key
// into a work queue, the path of every event in a controller. ns/op is per
// event; allocs/op and B/op include everything on that path. Each event
// carries a distinct object, as a decoder hands out (8 copies of each Pod,
// used in turn), never the object already cached.
func BenchmarkInformerUpdateEvents(b *testing.B) {
	const cached, copies = 1000, 8
	pods := make([]*corev1.Pod, cached)
	for i := range pods {
		pods[i] = makePod(i)
		pods[i].ManagedFields = nil
	}
	events := make([]*corev1.Pod, cached*copies)
	for i := range events {
		events[i] = pods[i%cached].DeepCopy()
		// A watch's update carries a new resourceVersion, always.
		events[i].ResourceVersion = strconv.Itoa(cached + 1 + i)
	}
	var r ratios
	kloop := func(name string, opts informer.Options[*corev1.Pod]) {
		b.Run(name, func(b *testing.B) {
			q, _ := workqueue.New(workqueue.Options[string]{})
			defer q.ShutDown()
			w := newChanWatch[*corev1.Pod]()
			lw := &chanLW[*corev1.Pod]{items: pods, w: w}
			inf, err := informer.New[*corev1.Pod](lw, opts)
			if err != nil {
				b.Fatal(err)
			}
			var seen atomic.Int64
			_, err = inf.AddHandler(informer.HandlerFuncs[*corev1.Pod]{
				UpdateFunc: func(_, obj *corev1.Pod) {
					q.Add(obj.Namespace + "/" + obj.Name)
					seen.Add(1)
				},
			}, informer.HandlerOptions{})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = inf.Run(ctx) }()
			if err := inf.WaitForCacheSync(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				w.ch <- reflector.Event[*corev1.Pod]{Type: watch.Modified, Object: events[i%len(events)]}
			}
			for seen.Load() < int64(b.N) {
				runtime.Gosched()
			}
			b.StopTimer()
			close(w.stop)
			cancel()
			<-done
			r.record(name, b)
		})
	}
	kloop("kloop", informer.Options[*corev1.Pod]{})
	kloop("kloop+InternUpdates", informer.Options[*corev1.Pod]{InternUpdates: true})
	b.Run("client-go", func(b *testing.B) {
		q := cgworkqueue.NewTyped[string]()
		defer q.ShutDown()
		items := make([]corev1.Pod, cached)
		for i := range items {
			items[i] = *pods[i]
		}
		fw := watch.NewFakeWithChanSize(1024, false)
		inf := cgcache.NewSharedIndexInformer(&cgLW{items: items, w: fw}, &corev1.Pod{}, 0, cgcache.Indexers{cgcache.NamespaceIndex: cgcache.MetaNamespaceIndexFunc})
		var seen atomic.Int64
		_, err := inf.AddEventHandler(cgcache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, obj any) {
				if key, err := cgcache.MetaNamespaceKeyFunc(obj); err == nil {
					q.Add(key)
				}
				seen.Add(1)
			},
		})
		if err != nil {
			b.Fatal(err)
		}
		stop := make(chan struct{})
		go inf.Run(stop)
		if !cgcache.WaitForCacheSync(stop, inf.HasSynced) {
			b.Fatal("client-go informer did not sync")
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			fw.Modify(events[i%len(events)])
		}
		for seen.Load() < int64(b.N) {
			runtime.Gosched()
		}
		b.StopTimer()
		close(stop)
		r.record("client-go", b)
	})
	r.print("informer update events to a key-enqueuing handler")
}
