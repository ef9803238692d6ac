package controller

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/reconcile"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeSource is a Source whose start function and sync state the test sets.
type fakeSource struct {
	start  func(ctx context.Context, q, low handler.Enqueuer) error
	synced atomic.Bool
}

func (s *fakeSource) Start(ctx context.Context, q, low handler.Enqueuer) error {
	if s.start != nil {
		if err := s.start(ctx, q, low); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}

func (s *fakeSource) HasSynced() bool { return s.synced.Load() }

// recorder is a Reconciler that records its calls in order and answers with
// do (Result{}, nil when nil).
type recorder struct {
	mu    sync.Mutex // guards calls, n
	calls []string
	n     map[string]int
	do    func(ctx context.Context, req reconcile.Request, call int) (reconcile.Result, error)
}

func (r *recorder) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.mu.Lock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.calls = append(r.calls, req.String())
	r.n[req.String()]++
	call := r.n[req.String()]
	r.mu.Unlock()
	if r.do == nil {
		return reconcile.Result{}, nil
	}
	return r.do(ctx, req, call)
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func req(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
}

func obj(name string) handler.Object {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: "1"}}
}

// run starts c in a goroutine; cancel stops it and errc receives Start's
// error.
func run(c *Controller) (cancel context.CancelFunc, errc <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() { ch <- c.Start(ctx) }()
	return cancel, ch
}
