package informer

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/reconcile"
	"kloop.dev/kloop/reconcile/trigger"
	"kloop.dev/kloop/reflector"
	"kloop.dev/kloop/workqueue"
)

// triggerQueue is a controller's enqueuer in miniature: a work queue of
// requests that keeps trigger records.
type triggerQueue struct {
	q *workqueue.Queue[reconcile.Request]
}

var _ handler.TriggerEnqueuer = triggerQueue{}

func (t triggerQueue) Add(r reconcile.Request) { t.q.Add(r) }
func (t triggerQueue) AddAfter(r reconcile.Request, d time.Duration) {
	t.q.AddAfter(r, d)
}
func (t triggerQueue) AddAll(rs []reconcile.Request) { t.q.AddAll(rs, workqueue.AddOptions{}) }
func (t triggerQueue) AddTriggered(r reconcile.Request, tr trigger.Cause) {
	t.q.AddTriggered(r, workqueue.AddOptions{}, tr)
}
func (t triggerQueue) AddAllTriggered(rs []reconcile.Request, ts []trigger.Cause) {
	t.q.AddAllTriggered(rs, ts, workqueue.AddOptions{})
}

// TestSourceTriggers: each request a Source adds carries its event — type,
// the source's kind, the object (its namespace, name and resourceVersion),
// the handler — into the queue's record of the key, inline or buffered.
func TestSourceTriggers(t *testing.T) {
	for _, inline := range []bool{true, false} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			srv := newFakeServer(pod("a"))
			inf, err := New[*corev1.Pod](srv, Options[*corev1.Pod]{Logger: slog.New(slog.DiscardHandler),
				Reflector: reflector.Options{DisableWatchList: true}})
			if err != nil {
				t.Fatal(err)
			}
			wq, err := workqueue.New(workqueue.Options[reconcile.Request]{Triggers: true})
			if err != nil {
				t.Fatal(err)
			}
			defer wq.ShutDown()
			src, err := NewSource(inf, handler.EnqueueRequestForObject{}, SourceOptions{Kind: "Pod", Inline: inline})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = inf.Run(ctx) }()
			srcDone := make(chan struct{})
			go func() { defer close(srcDone); _ = src.Start(ctx, triggerQueue{wq}, triggerQueue{wq}) }()
			defer func() { cancel(); <-srcDone; <-done }()

			// take hands out the next key and renders its record's triggers.
			var r trigger.Record
			take := func() (key string, total int, triggers []string) {
				k, _, _ := wq.GetWithTriggers(&r)
				defer wq.Done(k)
				for i := range r.Len() {
					tr := r.At(i)
					triggers = append(triggers, fmt.Sprintf("%s %s %s %s/%s@%s", tr.Type, tr.Source, tr.Handler,
						tr.Object.GetNamespace(), tr.Object.GetName(), tr.Object.GetResourceVersion()))
				}
				return k.String(), r.Total(), triggers
			}
			k, total, got := take()
			if want := []string{"InitialList Pod EnqueueRequestForObject default/a@1"}; k != "default/a" || total != 1 || !slices.Equal(got, want) {
				t.Fatalf("initial list: %s total %d %q; want default/a total 1 %q", k, total, got, want)
			}
			<-srv.watchOpened // changes before the watch would be silent
			srv.update(pod("a", "x", "1"))
			srv.create(pod("b"))
			srv.remove(pod("b"))
			// b's two events merge into one record unless a worker takes
			// the key between them: gather each key's triggers until all
			// three events are in.
			byKey := map[string][]string{}
			for n := 0; n < 3; {
				k, total, got := take()
				byKey[k] = append(byKey[k], got...)
				n += total
			}
			want := map[string][]string{
				"default/a": {"Update Pod EnqueueRequestForObject default/a@2"},
				"default/b": {"Create Pod EnqueueRequestForObject default/b@3", "Delete Pod EnqueueRequestForObject default/b@4"},
			}
			if !maps.EqualFunc(byKey, want, slices.Equal) {
				t.Fatalf("triggers by key:\n%q\nwant\n%q", byKey, want)
			}
		})
	}
}

// BenchmarkSourceTriggers: update events of 10,000 cached Pods through the
// informer and a Source (inline, as the builder makes them) into a work
// queue drained by one worker, with the queue's trigger records on (the
// worker takes each key with its record, as the controller's do, and nobody
// reads it) and off. Each op is one event; allocs/op is per event.
func BenchmarkSourceTriggers(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("triggers=%v", on), func(b *testing.B) { benchSourceTriggers(b, on) })
	}
}

func benchSourceTriggers(b *testing.B, triggers bool) {
	const n = 10_000
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = realisticPod(i)
		pods[i].ManagedFields = nil
	}
	inf, err := New[*corev1.Pod](newFakeServer(), Options[*corev1.Pod]{KeepManagedFields: true, DisableInterning: true,
		Reflector: reflector.Options{DisableWatchList: true}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	wq, err := workqueue.New(workqueue.Options[reconcile.Request]{Triggers: triggers})
	if err != nil {
		b.Fatal(err)
	}
	var handled atomic.Int64
	src, err := NewSource(inf, handler.Funcs{
		CreateFunc: func(ctx context.Context, e handler.CreateEvent, q handler.Enqueuer) {
			handler.EnqueueRequestForObject{}.Create(ctx, e, q)
			handled.Add(1)
		},
		UpdateFunc: func(ctx context.Context, e handler.UpdateEvent, q handler.Enqueuer) {
			handler.EnqueueRequestForObject{}.Update(ctx, e, q)
			handled.Add(1)
		},
	}, SourceOptions{Kind: "Pod", Inline: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { _ = inf.Run(ctx); done <- struct{}{} }()
	go func() { _ = src.Start(ctx, triggerQueue{wq}, triggerQueue{wq}); done <- struct{}{} }()
	worker := make(chan struct{})
	go func() {
		defer close(worker)
		var r trigger.Record
		k, _, shutdown := wq.GetWithTriggers(&r)
		for !shutdown {
			k, _, shutdown = wq.NextWithTriggers(k, &r)
		}
	}()
	if err := inf.WaitForCacheSync(ctx); err != nil {
		b.Fatal(err)
	}
	// settle waits until total events reached the handler and the queue
	// has no key ready.
	settle := func(total int64) {
		for handled.Load() < total || wq.Len() > 0 {
			runtime.Gosched()
		}
	}
	for _, p := range pods {
		if err := inf.s.fifo.Add(p); err != nil {
			b.Fatal(err)
		}
	}
	settle(n)
	handled.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := inf.s.fifo.Update(pods[i%n]); err != nil {
			b.Fatal(err)
		}
	}
	settle(int64(b.N))
	b.StopTimer()
	cancel()
	wq.ShutDown()
	<-worker
	<-done
	<-done
}
