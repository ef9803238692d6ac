package manager_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
)

// Short timings for the tests, with room for a loaded CI machine (the leader
// must renew within testRenew); the renew deadline must exceed RetryPeriod ×
// leaderelection.JitterFactor.
const (
	testLease   = 3 * time.Second
	testRenew   = 2 * time.Second
	testRetry   = 200 * time.Millisecond
	electionID  = "widget-controller"
	notElected  = 500 * time.Millisecond
	leaderLabel = `leader_election_master_status{name="` + electionID + `"}`
)

// tracked is a runnable that records whether it runs.
type tracked struct {
	leader  bool
	running atomic.Bool
	starts  atomic.Int32
}

func (r *tracked) NeedLeaderElection() bool { return r.leader }

func (r *tracked) Start(ctx context.Context) error {
	r.starts.Add(1)
	r.running.Store(true)
	<-ctx.Done()
	r.running.Store(false)
	return nil
}

// replica is one manager of an election, with a leader-only runnable, an
// every-replica runnable and a controller (leader-only by default).
type replica struct {
	mgr        *manager.Manager
	leaderOnly tracked
	every      tracked
	reconciles atomic.Int32
}

func newReplica(t *testing.T, cfg *rest.Config, ns, id string, keepLease bool) *replica {
	t.Helper()
	mgr, err := manager.New(cfg, manager.Options{
		LeaderElectionKeepLease: keepLease,
		LeaderElection:          true,
		LeaderElectionID:        electionID,
		LeaderElectionNamespace: ns,
		LeaderElectionIdentity:  id,
		LeaseDuration:           testLease,
		RenewDeadline:           testRenew,
		RetryPeriod:             testRetry,
		MetricsBindAddress:      "127.0.0.1:0",
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{mgr: mgr}
	r.leaderOnly.leader = true
	for _, run := range []manager.Runnable{&r.leaderOnly, &r.every} {
		if err := mgr.Add(run); err != nil {
			t.Fatal(err)
		}
	}
	rec := reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		if req.Name == "kube-root-ca.crt" {
			return reconcile.Result{}, nil // the namespace's own; the test counts its work
		}
		r.reconciles.Add(1)
		return reconcile.Result{}, nil
	})
	if err := builder.ControllerManagedBy(mgr).For(&corev1.ConfigMap{}, builder.WithScope(informer.Scope{Namespace: ns})).Complete(rec); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *replica) leaderMetric(t *testing.T) string {
	t.Helper()
	_, body := get(t, "http://"+r.mgr.MetricsAddr().String()+"/metrics")
	for line := range strings.SplitSeq(body, "\n") {
		if strings.HasPrefix(line, leaderLabel) {
			return strings.TrimSpace(strings.TrimPrefix(line, leaderLabel))
		}
	}
	return "absent"
}

func elected(r *replica, within time.Duration) bool {
	select {
	case <-r.mgr.Elected():
		return true
	case <-time.After(within):
		return false
	}
}

// Two managers, one Lease: one leads and runs the controllers; when it is
// cancelled it stops them and releases the Lease, and the other takes over
// at its next retry, well within the lease duration. With the lease kept,
// the other takes over once the lease expires on its clock: a lease duration
// after it last saw a renewal, plus up to two jittered retry periods (the
// read that saw the renewal, the attempt after the expiry); the bound leaves
// slack for a loaded machine.
func TestLeaderElectionFailover(t *testing.T) {
	tests := []struct {
		name      string
		keepLease bool
		takeover  time.Duration
	}{
		{"lease released on cancel", false, testLease},
		{"lease kept until it expires", true, testLease + 2*time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
				testFailover(t, env, tt.keepLease, tt.takeover)
			})
		})
	}
}

