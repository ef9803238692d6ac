package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/handler/predicate"
	"kloop.dev/kloop/internal/rctx"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/reconcile"
	"kloop.dev/kloop/workqueue"
)

// newTest builds a controller fed by one channel source, with recording
// metrics, and a logger writing to the returned buffer.
type testController struct {
	c      *Controller
	r      *recorder
	events chan handler.Event
	m      *testutil.Provider[Stats]
	qm     *testutil.Provider[workqueue.Stats]
	logs   *testutil.SyncBuffer
}

func newTest(t *testing.T, r *recorder, opts Options) *testController {
	t.Helper()
	tc := &testController{r: r, events: make(chan handler.Event, 100), m: &testutil.Provider[Stats]{}, qm: &testutil.Provider[workqueue.Stats]{}, logs: &testutil.SyncBuffer{}}
	opts.Metrics, opts.QueueMetrics = tc.m, tc.qm
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(tc.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	c, err := New("widget", r, opts)
	if err != nil {
		t.Fatal(err)
	}
	src, err := NewChannelSource(tc.events, handler.EnqueueRequestForObject{}, ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Watch(src); err != nil {
		t.Fatal(err)
	}
	tc.c = c
	return tc
}

func (tc *testController) send(names ...string) {
	for _, n := range names {
		tc.events <- handler.GenericEvent{Object: obj(n)}
	}
}

// TestResultRules drives each Result rule of the seeds through a real queue
// and checks it through the queue's statistics, the rate limiter's history and
// the reconcile counts.
func TestResultRules(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name string
		// first is the answer to the first reconcile; later ones succeed.
		first func(ctx context.Context) (reconcile.Result, error)
		// After the first reconcile:
		wantRequeues int           // NumRequeues of the key (backoff history)
		wantRetries  uint64        // queue adds with a delay
		wantWaiting  bool          // the key waits in the queue
		again        time.Duration // when the second reconcile happens; 0: never
		want         Stats         // statistics once everything settled
		wantLog      string
	}{
		{
			name:  "Result{}, nil: Forget, the key leaves",
			first: func(context.Context) (reconcile.Result, error) { return reconcile.Result{}, nil },
			want:  Stats{Success: 1},
		},
		{
			name: "RequeueAfter, nil: Forget then AddAfter",
			first: func(context.Context) (reconcile.Result, error) {
				return reconcile.Result{RequeueAfter: 5 * time.Second}, nil
			},
			wantRetries:  1,
			wantWaiting:  true,
			again:        5 * time.Second,
			want:         Stats{RequeueAfter: 1, Success: 1},
			wantRequeues: 0,
		},
		{
			name:         "err: AddRateLimited",
			first:        func(context.Context) (reconcile.Result, error) { return reconcile.Result{}, boom },
			wantRequeues: 1,
			wantRetries:  1,
			wantWaiting:  true,
			again:        5 * time.Millisecond, // the first backoff step
			want:         Stats{Errors: 1, Success: 1},
			wantLog:      "reconcile failed, requeued with backoff",
		},
		{
			name: "err with RequeueAfter: Result ignored, warning",
			first: func(context.Context) (reconcile.Result, error) {
				return reconcile.Result{RequeueAfter: time.Hour}, boom
			},
			wantRequeues: 1,
			wantRetries:  1,
			wantWaiting:  true,
			again:        5 * time.Millisecond,
			want:         Stats{Errors: 1, Success: 1},
			wantLog:      "the Result is ignored when the error is non-nil",
		},
		{
			name:    "Terminal: logged, counted, Forget, not requeued",
			first:   func(context.Context) (reconcile.Result, error) { return reconcile.Result{}, reconcile.Terminal(boom) },
			want:    Stats{Errors: 1, TerminalErrors: 1},
			wantLog: "terminal error: boom",
		},
		{
			name: "wrapped Terminal",
			first: func(context.Context) (reconcile.Result, error) {
				return reconcile.Result{}, fmt.Errorf("sync: %w", reconcile.Terminal(boom))
			},
			want:    Stats{Errors: 1, TerminalErrors: 1},
			wantLog: "not requeued",
		},
		{
			name:         "panic: recovered into an error, counted, requeued with backoff",
			first:        func(context.Context) (reconcile.Result, error) { panic("nil map") },
			wantRequeues: 1,
			wantRetries:  1,
			wantWaiting:  true,
			again:        5 * time.Millisecond,
			want:         Stats{Errors: 1, Panics: 1, Success: 1},
			wantLog:      "reconcile panicked: nil map",
		},
		{
			name: "negative RequeueAfter is success",
			first: func(context.Context) (reconcile.Result, error) {
				return reconcile.Result{RequeueAfter: -time.Second}, nil
			},
			want:         Stats{Success: 1},
			wantRequeues: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := &recorder{do: func(ctx context.Context, _ reconcile.Request, call int) (reconcile.Result, error) {
					if call == 1 {
						return tt.first(ctx)
					}
					return reconcile.Result{}, nil
				}}
				tc := newTest(t, r, Options{})
				cancel, errc := run(tc.c)
				tc.send("a")
				synctest.Wait()

				if n := r.count(); n != 1 {
					t.Fatalf("reconciles after the event = %d, want 1", n)
				}
				q := tc.qm.Only()
				if got := tc.c.queue.NumRequeues(req("a")); got != tt.wantRequeues {
					t.Errorf("NumRequeues = %d, want %d", got, tt.wantRequeues)
				}
				if q.Retries != tt.wantRetries {
					t.Errorf("queue retries = %d, want %d", q.Retries, tt.wantRetries)
				}
				if q.Adds != 1 {
					t.Errorf("queue adds = %d, want 1", q.Adds)
				}
				if tc.c.queue.Len() != 0 {
					t.Errorf("ready keys = %d, want 0", tc.c.queue.Len())
				}
				if tt.again > 0 {
					time.Sleep(tt.again - time.Nanosecond)
					synctest.Wait()
					if n := r.count(); n != 1 {
						t.Fatalf("reconciled again before %s", tt.again)
					}
					time.Sleep(time.Nanosecond)
					synctest.Wait()
					if n := r.count(); n != 2 {
						t.Fatalf("reconciles after %s = %d, want 2", tt.again, n)
					}
					if got := tc.c.queue.NumRequeues(req("a")); got != 0 {
						t.Errorf("NumRequeues after the success = %d, want 0 (Forget)", got)
					}
				}
				time.Sleep(time.Hour) // nothing else ever happens
				synctest.Wait()
				if n, want := r.count(), 1+min(int(tt.again), 1); n != want {
					t.Fatalf("reconciles after an hour = %d, want %d", n, want)
				}
				if got := tc.c.queue.NumRequeues(req("a")); got != 0 {
					t.Errorf("final NumRequeues = %d, want 0", got)
				}
				cancel()
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
				got := tc.m.Only()
				tt.want.MaxConcurrentReconciles = 1
				tt.want.ReconcileTime = got.ReconcileTime
				if got != tt.want {
					t.Errorf("stats\n got %+v\nwant %+v", got, tt.want)
				}
				if total := got.Success + got.RequeueAfter + got.Errors; got.ReconcileTime.Count != total {
					t.Errorf("reconcile time count %d, reconciles %d", got.ReconcileTime.Count, total)
				}
				if names := tc.m.Names(); len(names) != 1 || names[0] != "widget" {
					t.Errorf("metrics registered as %q", names)
				}
				if !strings.Contains(tc.logs.String(), tt.wantLog) {
					t.Errorf("log lacks %q:\n%s", tt.wantLog, tc.logs.String())
				}
			})
		})
	}
}

func TestReconcileTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var causes []error
		r := &recorder{do: func(ctx context.Context, req reconcile.Request, _ int) (reconcile.Result, error) {
			if req.Name == "fast" {
				time.Sleep(time.Second)
				return reconcile.Result{}, nil
			}
			<-ctx.Done()
			mu.Lock()
			causes = append(causes, context.Cause(ctx))
			mu.Unlock()
			return reconcile.Result{}, reconcile.Terminal(ctx.Err())
		}}
		tc := newTest(t, r, Options{ReconcileTimeout: 3 * time.Second})
		cancel, errc := run(tc.c)
		tc.send("slow")
		time.Sleep(3*time.Second - time.Nanosecond)
		synctest.Wait()
		mu.Lock()
		if len(causes) != 0 {
			t.Errorf("reconcile cut before 3s")
		}
		mu.Unlock()
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		tc.send("fast")
		synctest.Wait()
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if len(causes) != 1 || !errors.Is(causes[0], ErrReconcileTimeout) || !strings.Contains(causes[0].Error(), `controller "widget"`) {
			t.Fatalf("causes = %v", causes)
		}
		s := tc.m.Only()
		if s.Timeouts != 1 || s.TerminalErrors != 1 || s.Success != 1 {
			t.Fatalf("stats %+v", s)
		}
	})
}

