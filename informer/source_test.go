package informer_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/handler/predicate"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/reconcile"
)

// recordingEnqueuer records the requests added to it.
type recordingEnqueuer struct {
	mu   sync.Mutex // guards reqs
	reqs []string
}

func (e *recordingEnqueuer) Add(req reconcile.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reqs = append(e.reqs, req.Name)
}

func (e *recordingEnqueuer) AddAfter(req reconcile.Request, _ time.Duration) { e.Add(req) }

func (e *recordingEnqueuer) got() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.reqs, ",")
}

// batchingEnqueuer is a recordingEnqueuer that takes batches too, as the
// controller's enqueuers do; batches counts its AddAll calls.
type batchingEnqueuer struct {
	recordingEnqueuer
	batches atomic.Int32
}

func (e *batchingEnqueuer) AddAll(reqs []reconcile.Request) {
	e.batches.Add(1)
	for _, r := range reqs {
		e.Add(r)
	}
}

// A Source is usable on its own: a handler on the shared informer, events
// filtered by the predicates, the initial list at low priority, synced after
// it, the handler removed at cancel.
// The same with the handler inline (informer.SourceOptions.Inline), and with enqueuers
// that take batches: the requests of a run wait for its end, and the
// initial list's are with the enqueuer by the time the source is synced.
func TestIntegrationSource(t *testing.T) {
	for _, inline := range []bool{false, true} {
		for _, batching := range []bool{false, true} {
			t.Run(fmt.Sprintf("inline=%t/batching=%t", inline, batching), func(t *testing.T) {
				apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
					testSource(t, ae, inline, batching)
				})
			})
		}
	}
}

func testSource(t *testing.T, ae *apiservertest.Env, inline, batching bool) {
	ctx := informer.Timeout(t)
	env := newEnv(t, ae)
	ns := env.Namespace
	cms := map[string]*corev1.ConfigMap{}
	for _, n := range []string{"a", "b"} {
		cm, err := env.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cms[n] = cm
	}
	f := env.factory(t, informer.FactoryOptions{})
	inf, err := informer.InformerFor[*corev1.ConfigMap](f, informer.Scope{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := informer.NewSource[*corev1.ConfigMap](nil, handler.EnqueueRequestForObject{}, informer.SourceOptions{}); err == nil {
		t.Fatal("informer.NewSource without an informer succeeded")
	}
	if _, err := informer.NewSource(inf, nil, informer.SourceOptions{}); err == nil {
		t.Fatal("informer.NewSource without a handler succeeded")
	}
	// (The namespace's kube-root-ca.crt is left out as well.)
	notB := predicate.NewFuncs(func(o handler.Object) bool { return o.GetName() != "b" && o.GetName() != "kube-root-ca.crt" })
	src, err := informer.NewSource(inf, handler.EnqueueRequestForObject{}, informer.SourceOptions{Predicates: []predicate.Predicate{notB}, Inline: inline})
	if err != nil {
		t.Fatal(err)
	}
	if src.HasSynced() || src.Started() {
		t.Fatal("synced or started before Start")
	}
	startFactory(t, f)
	var live, low interface {
		handler.Enqueuer
		got() string
	}
	live, low = &recordingEnqueuer{}, &recordingEnqueuer{}
	if batching {
		live, low = &batchingEnqueuer{}, &batchingEnqueuer{}
	}
	sctx, stop := context.WithCancel(context.Background())
	defer stop()
	srcDone := make(chan error, 1)
	go func() { srcDone <- src.Start(sctx, live, low) }()
	informer.WaitUntil(t, ctx, "the source to sync", src.HasSynced)
	if got := low.got(); got != "a" {
		t.Fatalf("low priority got %q, want the initial list without b: a", got)
	}
	if got := live.got(); got != "" {
		t.Fatalf("live got %q before any change", got)
	}
	for _, n := range []string{"b", "a"} {
		cms[n].Data = map[string]string{"k": "v"}
		if _, err := env.cs.CoreV1().ConfigMaps(ns).Update(ctx, cms[n], metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	informer.WaitUntil(t, ctx, "the live update", func() bool { return live.got() == "a" })
	if batching {
		for name, e := range map[string]any{"live": live, "low": low} {
			if n := e.(*batchingEnqueuer).batches.Load(); n == 0 {
				t.Errorf("the %s enqueuer got no batch", name)
			}
		}
	}
	if err := src.Start(sctx, live, low); err == nil {
		t.Fatal("a second Start succeeded")
	}
	stop()
	if err := <-srcDone; err != nil {
		t.Fatalf("Source.Start: %v", err)
	}
}