func testFailover(t *testing.T, env *apiservertest.Env, keepLease bool, takeover time.Duration) {
	ns, cfg := env.Namespace, env.Config()
	a, b := newReplica(t, cfg, ns, "replica-a", keepLease), newReplica(t, cfg, ns, "replica-b", keepLease)

	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	doneA := run(t, ctxA, a.mgr)
	if !elected(a, 10*time.Second) {
		t.Fatal("the only candidate was not elected")
	}
	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	doneB := run(t, ctxB, b.mgr)
	if elected(b, notElected) {
		t.Fatal("a second replica was elected while the first leads")
	}
	// A leader-only runnable added to the standby after Start waits for
	// leadership.
	late := &tracked{leader: true}
	if err := b.mgr.Add(late); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the every-replica runnables", func() bool { return a.every.running.Load() && b.every.running.Load() })
	if !a.leaderOnly.running.Load() || b.leaderOnly.running.Load() || late.starts.Load() != 0 {
		t.Fatalf("leader-only runnables: leader %v, standby %v", a.leaderOnly.running.Load(), b.leaderOnly.running.Load())
	}
	if ma, mb := a.leaderMetric(t), b.leaderMetric(t); ma != "1" || mb != "0" {
		t.Fatalf("%s: leader %s, standby %s", leaderLabel, ma, mb)
	}
	if err := a.mgr.Client().Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "work"}}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the leader's reconcile", func() bool { return a.reconciles.Load() == 1 })
	// The standby's controller is not running: its readiness check passes.
	if n := b.reconciles.Load(); n != 0 {
		t.Fatalf("the standby reconciled %d times", n)
	}

	handover := time.Now()
	cancelA()
	if err := <-doneA; err != nil {
		t.Fatalf("the leader's Start after cancel: %v", err)
	}
	if a.leaderOnly.running.Load() || a.every.running.Load() {
		t.Fatal("the old leader's runnables still run after Start returned")
	}
	if !elected(b, takeover) {
		t.Fatalf("the standby did not take over within %v", takeover)
	}
	t.Logf("takeover after %v", time.Since(handover))
	testutil.Eventually(t, "the new leader's runnables", func() bool { return b.leaderOnly.running.Load() && late.running.Load() })
	testutil.Eventually(t, "the new leader's reconcile of the initial list", func() bool { return b.reconciles.Load() == 1 })
	if mb := b.leaderMetric(t); mb != "1" {
		t.Fatalf("%s on the new leader: %s", leaderLabel, mb)
	}
	lease := &coordinationv1.Lease{}
	if err := b.mgr.Client().Uncached().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: electionID}, lease); err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h == nil || *h != "replica-b" {
		t.Fatalf("the Lease's holder is %v, want replica-b", h)
	}
	cancelB()
	if err := <-doneB; err != nil {
		t.Fatalf("Start: %v", err)
	}
}

// A leader that loses its Lease stops its leader-only runnables and Start
// returns ErrLeadershipLost.
func TestLeadershipLost(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testLeadershipLost)
}

func testLeadershipLost(t *testing.T, env *apiservertest.Env) {
	ns, cfg := env.Namespace, env.Config()
	a := newReplica(t, cfg, ns, "replica-a", false)
	done := run(t, context.Background(), a.mgr)
	if !elected(a, 10*time.Second) {
		t.Fatal("the only candidate was not elected")
	}
	testutil.Eventually(t, "the leader-only runnable", a.leaderOnly.running.Load)

	// Someone else takes the Lease over (retrying when a renewal of the
	// leader came between the read and the write).
	c := a.mgr.Client().Uncached()
	testutil.Eventually(t, "the Lease to be taken over", func() bool {
		lease := &coordinationv1.Lease{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: electionID}, lease); err != nil {
			t.Fatal(err)
		}
		lease.Spec.HolderIdentity = new("thief")
		err := a.mgr.Client().Update(context.Background(), lease)
		if err != nil && !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
		return err == nil
	})
	select {
	case err := <-done:
		if !errors.Is(err, manager.ErrLeadershipLost) {
			t.Fatalf("Start: %v, want ErrLeadershipLost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the manager kept running after its lease was taken")
	}
	if a.leaderOnly.running.Load() || a.every.running.Load() {
		t.Fatal("runnables still run after Start returned")
	}
	if a.leaderOnly.starts.Load() != 1 {
		t.Fatalf("the leader-only runnable started %d times", a.leaderOnly.starts.Load())
	}
}

// A standby's probes pass: its informers sync, its controllers do not run.
func TestStandbyIsReady(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testStandbyIsReady)
}

