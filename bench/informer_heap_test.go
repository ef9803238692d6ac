package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	cgcache "k8s.io/client-go/tools/cache"

	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/reflector"
)

// decodePods returns n realistic Pods (with managedFields), each decoded
// from its own JSON as a watch decoder hands them out (no string shared
// with anything else), at resourceVersion rv+i.
func decodePods(tb testing.TB, n, rv int) []*corev1.Pod {
	tb.Helper()
	out := make([]*corev1.Pod, n)
	for i := range out {
		p := makePod(i)
		p.ResourceVersion = strconv.Itoa(rv + i)
		data, err := json.Marshal(p)
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = &corev1.Pod{}
		if err := json.Unmarshal(data, out[i]); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

// handOffLW lists its items once and then forgets them, and streams the
// events sent on ch; it holds no object after handing it over, so the live
// heap is what the informer keeps.
type handOffLW struct {
	mu    sync.Mutex
	items []*corev1.Pod
	ch    chan reflector.Event[*corev1.Pod]
	stop  chan struct{}
	once  atomic.Bool
}

func (l *handOffLW) List(context.Context, metav1.ListOptions) (*reflector.List[*corev1.Pod], error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	items := l.items
	l.items = nil
	return &reflector.List[*corev1.Pod]{Items: items, ResourceVersion: "1"}, nil
}

func (l *handOffLW) Watch(ctx context.Context, opts metav1.ListOptions) (reflector.Watch[*corev1.Pod], error) {
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		return nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), "", nil)
	}
	if !l.once.CompareAndSwap(false, true) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &chanWatch[*corev1.Pod]{ch: l.ch, stop: l.stop}, nil
}

// cgHandOffLW is handOffLW for client-go's informer.
type cgHandOffLW struct {
	mu    sync.Mutex
	items []corev1.Pod
	w     *watch.FakeWatcher
}

func (l *cgHandOffLW) List(metav1.ListOptions) (kruntime.Object, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	items := l.items
	l.items = nil
	return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: items}, nil
}
func (l *cgHandOffLW) Watch(metav1.ListOptions) (watch.Interface, error) { return l.w, nil }
func (l *cgHandOffLW) IsWatchListSemanticsUnSupported() bool             { return true }

// heapContender caches n Pods, then applies one update to each, reporting
// the live heap per cached Pod after the sync and after the updates.
type heapContender struct {
	name string
	// run starts an informer over list and returns a function that sends
	// one update event, its HasSynced, and the count of updates handled.
	run func(tb testing.TB, list []*corev1.Pod, stop <-chan struct{}) (send func(*corev1.Pod), synced func() bool, updated func() int64)
}

// BenchmarkInformerHeapAfterUpdates: live heap per cached Pod right after
// the initial list, and after every Pod got one update (a new version
// decoded from JSON, as a watch delivers it) — the steady state of a
// cluster whose Pods change. kloop default (metadata interned on updates),
// kloop with InternUpdates, kloop without interning, client-go default.
func BenchmarkInformerHeapAfterUpdates(b *testing.B) {
	n := informerObjects()
	kloop := func(opts informer.Options[*corev1.Pod]) func(testing.TB, []*corev1.Pod, <-chan struct{}) (func(*corev1.Pod), func() bool, func() int64) {
		return func(tb testing.TB, list []*corev1.Pod, stop <-chan struct{}) (func(*corev1.Pod), func() bool, func() int64) {
			lw := &handOffLW{items: list, ch: make(chan reflector.Event[*corev1.Pod], 1024), stop: make(chan struct{})}
			inf, err := informer.New[*corev1.Pod](lw, opts)
			if err != nil {
				tb.Fatal(err)
			}
			var updates atomic.Int64
			if _, err := inf.AddHandler(informer.HandlerFuncs[*corev1.Pod]{
				UpdateFunc: func(_, _ *corev1.Pod) { updates.Add(1) },
			}, informer.HandlerOptions{}); err != nil {
				tb.Fatal(err)
			}
			go func() { <-stop; close(lw.stop) }()
			runInformer(tb, inf.Run, stop)
			send := func(p *corev1.Pod) { lw.ch <- reflector.Event[*corev1.Pod]{Type: watch.Modified, Object: p} }
			return send, inf.HasSynced, updates.Load
		}
	}
	contenders := []heapContender{
		{"kloop", kloop(informer.Options[*corev1.Pod]{})},
		{"kloop+InternUpdates", kloop(informer.Options[*corev1.Pod]{InternUpdates: true})},
		{"kloop+DisableInterning", kloop(informer.Options[*corev1.Pod]{DisableInterning: true})},
		{"client-go", func(tb testing.TB, list []*corev1.Pod, stop <-chan struct{}) (func(*corev1.Pod), func() bool, func() int64) {
			items := make([]corev1.Pod, len(list))
			for i, p := range list {
				items[i] = *p
			}
			fw := watch.NewFakeWithChanSize(1024, false)
			inf := cgcache.NewSharedIndexInformer(&cgHandOffLW{items: items, w: fw}, &corev1.Pod{}, 0, cgcache.Indexers{cgcache.NamespaceIndex: cgcache.MetaNamespaceIndexFunc})
			var updates atomic.Int64
			if _, err := inf.AddEventHandler(cgcache.ResourceEventHandlerFuncs{
				UpdateFunc: func(_, _ any) { updates.Add(1) },
			}); err != nil {
				tb.Fatal(err)
			}
			go inf.Run(stop)
			return func(p *corev1.Pod) { fw.Modify(p) }, inf.HasSynced, updates.Load
		}},
	}
	for _, c := range contenders {
		b.Run(fmt.Sprintf("objects=%d/%s", n, c.name), func(b *testing.B) {
			var afterSync, afterUpdates float64
			for range b.N {
				b.StopTimer()
				before := heapInUse()
				list := decodePods(b, n, 2)
				stop := make(chan struct{})
				send, synced, updated := c.run(b, list, stop)
				list = nil
				for !synced() {
					time.Sleep(100 * time.Microsecond)
				}
				afterSync += float64(heapInUse()-before) / float64(n)
				next := decodePods(b, n, 2+n)
				b.StartTimer()
				for i := range next {
					send(next[i])
					next[i] = nil // handed over
				}
				for updated() < int64(n) {
					time.Sleep(100 * time.Microsecond)
				}
				b.StopTimer()
				afterUpdates += float64(heapInUse()-before) / float64(n)
				runtime.KeepAlive(send)
				close(stop)
			}
			b.ReportMetric(afterSync/float64(b.N), "synced-B/object")
			b.ReportMetric(afterUpdates/float64(b.N), "updated-B/object")
		})
	}
}
