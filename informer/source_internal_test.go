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
// informer's resync.
func TestSourceHandlerPriorities(t *testing.T) {
	live, low := &batchQueue{}, &batchQueue{}
	h := &sourceHandler[*corev1.ConfigMap]{ctx: context.Background(), h: handler.EnqueueRequestForObject{}, q: live, low: low,
		identity: identified[*corev1.ConfigMap]()}
	cm := func(name, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	a := cm("a", "1")
	h.OnAdd(a, true)
	h.OnAdd(cm("b", "2"), false)
	h.OnUpdate(a, a)            // resync
	h.OnUpdate(a, a.DeepCopy()) // not the informer's resync
	h.OnUpdate(a, cm("a", "3")) // a change
	h.OnDelete(Deleted[*corev1.ConfigMap]{Object: cm("c", "4"), Key: "ns/c"})
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
// sameWords for a T that identified accepts, false otherwise.
func same[T any](a, b T) bool { return identified[T]() && sameWords(a, b) }

func TestSame(t *testing.T) {
	a, b := &corev1.ConfigMap{}, &corev1.ConfigMap{}
	m := map[string]int{}
	var nilCM *corev1.ConfigMap
	vo := valueObj{ConfigMap: a, note: "v"}
	boxed := any(vo)
	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{"same pointer", same(a, a), true},
		{"equal objects", same(a, b), false},
		{"as interfaces", same[handler.Object](a, a), true},
		{"nil pointers", same(nilCM, nilCM), true},
		{"nil and not", same(nilCM, a), false},
		{"incomparable dynamic type", same[any](m, map[string]int{}), false},
		{"the same map", same[any](m, m), true},
		{"slices are never the same", same[any]([]int{1}, []int{1}), false},
		{"one boxed value, as interfaces", same[any](boxed, boxed), true},
		{"a struct held by value has no identity", same(vo, vo), false},
		{"zero-size values have no identity", same(struct{}{}, struct{}{}), false},
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
		identity: identified[valueObj]()}
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
