package leaderelection

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// These tests run over real HTTPS on every target of
// apiservertest.ForEachTarget (the embedded server and the real
// kube-apiserver), the Lease in the test's namespace. A real
// connection cannot live in a synctest bubble (network I/O never counts as
// durably blocked, so fake time would not advance), so they use short real
// durations — lease 2 s, renew deadline 1 s, retry 200 ms: a renewal through
// etcd on a loaded machine can take hundreds of milliseconds — and assert
// bounds derived from them, each waited for at most a few seconds. The exact
// timing is asserted by the synctest tests in elector_test.go.

var fast = Options{LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond}

// waitFor fails the test if ch is not closed within d.
func waitFor(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s: not within %v", what, d)
	}
}

func TestOverHTTPSHandover(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testOverHTTPSHandover)
}

func testOverHTTPSHandover(t *testing.T, env *apiservertest.Env) {
	cfg := env.Config()
	opts := fast
	opts.Namespace = env.Namespace
	lc, err := newLeaseClient(cfg, env.Namespace, "kloop-election")
	if err != nil {
		t.Fatal(err)
	}
	a := startLeader(t, newElector(t, cfg, "a", opts))
	waitFor(t, a.started, 10*time.Second, "a acquires")
	bElector := newElector(t, cfg, "b", opts)
	b := startLeader(t, bElector)

	// b keeps waiting while a renews, longer than the lease duration.
	time.Sleep(fast.LeaseDuration + fast.RenewDeadline)
	if isClosed(b.started) || bElector.Leader() != "a" {
		t.Fatalf("b: started=%t, sees leader %q, want a", isClosed(b.started), bElector.Leader())
	}
	_, r := getLease(t, lc)
	if r.holder != "a" || r.leaseDurationSeconds != 2 || time.Since(r.renewTime) > fast.LeaseDuration {
		t.Errorf("lease while a leads = %+v", r)
	}

	cancelled := time.Now()
	a.cancel()
	if err := a.wait(); err != nil {
		t.Fatalf("a: Run = %v", err)
	}
	// Released: b takes over at its next attempt, well within the lease
	// duration.
	waitFor(t, b.started, 10*time.Second, "b takes over")
	took := time.Since(cancelled)
	t.Logf("b took over %v after a was cancelled", took)
	if took >= fast.LeaseDuration {
		t.Errorf("b took over after %v, want less than the lease duration %v (the lease was released)", took, fast.LeaseDuration)
	}
	if _, r := getLease(t, lc); r.holder != "b" || r.transitions != 1 {
		t.Errorf("lease after handover = %+v", r)
	}
}

func TestOverHTTPSLossOnServerErrors(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testOverHTTPSLossOnServerErrors)
}

func testOverHTTPSLossOnServerErrors(t *testing.T, env *apiservertest.Env) {
	opts := fast
	opts.Namespace = env.Namespace
	var faults *faultTransport
	cfg := env.Config()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		faults = &faultTransport{next: rt}
		return faults
	}
	aElector := newElector(t, cfg, "a", opts)
	a := startLeader(t, aElector)
	waitFor(t, a.started, 10*time.Second, "a acquires")
	b := startLeader(t, newElector(t, env.Config(), "b", opts))
	time.Sleep(300 * time.Millisecond)

	faults.set(serverError)
	failedFrom := time.Now()
	waitFor(t, a.stopped, 10*time.Second, "a gives up")
	lostAfter := time.Since(failedFrom)
	err := a.wait()
	if !errors.Is(err, ErrLeadershipLost) || !errors.Is(context.Cause(a.ctx()), ErrLeadershipLost) {
		t.Fatalf("Run = %v, cause %v; want ErrLeadershipLost", err, context.Cause(a.ctx()))
	}
	t.Logf("a gave up %v after the failures began: %v", lostAfter, err)
	// The last renewal was at most RetryPeriod before the failures began.
	if lostAfter > fast.RenewDeadline+time.Second {
		t.Errorf("a gave up %v after the failures began, want about the renew deadline %v", lostAfter, fast.RenewDeadline)
	}
	waitFor(t, b.started, 10*time.Second, "b takes over")
	bStart, _ := b.times()
	_, aStop := a.times()
	if bStart.Before(aStop) {
		t.Errorf("b started at %v, before a gave up at %v", bStart, aStop)
	}
}

// interfere applies change to the Lease's record and writes it, retrying
// when a renewal of the leader came between the read and the write.
func interfere(t *testing.T, lc *leaseClient, change func(*record)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, r := getLease(t, lc)
		change(&r)
		_, err := lc.update(context.Background(), l, r.spec())
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) || time.Now().After(deadline) {
			t.Fatalf("update lease: %v", err)
		}
	}
}

// What other writers do to the Lease while a leader holds it, on both
// servers: emptied, the leader gives up; deleted, it creates it again.
func TestOverHTTPSInterference(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		cfg := env.Config()
		opts := fast
		opts.Namespace = env.Namespace
		lc, err := newLeaseClient(cfg, env.Namespace, "kloop-election")
		if err != nil {
			t.Fatal(err)
		}

		t.Run("lease deleted", func(t *testing.T) {
			e := newElector(t, cfg, "a", opts)
			a := startLeader(t, e)
			waitFor(t, a.started, 10*time.Second, "a acquires")
			_, before := getLease(t, lc)
			if err := lc.rest.Delete().Namespace(lc.namespace).Resource("leases").Name(lc.name).Do(context.Background()).Error(); err != nil {
				t.Fatalf("delete lease: %v", err)
			}
			// The leader creates it again at its next renewal.
			deadline := time.Now().Add(5 * time.Second)
			for {
				l, err := lc.get(context.Background())
				if err == nil {
					if r := recordOf(&l.Spec); r.holder != "a" || r.transitions != before.transitions {
						t.Fatalf("lease recreated as %+v, want holder a, transitions %d", r, before.transitions)
					}
					break
				}
				if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
					t.Fatalf("the lease was not recreated: %v", err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if isClosed(a.stopped) || !e.IsLeader() {
				t.Fatal("the leader stopped leading")
			}
			a.cancel()
			if err := a.wait(); err != nil {
				t.Fatalf("Run = %v", err)
			}
		})

		t.Run("lease emptied", func(t *testing.T) {
			a := startLeader(t, newElector(t, cfg, "a", opts))
			waitFor(t, a.started, 10*time.Second, "a acquires")
			interfere(t, lc, func(r *record) { r.holder = "" })
			waitFor(t, a.stopped, 10*time.Second, "a gives up")
			if err := a.wait(); !errors.Is(err, ErrLeadershipLost) || !strings.Contains(err.Error(), "the lease was released by another writer") {
				t.Fatalf("Run = %v, want ErrLeadershipLost: the lease was released by another writer", err)
			}
		})

		t.Run("lease taken before the release", func(t *testing.T) {
			// Default timings: the next renewal is seconds away, so the
			// cancel comes before the leader could notice.
			slow := Options{Namespace: env.Namespace}
			a := startLeader(t, newElector(t, cfg, "a", slow))
			waitFor(t, a.started, 10*time.Second, "a acquires")
			interfere(t, lc, func(r *record) { r.holder = "thief" })
			a.cancel()
			if err := a.wait(); err != nil {
				t.Fatalf("Run = %v, want nil (the release skips a lease no longer ours)", err)
			}
			if _, r := getLease(t, lc); r.holder != "thief" {
				t.Fatalf("holder after the release = %q, want thief", r.holder)
			}
		})
	})
}
