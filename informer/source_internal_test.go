package informer

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/reconcile"
)

// batchQueue is a handler.BatchEnqueuer that records how requests came.
type batchQueue struct {
	mu    sync.Mutex // guards calls and reqs
	calls []string   // "add ns/name", "after ns/name", "all N"
	reqs  []string   // every request, in the order it arrived
}

func (q *batchQueue) Add(r reconcile.Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls = append(q.calls, "add "+r.String())
	q.reqs = append(q.reqs, r.String())
}

func (q *batchQueue) AddAfter(r reconcile.Request, _ time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls = append(q.calls, "after "+r.String())
	q.reqs = append(q.reqs, r.String())
}

func (q *batchQueue) AddAll(rs []reconcile.Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls = append(q.calls, fmt.Sprint("all ", len(rs)))
	for _, r := range rs {
		q.reqs = append(q.reqs, r.String())
	}
}

func (q *batchQueue) snapshot() (calls, reqs []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.calls), slices.Clone(q.reqs)
}

func req(i int) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("r", i)}}
}

// A batcher collects a run's adds and hands them over at its end, in order,
// with one AddAll; a full batch goes at once; delayed adds and adds outside a
// run go straight to the queue.
func TestBatcher(t *testing.T) {
	q := &batchQueue{}
	b := batchOver(q).(*batcher)
	if batchOver(nonBatching{}) != (nonBatching{}) {
		t.Fatal("batch wrapped an Enqueuer without AddAll")
	}

	b.Add(req(0)) // no run: at once
	b.open.Store(true)
	b.Add(req(1))
	b.Add(req(2))
	b.AddAfter(req(3), time.Second)
	b.Add(req(1))
	if calls, _ := q.snapshot(); !slices.Equal(calls, []string{"add ns/r0", "after ns/r3"}) {
		t.Fatalf("during the run the queue got %q", calls)
	}
	b.flush(true)
	b.flush(true) // nothing more
	b.Add(req(4)) // the run is over: at once
	calls, reqs := q.snapshot()
	if want := []string{"add ns/r0", "after ns/r3", "all 3", "add ns/r4"}; !slices.Equal(calls, want) {
		t.Fatalf("calls %q, want %q", calls, want)
	}
	if want := []string{"ns/r0", "ns/r3", "ns/r1", "ns/r2", "ns/r1", "ns/r4"}; !slices.Equal(reqs, want) {
		t.Fatalf("requests %q, want %q", reqs, want)
	}

	// A run longer than maxBatch: handed over every maxBatch adds.
	q2 := &batchQueue{}
	b2 := batchOver(q2).(*batcher)
	b2.open.Store(true)
	for i := range 2*maxBatch + 1 {
		b2.Add(req(i))
	}
	b2.flush(true)
	calls, reqs = q2.snapshot()
	if want := []string{fmt.Sprint("all ", maxBatch), fmt.Sprint("all ", maxBatch), "all 1"}; !slices.Equal(calls, want) {
		t.Fatalf("calls %q, want %q", calls, want)
	}
	for i, r := range reqs {
		if r != req(i).String() {
			t.Fatalf("request %d is %s", i, r)
		}
	}
}

type nonBatching struct{}

func (nonBatching) Add(reconcile.Request)                     {}
func (nonBatching) AddAfter(reconcile.Request, time.Duration) {}

// Adds from other goroutines — a handler that kept its Enqueuer — while
// the delivering goroutine opens and ends runs, and after its last run, are
// never stranded in the batch: every request reaches the queue once.
func TestBatcherConcurrentAdds(t *testing.T) {
	for range 20 {
		q := &batchQueue{}
		b := batchOver(q).(*batcher)
		const others, each, runs = 4, 1000, 300
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range others {
			wg.Go(func() {
				<-start
				for i := range each {
					b.Add(req(g*each + i))
				}
			})
		}
		wg.Go(func() {
			<-start
			for n := range runs {
				b.open.Store(true)
				b.Add(req(others*each + n))
				b.flush(true)
			}
		})
		close(start)
		wg.Wait()
		_, reqs := q.snapshot()
		if len(reqs) != others*each+runs {
			t.Fatalf("the queue got %d requests, want %d", len(reqs), others*each+runs)
		}
		seen := map[string]bool{}
		for _, r := range reqs {
			if seen[r] {
				t.Fatalf("%s reached the queue twice", r)
			}
			seen[r] = true
		}
	}
}

