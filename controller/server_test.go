package controller_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
	"kloop.dev/kloop/workqueue"
)

// The tests of this file run the controller as users do — a manager, the
// builder, the shared informer of ConfigMaps — on every target of
// apiservertest.ForEachTarget: the embedded server and the real
// kube-apiserver. The informer is scoped to the test's namespace, so the
// queue's counters only see the test's keys (the real server is shared by
// every test of the binary). Exact timings are the synctest tests' of
// controller_test.go; these assert what a real watch makes observable:
// reconcile counts and the counters of the queue and the controller.

// informer.Source is a controller.Source. The informer package does not
// import the controller, so the compile-time check is here.
var _ controller.Source = (*informer.Source[informer.Object])(nil)

// calls counts reconciles per name and remembers when each returned.
type calls struct {
	mu       sync.Mutex // guards n, returned
	n        map[string]int
	returned map[string][]time.Time
}

func (c *calls) begin(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n, c.returned = map[string]int{}, map[string][]time.Time{}
	}
	c.n[name]++
	return c.n[name]
}

func (c *calls) end(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.returned[name] = append(c.returned[name], time.Now())
}

func (c *calls) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

func (c *calls) returnedAt(name string, i int) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.returned[name][i]
}

// harness is a started manager with one ConfigMap controller in env's
// namespace.
type harness struct {
	env   *apiservertest.Env
	c     *client.Client
	stats *testutil.Provider[controller.Stats]
	queue *testutil.Provider[workqueue.Stats]
}

// startController builds a controller of ConfigMaps of env's namespace with
// opts and r, and runs its manager until the test ends.
func startController(t *testing.T, env *apiservertest.Env, opts controller.Options, r reconcile.Reconciler) *harness {
	t.Helper()
	mgr, err := manager.New(env.Config(), manager.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{env: env, c: mgr.Client(), stats: &testutil.Provider[controller.Stats]{}, queue: &testutil.Provider[workqueue.Stats]{}}
	opts.Metrics, opts.QueueMetrics = h.stats, h.queue
	// The test's ConfigMaps: not the namespace's kube-root-ca.crt.
	scope := informer.Scope{Namespace: env.Namespace, FieldSelector: "metadata.name!=kube-root-ca.crt"}
	err = builder.ControllerManagedBy(mgr).
		For(&corev1.ConfigMap{}, builder.WithScope(scope)).
		WithOptions(opts).
		Complete(r)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	select {
	case <-mgr.Started():
	case err := <-done:
		t.Fatalf("manager stopped at once: %v", err)
	}
	return h
}

func (h *harness) create(t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: h.env.Namespace, Name: name}, Data: map[string]string{"v": "0"}}
	if err := h.c.Create(context.Background(), cm); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return cm
}