func TestTenQuickAddsOneReconcile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		r := &recorder{do: func(_ context.Context, _ reconcile.Request, call int) (reconcile.Result, error) {
			if call == 1 {
				<-release
			}
			return reconcile.Result{}, nil
		}}
		tc := newTest(t, r, Options{MaxConcurrentReconciles: 4})
		src := &fakeSource{start: func(_ context.Context, q, _ handler.Enqueuer) error {
			for range 10 { // ten edits before the controller runs
				q.Add(req("a"))
			}
			return nil
		}}
		if err := tc.c.Watch(src); err != nil {
			t.Fatal(err)
		}
		cancel, errc := run(tc.c)
		synctest.Wait()
		if n := r.count(); n != 0 {
			t.Fatalf("reconciled %d times before the source synced", n)
		}
		src.synced.Store(true)
		time.Sleep(100 * time.Millisecond) // the sync poll
		synctest.Wait()
		if n := r.count(); n != 1 {
			t.Fatalf("reconciles = %d, want 1", n)
		}
		// Ten more edits while it is reconciled: one more reconcile, after.
		tc.send("a", "a", "a", "a", "a", "a", "a", "a", "a", "a")
		synctest.Wait()
		if n := r.count(); n != 1 {
			t.Fatalf("the key was handed out while held: reconciles = %d", n)
		}
		close(release)
		synctest.Wait()
		if n := r.count(); n != 2 {
			t.Fatalf("reconciles = %d, want 2", n)
		}
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if q := tc.qm.Only(); q.Adds != 2 {
			t.Fatalf("queue adds = %d, want 2", q.Adds)
		}
	})
}

func TestConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		inFlight := map[string]int{}
		maxPerKey, maxTotal, total := 0, 0, 0
		r := &recorder{do: func(_ context.Context, req reconcile.Request, _ int) (reconcile.Result, error) {
			mu.Lock()
			inFlight[req.Name]++
			total++
			maxPerKey = max(maxPerKey, inFlight[req.Name])
			maxTotal = max(maxTotal, total)
			mu.Unlock()
			time.Sleep(10 * time.Millisecond)
			mu.Lock()
			inFlight[req.Name]--
			total--
			mu.Unlock()
			return reconcile.Result{}, nil
		}}
		tc := newTest(t, r, Options{MaxConcurrentReconciles: 2})
		cancel, errc := run(tc.c)
		// Keys a and b in parallel; a is hammered while it is being reconciled.
		tc.send("a", "b")
		for range 20 {
			time.Sleep(3 * time.Millisecond)
			tc.send("a")
		}
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if maxPerKey != 1 {
			t.Fatalf("one key reconciled %d times at once", maxPerKey)
		}
		if maxTotal != 2 {
			t.Fatalf("max parallel reconciles = %d, want 2", maxTotal)
		}
		calls := r.got()
		if calls[0] == calls[1] || !slices.Contains(calls[:2], "ns/b") {
			t.Fatalf("a and b did not start together: %q", calls)
		}
		// 60 ms of edits to a, 10 ms per reconcile: a is reconciled about
		// once per 10 ms, never per edit.
		if n := len(calls); n < 5 || n > 12 {
			t.Fatalf("reconciles = %d (%q)", n, calls)
		}
		if s := tc.m.Only(); s.MaxConcurrentReconciles != 2 || s.ActiveWorkers != 0 {
			t.Fatalf("stats %+v", s)
		}
	})
}

func TestActiveWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		r := &recorder{do: func(context.Context, reconcile.Request, int) (reconcile.Result, error) {
			<-release
			return reconcile.Result{}, nil
		}}
		tc := newTest(t, r, Options{MaxConcurrentReconciles: 3})
		cancel, errc := run(tc.c)
		tc.send("a", "b")
		synctest.Wait()
		if s := tc.m.Only(); s.ActiveWorkers != 2 || s.MaxConcurrentReconciles != 3 {
			t.Fatalf("stats %+v", s)
		}
		close(release)
		synctest.Wait()
		if s := tc.m.Only(); s.ActiveWorkers != 0 || s.Success != 2 {
			t.Fatalf("stats %+v", s)
		}
		cancel()
		<-errc
	})
}

func TestInitialListLowPriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{}
		tc := newTest(t, r, Options{})
		src := &fakeSource{}
		src.start = func(ctx context.Context, q, low handler.Enqueuer) error {
			// The initial list, then a live change and a resync, as an informer delivers them.
			for _, n := range []string{"l1", "l2", "l3"} {
				handler.Dispatch(ctx, handler.EnqueueRequestForObject{}, handler.CreateEvent{Object: obj(n), IsInInitialList: true}, q, low)
			}
			handler.Dispatch(ctx, handler.EnqueueRequestForObject{}, handler.CreateEvent{Object: obj("live")}, q, low)
			handler.Dispatch(ctx, handler.EnqueueRequestForObject{}, handler.UpdateEvent{ObjectOld: obj("resync"), ObjectNew: obj("resync")}, q, low)
			upd := obj("changed")
			upd.SetResourceVersion("2")
			handler.Dispatch(ctx, handler.EnqueueRequestForObject{}, handler.UpdateEvent{ObjectOld: obj("changed"), ObjectNew: upd}, q, low)
			src.synced.Store(true)
			return nil
		}
		if err := tc.c.Watch(src); err != nil {
			t.Fatal(err)
		}
		cancel, errc := run(tc.c)
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		want := []string{"ns/live", "ns/changed", "ns/l1", "ns/l2", "ns/l3", "ns/resync"}
		if got := r.got(); !slices.Equal(got, want) {
			t.Fatalf("order %q, want %q", got, want)
		}
	})
}

func TestCacheSync(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := &recorder{}
			tc := newTest(t, r, Options{CacheSyncTimeout: 10 * time.Second})
			src := &fakeSource{start: func(_ context.Context, q, _ handler.Enqueuer) error {
				q.Add(req("a"))
				return nil
			}}
			if err := tc.c.Watch(src); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err := tc.c.Start(context.Background())
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "CacheSyncTimeout 10s") {
				t.Fatalf("Start = %v", err)
			}
			if d := time.Since(start); d != 10*time.Second {
				t.Fatalf("Start returned after %s", d)
			}
			if r.count() != 0 {
				t.Fatal("reconciled before sync")
			}
			if err := tc.c.Start(context.Background()); err == nil {
				t.Fatal("second Start accepted")
			}
		})
	})
	t.Run("default 2 minutes", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tc := newTest(t, &recorder{}, Options{})
			if err := tc.c.Watch(&fakeSource{}); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if err := tc.c.Start(context.Background()); err == nil || time.Since(start) != 2*time.Minute {
				t.Fatalf("Start = %v after %s", err, time.Since(start))
			}
		})
	})
	t.Run("cancelled while waiting", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tc := newTest(t, &recorder{}, Options{})
			if err := tc.c.Watch(&fakeSource{}); err != nil {
				t.Fatal(err)
			}
			cancel, errc := run(tc.c)
			time.Sleep(time.Second)
			cancel()
			if err := <-errc; err != nil {
				t.Fatalf("Start = %v, want nil", err)
			}
		})
	})
	t.Run("source fails while syncing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tc := newTest(t, &recorder{}, Options{})
			failure := errors.New("list forbidden")
			if err := tc.c.Watch(&fakeSource{start: func(context.Context, handler.Enqueuer, handler.Enqueuer) error {
				time.Sleep(time.Second)
				return failure
			}}); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err := tc.c.Start(context.Background())
			if !errors.Is(err, failure) || time.Since(start) != time.Second {
				t.Fatalf("Start = %v after %s", err, time.Since(start))
			}
		})
	})
	t.Run("source fails after sync", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := &recorder{}
			tc := newTest(t, r, Options{})
			failure := fmt.Errorf("watch forbidden: %w", context.Canceled) // its own cancellation, not ours
			src := &fakeSource{}
			src.synced.Store(true)
			src.start = func(_ context.Context, q, _ handler.Enqueuer) error {
				q.Add(req("a"))
				time.Sleep(time.Minute)
				return failure
			}
			if err := tc.c.Watch(src); err != nil {
				t.Fatal(err)
			}
			if err := tc.c.Start(context.Background()); !errors.Is(err, failure) {
				t.Fatalf("Start = %v", err)
			}
			if r.count() != 1 {
				t.Fatalf("reconciles = %d", r.count())
			}
		})
	})
	t.Run("no sources", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, err := New("empty", &recorder{}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			cancel, errc := run(c)
			time.Sleep(time.Second)
			cancel()
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		})
	})
}

func TestGracefulDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var ctxDone bool
		r := &recorder{do: func(ctx context.Context, _ reconcile.Request, _ int) (reconcile.Result, error) {
			<-release
			ctxDone = ctx.Err() != nil
			return reconcile.Result{}, nil
		}}
		tc := newTest(t, r, Options{})
		cancel, errc := run(tc.c)
		tc.send("a", "b", "c") // a in flight, b and c waiting
		synctest.Wait()
		cancel()
		synctest.Wait()
		select {
		case err := <-errc:
			t.Fatalf("Start returned %v with a reconcile in flight", err)
		default:
		}
		close(release)
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if got := r.got(); !slices.Equal(got, []string{"ns/a"}) {
			t.Fatalf("reconciles %q: keys waiting at shutdown must not start", got)
		}
		if !ctxDone {
			t.Fatal("the in-flight reconcile's context was not cancelled")
		}
		if s := tc.m.Only(); s.Success != 1 || s.ActiveWorkers != 0 {
			t.Fatalf("stats %+v", s)
		}
		// Adds after shutdown are ignored, nothing panics.
		tc.c.normal.Add(req("late"))
		tc.c.low.AddAfter(req("late"), time.Second)
	})
}

func TestLoggerAndIDInContext(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		t.Run(fmt.Sprintf("quiet=%t", quiet), func(t *testing.T) { testLoggerAndIDInContext(t, quiet) })
	}
}

// testLoggerAndIDInContext: each reconcile has its own UUID, in its
// logger's attributes and from reconcile.IDFrom — also when the
// controller's logger discards (quiet), where the ID's text is made only
// when asked for.
func testLoggerAndIDInContext(t *testing.T, quiet bool) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var ids []string
		r := &recorder{do: func(ctx context.Context, _ reconcile.Request, _ int) (reconcile.Result, error) {
			mu.Lock()
			ids = append(ids, reconcile.IDFrom(ctx))
			mu.Unlock()
			reconcile.LoggerFrom(ctx).Info("hello from reconcile")
			return reconcile.Result{}, nil
		}}
		var opts Options
		if quiet {
			opts.Logger = slog.New(slog.DiscardHandler)
		}
		tc := newTest(t, r, opts)
		cancel, errc := run(tc.c)
		tc.send("a")
		synctest.Wait()
		tc.send("a")
		synctest.Wait()
		cancel()
		<-errc
		uuidRE := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
		if len(ids) != 2 || ids[0] == ids[1] || !uuidRE.MatchString(ids[0]) || !uuidRE.MatchString(ids[1]) {
			t.Fatalf("reconcile IDs %q", ids)
		}
		if quiet {
			if !tc.c.quiet {
				t.Fatal("a controller with a discarding logger is not quiet")
			}
			return
		}
		for _, id := range ids {
			want := `msg="hello from reconcile" controller=widget namespace=ns name=a reconcileID=` + id
			if !strings.Contains(tc.logs.String(), want) {
				t.Fatalf("log lacks %q:\n%s", want, tc.logs.String())
			}
		}
	})
}

func TestRecoverPanicFalse(t *testing.T) {
	off := false
	tc := newTest(t, &recorder{do: func(context.Context, reconcile.Request, int) (reconcile.Result, error) {
		panic("kaboom")
	}}, Options{RecoverPanic: &off})
	func() {
		defer func() {
			if r := recover(); r != "kaboom" {
				t.Fatalf("recovered %v, want the panic to propagate", r)
			}
		}()
		_, _ = tc.c.reconcile(context.Background(), req("a"))
	}()
	if s := tc.m.Only(); s.Panics != 1 {
		t.Fatalf("panics = %d", s.Panics)
	}
	// With recovery on, a panic with an error value wraps both.
	cause := errors.New("index out of range")
	on := newTest(t, &recorder{do: func(context.Context, reconcile.Request, int) (reconcile.Result, error) {
		panic(cause)
	}}, Options{})
	_, err := on.c.reconcile(context.Background(), req("a"))
	if !errors.Is(err, ErrPanic) || !errors.Is(err, cause) {
		t.Fatalf("err = %v", err)
	}
}