// The Source's handler routes by event: the initial list and resyncs (the
// very same object as old and new) to low, other changes to the live queue
// — also an update to a copy with the same resourceVersion: not the
// informer's resync. The same for a T held by pointer and for an interface
// T holding pointers (the builder's untyped informers).
func TestSourceHandlerPriorities(t *testing.T) {
	cm := func(name, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	t.Run("pointer", func(t *testing.T) {
		testSourceHandlerPriorities(t, func(o *corev1.ConfigMap) *corev1.ConfigMap { return o }, func(o *corev1.ConfigMap) *corev1.ConfigMap { return o.DeepCopy() }, cm)
	})
	t.Run("interface", func(t *testing.T) {
		testSourceHandlerPriorities(t, func(o *corev1.ConfigMap) handler.Object { return o }, func(o *corev1.ConfigMap) handler.Object { return o.DeepCopy() }, cm)
	})
}

func testSourceHandlerPriorities[T Object](t *testing.T, as func(*corev1.ConfigMap) T, deepCopy func(*corev1.ConfigMap) T, cm func(name, rv string) *corev1.ConfigMap) {
	live, low := &batchQueue{}, &batchQueue{}
	h := &sourceHandler[T]{ctx: context.Background(), h: handler.EnqueueRequestForObject{}, q: live, low: low,
		identity: identityOf[T]()}
	a := cm("a", "1")
	h.OnAdd(as(a), true)
	h.OnAdd(as(cm("b", "2")), false)
	h.OnUpdate(as(a), as(a))            // resync
	h.OnUpdate(as(a), deepCopy(a))      // not the informer's resync
	h.OnUpdate(as(a), as(cm("a", "3"))) // a change
	h.OnDelete(Deleted[T]{Object: as(cm("c", "4")), Key: "ns/c"})
	h.Flush() // plain Enqueuers: nothing to flush
	_, gotLow := low.snapshot()
	_, gotLive := live.snapshot()
	if want := []string{"ns/a", "ns/a"}; !slices.Equal(gotLow, want) {
		t.Fatalf("low got %q, want %q", gotLow, want)
	}
	if want := []string{"ns/b", "ns/a", "ns/a", "ns/c"}; !slices.Equal(gotLive, want) {
		t.Fatalf("live got %q, want %q", gotLive, want)
	}
}

// same is the Source's resync test by identity, as OnUpdate makes it:
// "same" or "different" when the identity tells, "unknown" when a and b
// have none to compare (OnUpdate then applies the resourceVersion rule).
func same[T any](a, b T) string {
	switch s, known := sameObject(identityOf[T](), a, b); {
	case !known:
		return "unknown"
	case s:
		return "same"
	}
	return "different"
}

func TestSame(t *testing.T) {
	a, b := &corev1.ConfigMap{}, &corev1.ConfigMap{}
	m := map[string]int{}
	type namedMap map[string]int
	nm := namedMap{}
	ch := make(chan int)
	f := func() {}
	var nilCM *corev1.ConfigMap
	vo := valueObj{ConfigMap: a, note: "v"}
	boxed := any(vo)
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"same pointer", same(a, a), "same"},
		{"equal objects", same(a, b), "different"},
		{"as interfaces", same[handler.Object](a, a), "same"},
		{"equal objects, as interfaces", same[handler.Object](a, b), "different"},
		{"nil pointers", same(nilCM, nilCM), "same"},
		{"nil and not", same(nilCM, a), "different"},
		{"nil interfaces", same[handler.Object](nil, nil), "same"},
		{"nil interface and not", same[handler.Object](nil, a), "different"},
		{"not and nil interface", same[handler.Object](a, nil), "different"},
		{"typed nil and nil interface", same[handler.Object](nilCM, nil), "different"},
		{"incomparable dynamic type", same[any](m, map[string]int{}), "different"},
		{"the same map", same[any](m, m), "same"},
		{"the same map, as a map", same(nm, nm), "same"},
		{"other maps, as maps", same(nm, namedMap{}), "different"},
		{"the same channel", same(ch, ch), "same"},
		{"other channels, as interfaces", same[any](ch, make(chan int)), "different"},
		{"different dynamic types", same[any](a, m), "different"},
		{"a value and a pointer", same[any](vo, a), "different"},
		{"slices have no identity", same[any]([]int{1}, []int{1}), "unknown"},
		{"one boxed value, as interfaces: no identity", same[any](boxed, boxed), "unknown"},
		{"a struct held by value has no identity", same(vo, vo), "unknown"},
		{"zero-size values have no identity", same(struct{}{}, struct{}{}), "unknown"},
		{"funcs have no identity", same(f, f), "unknown"},
		{"funcs in interfaces have no identity", same[any](f, f), "unknown"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: same = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

// valueObj is an Object held by value: each conversion to an interface
// copies it into a box of its own.
type valueObj struct {
	*corev1.ConfigMap
	note string
}

// A Source of a T held by value, which has no identity to compare: its
// resyncs are known by resourceVersion and go to low, its changes to the
// live queue.
func TestSourceHandlerValueType(t *testing.T) {
	live, low := &batchQueue{}, &batchQueue{}
	h := &sourceHandler[valueObj]{ctx: context.Background(), h: handler.EnqueueRequestForObject{}, q: live, low: low,
		identity: identityOf[valueObj]()}
	vo := func(name, rv string) valueObj {
		return valueObj{ConfigMap: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}, note: rv}
	}
	a := vo("a", "1")
	h.OnUpdate(a, a)            // resync
	h.OnUpdate(a, vo("a", "2")) // a change
	_, gotLow := low.snapshot()
	_, gotLive := live.snapshot()
	if want := []string{"ns/a"}; !slices.Equal(gotLow, want) || !slices.Equal(gotLive, want) {
		t.Fatalf("low got %q, live got %q; want %q each", gotLow, gotLive, want)
	}
}

// An interface T holding values (valueObj), whose boxes have no identity
// to compare: the resourceVersion tells a resync (low) from a change
// (live), as for a T held by value; values held by pointer in the same
// informer keep their identity.
func TestSourceHandlerBoxedValues(t *testing.T) {
	live, low := &batchQueue{}, &batchQueue{}
	h := &sourceHandler[handler.Object]{ctx: context.Background(), h: handler.EnqueueRequestForObject{}, q: live, low: low,
		identity: identityOf[handler.Object]()}
	vo := func(name, rv string) valueObj {
		return valueObj{ConfigMap: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}, note: rv}
	}
	a := handler.Object(vo("a", "1"))
	h.OnUpdate(a, a)            // resync
	h.OnUpdate(a, vo("a", "2")) // a change
	p := vo("p", "1").ConfigMap
	h.OnUpdate(p, p)            // resync
	h.OnUpdate(p, p.DeepCopy()) // not the informer's resync
	h.OnUpdate(a, p)            // another object altogether
	_, gotLow := low.snapshot()
	_, gotLive := live.snapshot()
	if want := []string{"ns/a", "ns/p"}; !slices.Equal(gotLow, want) {
		t.Fatalf("low got %q, want %q", gotLow, want)
	}
	if want := []string{"ns/a", "ns/p", "ns/p"}; !slices.Equal(gotLive, want) {
		t.Fatalf("live got %q, want %q", gotLive, want)
	}
}