// TestResultRulesOnServer drives each Result rule of the seeds from a real
// watch event, and checks it through the reconcile counts, the queue's
// counters (an add with a delay is a retry) and the controller's.
func TestResultRulesOnServer(t *testing.T) {
	boom := errors.New("boom")
	const requeueAfter = time.Second
	tests := []struct {
		name  string
		first func() (reconcile.Result, error)
		// After the first reconcile was handled:
		wantRetries uint64 // queue adds with a delay: 1 when requeued
		// wantAgainAfter > 0: a second reconcile comes, no sooner than that
		// after the first returned; 0: none comes.
		wantAgainAfter time.Duration
		want           controller.Stats // once settled
	}{
		{
			name:  "Result{}, nil: Forget, the key leaves",
			first: func() (reconcile.Result, error) { return reconcile.Result{}, nil },
			want:  controller.Stats{Success: 1},
		},
		{
			name:           "RequeueAfter, nil: Forget then AddAfter",
			first:          func() (reconcile.Result, error) { return reconcile.Result{RequeueAfter: requeueAfter}, nil },
			wantRetries:    1,
			wantAgainAfter: requeueAfter,
			want:           controller.Stats{RequeueAfter: 1, Success: 1},
		},
		{
			name:           "err: AddRateLimited",
			first:          func() (reconcile.Result, error) { return reconcile.Result{}, boom },
			wantRetries:    1,
			wantAgainAfter: 5 * time.Millisecond, // the first backoff step
			want:           controller.Stats{Errors: 1, Success: 1},
		},
		{
			name:           "err with RequeueAfter: the Result is ignored",
			first:          func() (reconcile.Result, error) { return reconcile.Result{RequeueAfter: time.Hour}, boom },
			wantRetries:    1,
			wantAgainAfter: 5 * time.Millisecond,
			want:           controller.Stats{Errors: 1, Success: 1},
		},
		{
			name: "Terminal: counted, not requeued",
			first: func() (reconcile.Result, error) {
				return reconcile.Result{}, fmt.Errorf("sync: %w", reconcile.Terminal(boom))
			},
			want: controller.Stats{Errors: 1, TerminalErrors: 1},
		},
		{
			name:           "panic: recovered into an error, requeued with backoff",
			first:          func() (reconcile.Result, error) { panic("nil map") },
			wantRetries:    1,
			wantAgainAfter: 5 * time.Millisecond,
			want:           controller.Stats{Errors: 1, Panics: 1, Success: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
				var n calls
				r := reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
					call := n.begin(req.Name)
					defer n.end(req.Name)
					if call == 1 {
						return tt.first()
					}
					return reconcile.Result{}, nil
				})
				h := startController(t, env, controller.Options{}, r)
				h.create(t, "a")
				// The controller's counters are atomics, updated one by one
				// after Reconcile returned: wait for all of them.
				want := tt.want
				want.MaxConcurrentReconciles = 1
				for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
					got := h.stats.Only()
					got.ReconcileTime = controller.Histogram{}
					if got == want {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("stats\n got %+v\nwant %+v", got, want)
					}
				}
				if tt.wantAgainAfter > 0 {
					if n.count("a") != 2 {
						t.Fatalf("reconciles = %d, want 2", n.count("a"))
					}
					if gap := n.returnedAt("a", 1).Sub(n.returnedAt("a", 0)); gap < tt.wantAgainAfter {
						t.Errorf("the second reconcile came %v after the first, want at least %v", gap, tt.wantAgainAfter)
					}
				} else if n.count("a") != 1 {
					t.Fatalf("reconciles = %d, want 1", n.count("a"))
				}
				q := h.queue.Only()
				// The create event is the only add without a delay; a
				// requeue is an add with one.
				if q.Adds != 1+tt.wantRetries || q.Retries != tt.wantRetries {
					t.Errorf("queue adds %d, retries %d; want %d, %d", q.Adds, q.Retries, 1+tt.wantRetries, tt.wantRetries)
				}
				// Settled: an edit is reconciled once more, and nothing else
				// is in the queue.
				cm := &corev1.ConfigMap{}
				if err := h.c.Uncached().Get(context.Background(), client.ObjectKey{Namespace: env.Namespace, Name: "a"}, cm); err != nil {
					t.Fatal(err)
				}
				again := n.count("a") + 1
				cm.Data = map[string]string{"v": "1"}
				if err := h.c.Update(context.Background(), cm); err != nil {
					t.Fatal(err)
				}
				testutil.Eventually(t, "the reconcile of the edit", func() bool { return n.count("a") == again })
				if q := h.queue.Only(); q.Retries != tt.wantRetries {
					t.Errorf("queue retries after the edit %d, want %d", q.Retries, tt.wantRetries)
				}
			})
		})
	}
}

// TestReconcileTimeoutOnServer: a reconcile that outlives ReconcileTimeout
// sees its context cancelled with ErrReconcileTimeout; it is counted.
func TestReconcileTimeoutOnServer(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		causes := make(chan error, 2)
		r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			if req.Name == "fast" {
				return reconcile.Result{}, nil
			}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return reconcile.Result{}, reconcile.Terminal(ctx.Err())
		})
		h := startController(t, env, controller.Options{ReconcileTimeout: 300 * time.Millisecond}, r)
		h.create(t, "slow")
		h.create(t, "fast")
		select {
		case cause := <-causes:
			if !errors.Is(cause, controller.ErrReconcileTimeout) {
				t.Fatalf("cause %v, want ErrReconcileTimeout", cause)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the slow reconcile was not cut")
		}
		// One success, one timeout counted as a (terminal) error.
		testutil.Eventually(t, "both reconciles counted", func() bool {
			s := h.stats.Only()
			return s.Success == 1 && s.TerminalErrors == 1 && s.Errors == 1 && s.Timeouts == 1
		})
		if q := h.queue.Only(); q.Retries != 0 {
			t.Fatalf("queue retries %d: the timed-out reconcile returned a terminal error", q.Retries)
		}
	})
}