func testStandbyIsReady(t *testing.T, env *apiservertest.Env) {
	ns, cfg := env.Namespace, env.Config()
	a := newReplica(t, cfg, ns, "replica-a", false)
	ctxA, cancelA := context.WithCancel(context.Background())
	doneA := run(t, ctxA, a.mgr)
	defer func() { cancelA(); <-doneA }()
	if !elected(a, 10*time.Second) {
		t.Fatal("not elected")
	}
	b, err := manager.New(cfg, manager.Options{
		LeaderElection: true, LeaderElectionID: electionID, LeaderElectionNamespace: ns,
		LeaseDuration: testLease, RenewDeadline: testRenew, RetryPeriod: testRetry,
		HealthProbeBindAddress: "127.0.0.1:0",
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil })
	if err := builder.ControllerManagedBy(b).For(&corev1.ConfigMap{}, builder.WithScope(informer.Scope{Namespace: ns})).Complete(rec); err != nil {
		t.Fatal(err)
	}
	ctxB, cancelB := context.WithCancel(context.Background())
	doneB := run(t, ctxB, b)
	defer func() { cancelB(); <-doneB }()
	probe := "http://" + b.HealthProbeAddr().String() + "/readyz"
	testutil.Eventually(t, "the standby to be ready", func() bool { code, _ := get(t, probe); return code == http.StatusOK })
	if elected(&replica{mgr: b}, 0) {
		t.Fatal("the standby leads")
	}
}

// drainer is a leader-only runnable that, once its context is cancelled,
// keeps working for drain (a reconcile finishing) before it returns.
type drainer struct {
	drain   time.Duration
	release chan struct{} // when non-nil, it returns only once this is closed
	running atomic.Bool
	started chan struct{}
}

func (d *drainer) NeedLeaderElection() bool { return true }

func (d *drainer) Start(ctx context.Context) error {
	d.running.Store(true)
	close(d.started)
	<-ctx.Done()
	if d.release != nil {
		<-d.release
	} else {
		time.Sleep(d.drain)
	}
	d.running.Store(false)
	return nil
}

// While the leader's leader-only runnables drain after a cancel (here for
// longer than the lease duration), the leader keeps renewing its Lease: a
// standby must not take over while the old leader's work still runs. It
// takes over once the drain is done and the Lease released.
func TestLeaseHeldWhileLeaderRunnablesDrain(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testLeaseHeldWhileLeaderRunnablesDrain)
}

func testLeaseHeldWhileLeaderRunnablesDrain(t *testing.T, env *apiservertest.Env) {
	ns, cfg := env.Namespace, env.Config()
	a, b := newReplica(t, cfg, ns, "replica-a", false), newReplica(t, cfg, ns, "replica-b", false)
	slow := &drainer{drain: testLease + 1500*time.Millisecond, started: make(chan struct{})}
	if err := a.mgr.Add(slow); err != nil {
		t.Fatal(err)
	}
	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	doneA := run(t, ctxA, a.mgr)
	if !elected(a, 10*time.Second) {
		t.Fatal("the only candidate was not elected")
	}
	<-slow.started
	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	doneB := run(t, ctxB, b.mgr)

	cancelA()
	var overlap atomic.Bool
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		select {
		case <-b.mgr.Elected():
			overlap.Store(slow.running.Load())
		case <-doneA:
		}
	}()
	<-watching
	if overlap.Load() {
		t.Fatal("the standby was elected while the old leader's leader-only runnable was still draining")
	}
	if !elected(b, testLease) {
		t.Fatal("the standby did not take over after the old leader stopped")
	}
	if slow.running.Load() {
		t.Fatal("the old leader's runnable still runs after its Start returned")
	}
	cancelB()
	if err := <-doneB; err != nil {
		t.Fatalf("Start: %v", err)
	}
}

// A leader that loses its Lease while a leader-only runnable ignores its
// context still stops: Start returns within GracefulShutdownTimeout, with
// ErrLeadershipLost and ErrShutdownTimeout.
func TestLeadershipLostShutdownIsBounded(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testLeadershipLostShutdownIsBounded)
}