func TestOptionsAndLifecycleErrors(t *testing.T) {
	r := &recorder{}
	tests := []struct {
		name    string
		cname   string
		r       reconcile.Reconciler
		opts    Options
		wantErr string
	}{
		{"zero options", "c", r, Options{}, ""},
		{"no name", "", r, Options{}, "needs a name"},
		{"no reconciler", "c", nil, Options{}, "needs a Reconciler"},
		{"negative workers", "c", r, Options{MaxConcurrentReconciles: -1}, "MaxConcurrentReconciles -1 is negative"},
		{"negative sync timeout", "c", r, Options{CacheSyncTimeout: -time.Second}, "CacheSyncTimeout -1s is negative"},
		{"negative reconcile timeout", "c", r, Options{ReconcileTimeout: -time.Second}, "ReconcileTimeout -1s is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.cname, tt.r, tt.opts)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.opts.MaxConcurrentReconciles != 1 || c.opts.CacheSyncTimeout != 2*time.Minute ||
					!*c.opts.RecoverPanic || c.opts.ReconcileTimeout != 0 || c.opts.Logger == nil || c.opts.Clock == nil ||
					c.opts.RateLimiter == nil || c.Name() != "c" {
					t.Fatalf("defaults %+v", c.opts)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
	c, _ := New("c", r, Options{})
	if err := c.Watch(nil); err == nil {
		t.Fatal("nil source accepted")
	}
	if _, err := NewChannelSource(nil, handler.EnqueueRequestForObject{}, ChannelOptions{}); err == nil {
		t.Fatal("nil channel accepted")
	}
	if _, err := NewChannelSource(make(chan handler.Event), nil, ChannelOptions{}); err == nil {
		t.Fatal("nil handler accepted")
	}
}

// A source added while the controller runs starts at once and feeds the
// workers, as in controller-runtime; its failure stops the controller; after
// the controller stopped, Watch is refused.
func TestWatchWhileRunning(t *testing.T) {
	t.Run("delivers", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rec := &recorder{}
			c, err := New("c", rec, Options{})
			if err != nil {
				t.Fatal(err)
			}
			first := &fakeSource{}
			first.synced.Store(true)
			if err := c.Watch(first); err != nil {
				t.Fatal(err)
			}
			cancel, errc := run(c)
			synctest.Wait()
			late := &fakeSource{start: func(_ context.Context, q, _ handler.Enqueuer) error {
				q.Add(req("late"))
				return nil
			}}
			if err := c.Watch(late); err != nil {
				t.Fatalf("Watch while running: %v", err)
			}
			synctest.Wait()
			if got := rec.got(); !slices.Equal(got, []string{"ns/late"}) {
				t.Fatalf("reconciles %q, want the late source's key", got)
			}
			cancel()
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if err := c.Watch(&fakeSource{}); err == nil || !strings.Contains(err.Error(), "stopped") {
				t.Fatalf("Watch after stop: %v, want a refusal", err)
			}
		})
	})
	t.Run("failure stops the controller", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, err := New("c", &recorder{}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			cancel, errc := run(c)
			defer cancel()
			synctest.Wait()
			boom := errors.New("boom")
			if err := c.Watch(&fakeSource{start: func(context.Context, handler.Enqueuer, handler.Enqueuer) error { return boom }}); err != nil {
				t.Fatal(err)
			}
			if err := <-errc; !errors.Is(err, boom) {
				t.Fatalf("Start returned %v, want the late source's error", err)
			}
		})
	})
	t.Run("Start failing early", func(t *testing.T) {
		c, err := New("c", &recorder{}, Options{BaseContext: func(context.Context) context.Context { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(context.Background()); err == nil {
			t.Fatal("Start with a nil BaseContext succeeded")
		}
		if err := c.Watch(&fakeSource{}); err == nil {
			t.Fatal("Watch after a failed Start accepted")
		}
	})
}

func TestChannelSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{}
		c, err := New("widget", r, Options{})
		if err != nil {
			t.Fatal(err)
		}
		events := make(chan handler.Event, 10)
		src, err := NewChannelSource(events, handler.EnqueueRequestForObject{}, ChannelOptions{
			Predicates: []predicate.Predicate{predicate.GenerationChanged{}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Watch(src); err != nil {
			t.Fatal(err)
		}
		gen := func(name string, g int64, rv string) handler.Object {
			o := obj(name)
			o.SetGeneration(g)
			o.SetResourceVersion(rv)
			return o
		}
		cancel, errc := run(c)
		events <- handler.UpdateEvent{ObjectOld: gen("status", 1, "1"), ObjectNew: gen("status", 1, "2")} // dropped
		events <- handler.UpdateEvent{ObjectOld: gen("spec", 1, "1"), ObjectNew: gen("spec", 2, "2")}
		events <- nil // ignored
		events <- handler.DeleteEvent{Object: obj("gone"), FinalStateUnknown: true}
		close(events) // the source is done; the controller keeps running
		synctest.Wait()
		if got := r.got(); !slices.Equal(got, []string{"ns/spec", "ns/gone"}) {
			t.Fatalf("reconciles %q", got)
		}
		select {
		case err := <-errc:
			t.Fatalf("Start returned %v when the channel closed", err)
		default:
		}
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if err := src.Start(context.Background(), c.normal, nil); err == nil {
			t.Fatal("second Start accepted")
		}
		if err := src.Start(context.Background(), nil, nil); err == nil {
			t.Fatal("Start without an Enqueuer accepted")
		}
		if !src.HasSynced() || !strings.HasPrefix(src.String(), "channel source 0x") {
			t.Fatal("HasSynced/String")
		}
	})
}

func TestNoReconcileUntilEverySourceSynced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{}
		c, err := New("widget", r, Options{})
		if err != nil {
			t.Fatal(err)
		}
		fast, slow := &fakeSource{}, &fakeSource{}
		fast.start = func(_ context.Context, q, _ handler.Enqueuer) error {
			q.Add(req("from-fast"))
			fast.synced.Store(true)
			return nil
		}
		slow.start = func(_ context.Context, q, low handler.Enqueuer) error {
			low.Add(req("from-slow"))
			time.Sleep(30 * time.Second) // a long initial list
			slow.synced.Store(true)
			return nil
		}
		for _, s := range []Source{fast, slow} {
			if err := c.Watch(s); err != nil {
				t.Fatal(err)
			}
		}
		cancel, errc := run(c)
		time.Sleep(30*time.Second - time.Nanosecond)
		synctest.Wait()
		if n := r.count(); n != 0 {
			t.Fatalf("reconciled %d keys before every source synced", n)
		}
		time.Sleep(200 * time.Millisecond) // the sync poll runs at most every 100 ms
		synctest.Wait()
		if got := r.got(); !slices.Equal(got, []string{"ns/from-fast", "ns/from-slow"}) {
			t.Fatalf("reconciles %q", got)
		}
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	})
}