// TestConcurrencyOnServer: with two workers, two keys are reconciled in
// parallel; a key edited while its reconcile runs is never handed to the
// second worker: it is reconciled again after, once.
func TestConcurrencyOnServer(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		var mu sync.Mutex // guards the counts below
		inFlight := map[string]int{}
		maxPerKey, total, maxTotal := 0, 0, 0
		var n calls
		bothIn := make(chan struct{})
		var bothInOnce sync.Once
		release := make(chan struct{})
		r := reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
			call := n.begin(req.Name)
			defer n.end(req.Name)
			mu.Lock()
			inFlight[req.Name]++
			total++
			maxPerKey = max(maxPerKey, inFlight[req.Name])
			maxTotal = max(maxTotal, total)
			if total == 2 {
				bothInOnce.Do(func() { close(bothIn) })
			}
			mu.Unlock()
			if call == 1 {
				<-release // the first reconciles of a and b hold their workers
			}
			mu.Lock()
			inFlight[req.Name]--
			total--
			mu.Unlock()
			return reconcile.Result{}, nil
		})
		h := startController(t, env, controller.Options{MaxConcurrentReconciles: 2}, r)
		a := h.create(t, "a")
		h.create(t, "b")
		select {
		case <-bothIn:
		case <-time.After(30 * time.Second):
			t.Fatalf("a and b were not reconciled in parallel (reconciles: a %d, b %d)", n.count("a"), n.count("b"))
		}
		if s := h.stats.Only(); s.ActiveWorkers != 2 || s.MaxConcurrentReconciles != 2 {
			t.Fatalf("stats while both run %+v", s)
		}
		// Edits of a while it is held: the key waits for its worker.
		for i := range 5 {
			a.Data["v"] = fmt.Sprint(i + 1)
			if err := h.c.Update(context.Background(), a); err != nil {
				t.Fatal(err)
			}
		}
		// A third key, created after the edits, is reconciled only after
		// the edits were enqueued (the informer delivers in order) — and it
		// has no free worker until the first two return.
		h.create(t, "sentinel")
		testutil.Eventually(t, "the edits and the sentinel in the queue", func() bool { return h.queue.Only().Adds == 4 })
		if n.count("a") != 1 {
			t.Fatalf("a was handed out again while held: %d reconciles", n.count("a"))
		}
		close(release)
		testutil.Eventually(t, "a reconciled again and the sentinel", func() bool { return n.count("a") == 2 && n.count("sentinel") == 1 })
		testutil.Eventually(t, "the workers idle", func() bool { return h.stats.Only().ActiveWorkers == 0 })
		mu.Lock()
		defer mu.Unlock()
		if maxPerKey != 1 || maxTotal != 2 {
			t.Fatalf("max reconciles at once: per key %d, in total %d; want 1, 2", maxPerKey, maxTotal)
		}
		if got := n.count("a"); got != 2 {
			t.Fatalf("a reconciled %d times for its create and five edits held back, want 2", got)
		}
	})
}

// TestNoReconcileBeforeSyncOnServer: objects that exist before the manager
// starts come in the informer's initial list; the first reconcile already
// finds all of them in the cache it shares with the controller (what a
// reconcile that lists its siblings relies on), and each is reconciled once
// (the exact sync rules are controller_test.go's, with fake sources).
func TestNoReconcileBeforeSyncOnServer(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		const objects = 30
		cfg := env.Config()
		mgr, err := manager.New(cfg, manager.Options{})
		if err != nil {
			t.Fatal(err)
		}
		// The test's ConfigMaps: not the namespace's kube-root-ca.crt.
		scope := informer.Scope{Namespace: env.Namespace, FieldSelector: "metadata.name!=kube-root-ca.crt"}
		// The informer the controller's For shares (one per kind and scope).
		inf, err := informer.InformerFor[*corev1.ConfigMap](mgr.Factory(), scope)
		if err != nil {
			t.Fatal(err)
		}
		for i := range objects {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: fmt.Sprintf("cm-%02d", i)}}
			if err := mgr.Client().Create(context.Background(), cm); err != nil {
				t.Fatal(err)
			}
		}
		var n calls
		var mu sync.Mutex // guards cachedAtFirst
		cachedAtFirst := -1
		r := reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
			n.begin(req.Name)
			mu.Lock()
			if cachedAtFirst < 0 {
				cachedAtFirst = len(inf.ListNamespace(env.Namespace))
			}
			mu.Unlock()
			return reconcile.Result{}, nil
		})
		queue := &testutil.Provider[workqueue.Stats]{}
		err = builder.ControllerManagedBy(mgr).For(&corev1.ConfigMap{}, builder.WithScope(scope)).
			WithOptions(controller.Options{QueueMetrics: queue, MaxConcurrentReconciles: 4}).Complete(r)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		}()
		testutil.Eventually(t, "every object reconciled", func() bool {
			for i := range objects {
				if n.count(fmt.Sprintf("cm-%02d", i)) != 1 {
					return false
				}
			}
			return true
		})
		mu.Lock()
		defer mu.Unlock()
		if cachedAtFirst != objects {
			t.Fatalf("the first reconcile saw %d objects in the cache, want all %d (reconciles must wait for the sync)", cachedAtFirst, objects)
		}
		if q := queue.Only(); q.Adds != objects || q.Retries != 0 {
			t.Fatalf("queue adds %d, retries %d; want %d, 0", q.Adds, q.Retries, objects)
		}
	})
}