// discard is an Enqueuer that drops what it gets.
type discard struct{}

func (discard) Add(reconcile.Request)                     {}
func (discard) AddAfter(reconcile.Request, time.Duration) {}

// BenchmarkSourceHandlerUpdate: one update through a Source's handler to
// an Enqueuer — the predicates (none), the resync test and the
// EventHandler — for a T held by pointer, an interface T holding pointers
// (the builder's untyped informers), and a T held by value; resync is the
// informer's resync (the very same object), change an update to a new
// object.
func BenchmarkSourceHandlerUpdate(b *testing.B) {
	cm := func(rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: rv}}
	}
	old, changed := cm("1"), cm("2")
	b.Run("pointer", func(b *testing.B) {
		h := &sourceHandler[*corev1.ConfigMap]{ctx: context.Background(), h: handler.EnqueueRequestForObject{}, q: discard{}, low: discard{},
			identity: identityOf[*corev1.ConfigMap]()}
		benchUpdates(b, h, old, changed)
	})
	b.Run("interface", func(b *testing.B) {
		h := &sourceHandler[handler.Object]{ctx: context.Background(), h: handler.EnqueueRequestForObject{}, q: discard{}, low: discard{},
			identity: identityOf[handler.Object]()}
		benchUpdates[handler.Object](b, h, old, changed)
	})
	b.Run("value", func(b *testing.B) {
		h := &sourceHandler[valueObj]{ctx: context.Background(), h: handler.EnqueueRequestForObject{}, q: discard{}, low: discard{},
			identity: identityOf[valueObj]()}
		benchUpdates(b, h, valueObj{ConfigMap: old}, valueObj{ConfigMap: changed})
	})
}

func benchUpdates[T Object](b *testing.B, h *sourceHandler[T], old, changed T) {
	for _, c := range []struct {
		name     string
		old, new T
	}{{"resync", old, old}, {"change", old, changed}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				h.OnUpdate(c.old, c.new)
			}
		})
	}
}