func TestReconcileIDs(t *testing.T) {
	uuidRE := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, b := newIDSource(), newIDSource()
	seen := map[string]bool{}
	for range 10000 {
		for _, id := range []string{rctx.FormatUUID(a.next()), rctx.FormatUUID(b.next())} {
			if !uuidRE.MatchString(id) {
				t.Fatalf("not a v4 UUID: %q", id)
			}
			if seen[id] {
				t.Fatalf("duplicate ID %q", id)
			}
			seen[id] = true
		}
	}
}

// TestOwnedChildWakesOwner wires what the builder's Owns will: a child kind's
// events, filtered by GenerationChanged, mapped to the controller owner.
func TestOwnedChildWakesOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{}
		c, err := New("widget", r, Options{})
		if err != nil {
			t.Fatal(err)
		}
		owner, err := handler.EnqueueRequestForOwner(schema.GroupKind{Group: "example.com", Kind: "Widget"}, handler.OwnerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		events := make(chan handler.Event, 10)
		src, err := NewChannelSource(events, owner, ChannelOptions{Predicates: []predicate.Predicate{predicate.GenerationChanged{}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Watch(src); err != nil {
			t.Fatal(err)
		}
		yes := true
		child := func(gen int64, rv string, owners ...metav1.OwnerReference) handler.Object {
			return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: gen,
				ResourceVersion: rv, OwnerReferences: owners}}
		}
		ctrl := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Widget", Name: "w1", Controller: &yes}
		other := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Widget", Name: "w2"}
		cancel, errc := run(c)
		events <- handler.CreateEvent{Object: child(1, "1", ctrl, other)}                             // w1 (the controller owner only)
		events <- handler.UpdateEvent{ObjectOld: child(1, "1", ctrl), ObjectNew: child(1, "2", ctrl)} // status only: dropped
		synctest.Wait()
		events <- handler.UpdateEvent{ObjectOld: child(1, "2", ctrl), ObjectNew: child(2, "3", ctrl)} // spec: w1
		synctest.Wait()
		events <- handler.DeleteEvent{Object: child(2, "3", other)} // no controller owner: nothing
		synctest.Wait()
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if got := r.got(); !slices.Equal(got, []string{"ns/w1", "ns/w1"}) {
			t.Fatalf("reconciles %q", got)
		}
	})
}

