package leaderelection

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// These tests run over real HTTPS against apiservertest.NewServer. A real
// connection cannot live in a synctest bubble (network I/O never counts as
// durably blocked, so fake time would not advance), so they use short real
// durations — lease 1 s, renew deadline 500 ms, retry 100 ms — and assert
// bounds derived from them, each waited for at most a few seconds. The exact
// timing is asserted by the synctest tests in elector_test.go.

var fast = Options{LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}

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
	srv := apiservertest.NewServer(t, apiservertest.Options{})
	lc, err := newLeaseClient(srv.Config(), "default", "kloop-election")
	if err != nil {
		t.Fatal(err)
	}
	a := startLeader(t, newElector(t, srv.Config(), "a", fast))
	waitFor(t, a.started, 5*time.Second, "a acquires")
	bElector := newElector(t, srv.Config(), "b", fast)
	b := startLeader(t, bElector)

	// b keeps waiting for twice the lease duration while a renews.
	time.Sleep(2 * fast.LeaseDuration)
	if isClosed(b.started) || bElector.Leader() != "a" {
		t.Fatalf("b: started=%t, sees leader %q, want a", isClosed(b.started), bElector.Leader())
	}
	_, r := getLease(t, lc)
	if r.holder != "a" || r.leaseDurationSeconds != 1 || time.Since(r.renewTime) > time.Second {
		t.Errorf("lease while a leads = %+v", r)
	}

	cancelled := time.Now()
	a.cancel()
	if err := a.wait(); err != nil {
		t.Fatalf("a: Run = %v", err)
	}
	// Released: b takes over at its next attempt, well within the lease
	// duration.
	waitFor(t, b.started, 5*time.Second, "b takes over")
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
	srv := apiservertest.NewServer(t, apiservertest.Options{})
	var faults *faultTransport
	cfg := srv.Config()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		faults = &faultTransport{next: rt}
		return faults
	}
	aElector := newElector(t, cfg, "a", fast)
	a := startLeader(t, aElector)
	waitFor(t, a.started, 5*time.Second, "a acquires")
	b := startLeader(t, newElector(t, srv.Config(), "b", fast))
	time.Sleep(300 * time.Millisecond)

	faults.set(serverError)
	failedFrom := time.Now()
	waitFor(t, a.stopped, 5*time.Second, "a gives up")
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
	waitFor(t, b.started, 5*time.Second, "b takes over")
	bStart, _ := b.times()
	_, aStop := a.times()
	if bStart.Before(aStop) {
		t.Errorf("b started at %v, before a gave up at %v", bStart, aStop)
	}
}