func testLeadershipLostShutdownIsBounded(t *testing.T, env *apiservertest.Env) {
	ns, cfg := env.Namespace, env.Config()
	mgr, err := manager.New(cfg, manager.Options{
		LeaderElection:          true,
		LeaderElectionID:        electionID,
		LeaderElectionNamespace: ns,
		LeaderElectionIdentity:  "replica-a",
		LeaseDuration:           testLease,
		RenewDeadline:           testRenew,
		RetryPeriod:             testRetry,
		GracefulShutdownTimeout: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	stuck := &drainer{release: make(chan struct{}), started: make(chan struct{})}
	defer close(stuck.release)
	if err := mgr.Add(stuck); err != nil {
		t.Fatal(err)
	}
	done := run(t, context.Background(), mgr)
	<-stuck.started

	stealLease(t, mgr, ns)
	select {
	case err := <-done:
		if !errors.Is(err, manager.ErrLeadershipLost) || !errors.Is(err, manager.ErrShutdownTimeout) {
			t.Fatalf("Start: %v, want ErrLeadershipLost and ErrShutdownTimeout", err)
		}
	case <-time.After(testRenew + 10*time.Second):
		t.Fatal("Start did not return after the lease was lost (a leader-only runnable ignores its context)")
	}
}

// stealLease writes another holder into the election's Lease (retrying when
// a renewal of the leader came between the read and the write).
func stealLease(t *testing.T, mgr *manager.Manager, ns string) {
	t.Helper()
	c := mgr.Client().Uncached()
	testutil.Eventually(t, "the Lease to be taken over", func() bool {
		lease := &coordinationv1.Lease{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: electionID}, lease); err != nil {
			t.Fatal(err)
		}
		lease.Spec.HolderIdentity = new("thief")
		err := mgr.Client().Update(context.Background(), lease)
		if err != nil && !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
		return err == nil
	})
}

// A runnable that returns its context's error once that context is
// cancelled has not failed: when leadership is lost, Start's error is the
// loss, not "context canceled" from the leader-only runnables it stopped.
func TestCancelledRunnableIsNotAFailure(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testCancelledRunnableIsNotAFailure)
}

func testCancelledRunnableIsNotAFailure(t *testing.T, env *apiservertest.Env) {
	ns, cfg := env.Namespace, env.Config()
	a := newReplica(t, cfg, ns, "replica-a", false)
	started := make(chan struct{})
	for range 8 {
		if err := a.mgr.Add(leaderOnlyFunc(func(ctx context.Context) error {
			started <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		})); err != nil {
			t.Fatal(err)
		}
	}
	done := run(t, context.Background(), a.mgr)
	for range 8 {
		<-started
	}
	stealLease(t, a.mgr, ns)
	select {
	case err := <-done:
		if !errors.Is(err, manager.ErrLeadershipLost) || errors.Is(err, context.Canceled) {
			t.Fatalf("Start: %v, want ErrLeadershipLost only", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the manager kept running after its lease was taken")
	}
}

// leaderOnlyFunc is a RunnableFunc that needs leadership.
type leaderOnlyFunc func(ctx context.Context) error

func (f leaderOnlyFunc) Start(ctx context.Context) error { return f(ctx) }
func (leaderOnlyFunc) NeedLeaderElection() bool          { return true }

// failLeaseWrites fails the PUTs to Leases once fail is set.
type failLeaseWrites struct {
	next http.RoundTripper
	fail *atomic.Bool
}

func (f failLeaseWrites) RoundTrip(req *http.Request) (*http.Response, error) {
	if f.fail.Load() && req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/leases/") {
		return nil, errors.New("injected: lease write refused")
	}
	return f.next.RoundTrip(req)
}

// Start returns nil after a cancellation even when the Lease could not be
// released (it then expires after the lease duration), as documented and
// as controller-runtime does: the failure is logged, it is no failure of the
// manager.
func TestReleaseFailureAfterCancel(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testReleaseFailureAfterCancel)
}

func testReleaseFailureAfterCancel(t *testing.T, env *apiservertest.Env) {
	ns, cfg := env.Namespace, env.Config()
	var fail atomic.Bool
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return failLeaseWrites{next: rt, fail: &fail} }
	a := newReplica(t, cfg, ns, "replica-a", false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := run(t, ctx, a.mgr)
	if !elected(a, 10*time.Second) {
		t.Fatal("the only candidate was not elected")
	}
	fail.Store(true)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Start after a cancellation: %v, want nil", err)
	}
	lease := &coordinationv1.Lease{}
	if err := a.mgr.Client().Uncached().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: electionID}, lease); err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h == nil || *h != "replica-a" {
		t.Fatalf("the Lease's holder is %v: the release was not refused", h)
	}
}