// A failing key of the initial list is retried at its low priority: a fresh
// event that becomes ready meanwhile is reconciled first.
func TestRequeueKeepsPriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{do: func(ctx context.Context, req reconcile.Request, call int) (reconcile.Result, error) {
			switch {
			case req.Name == "l1" && call == 1:
				return reconcile.Result{}, errors.New("not yet") // retried after 5 ms
			case req.Name == "slow":
				time.Sleep(10 * time.Millisecond) // the worker is busy until t = 10 ms
			}
			return reconcile.Result{}, nil
		}}
		tc := newTest(t, r, Options{})
		src := &fakeSource{}
		src.start = func(ctx context.Context, q, low handler.Enqueuer) error {
			for _, n := range []string{"l1", "slow"} {
				handler.Dispatch(ctx, handler.EnqueueRequestForObject{}, handler.CreateEvent{Object: obj(n), IsInInitialList: true}, q, low)
			}
			src.synced.Store(true)
			time.AfterFunc(7*time.Millisecond, func() { q.Add(req("live")) })
			return nil
		}
		if err := tc.c.Watch(src); err != nil {
			t.Fatal(err)
		}
		cancel, errc := run(tc.c)
		time.Sleep(time.Second)
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		want := []string{"ns/l1", "ns/slow", "ns/live", "ns/l1"}
		if got := r.got(); !slices.Equal(got, want) {
			t.Fatalf("order %q, want %q", got, want)
		}
	})
}

// baseKey is the context key TestBaseContext's BaseContext adds.
type baseKey struct{}

// BaseContext's values reach the sources' handlers and every reconcile, and
// Start's cancellation still stops the controller; a nil context is an error.
func TestBaseContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex // guards seen
		seen := map[string]any{}
		record := func(where string, ctx context.Context) {
			mu.Lock()
			defer mu.Unlock()
			seen[where] = ctx.Value(baseKey{})
		}
		r := &recorder{do: func(ctx context.Context, _ reconcile.Request, _ int) (reconcile.Result, error) {
			record("reconcile", ctx)
			return reconcile.Result{}, nil
		}}
		calls := 0
		tc := newTest(t, r, Options{BaseContext: func(ctx context.Context) context.Context {
			calls++
			return context.WithValue(ctx, baseKey{}, "scopes")
		}})
		events := make(chan handler.Event, 1)
		src, err := NewChannelSource(events, handler.Funcs{GenericFunc: func(ctx context.Context, e handler.GenericEvent, q handler.Enqueuer) {
			record("handler", ctx)
			q.Add(req(e.Object.GetName()))
		}}, ChannelOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := tc.c.Watch(src); err != nil {
			t.Fatal(err)
		}
		cancel, errc := run(tc.c)
		events <- handler.GenericEvent{Object: obj("a")}
		synctest.Wait()
		cancel()
		if err := <-errc; err != nil {
			t.Fatalf("Start = %v after cancel", err)
		}
		if calls != 1 || seen["handler"] != "scopes" || seen["reconcile"] != "scopes" || r.count() != 1 {
			t.Fatalf("BaseContext called %d times; values seen %v; %d reconciles", calls, seen, r.count())
		}

		nilCtx := newTest(t, &recorder{}, Options{BaseContext: func(context.Context) context.Context { return nil }})
		if err := nilCtx.c.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "BaseContext returned a nil context") {
			t.Fatalf("Start with a nil BaseContext result = %v", err)
		}
	})
}
