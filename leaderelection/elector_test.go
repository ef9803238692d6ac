package leaderelection

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// The timing tests run in a synctest bubble against the embedded API
// server's handler (see handlerTransport), with the default durations:
// lease 15 s, renew deadline 10 s, retry 2 s. Their clocks are fake, so the
// bounds they assert are exact, not generous.

const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
	maxRetry      = retryPeriod + time.Duration(JitterFactor*float64(retryPeriod)) // longest jittered wait
)

func getLease(t *testing.T, lc *leaseClient) (*coordinationv1.Lease, record) {
	t.Helper()
	l, err := lc.get(context.Background())
	if err != nil {
		t.Fatalf("get lease: %v", err)
	}
	return l, recordOf(&l.Spec)
}

func TestAcquireRenewRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(t)
		cfg, _ := inProcess(srv)
		lc, err := newLeaseClient(cfg, "default", "kloop-election")
		if err != nil {
			t.Fatal(err)
		}
		e := newElector(t, cfg, "a", Options{})
		if e.IsLeader() || e.Leader() != "" {
			t.Fatalf("before Run: IsLeader=%t Leader=%q", e.IsLeader(), e.Leader())
		}
		t0 := time.Now()
		a := startLeader(t, e)
		<-a.started
		if d := time.Since(t0); d != 0 {
			t.Errorf("acquired an absent lease after %v, want at once", d)
		}
		if !e.IsLeader() || e.Leader() != "a" {
			t.Errorf("leading: IsLeader=%t Leader=%q", e.IsLeader(), e.Leader())
		}
		_, r := getLease(t, lc)
		if r.holder != "a" || r.leaseDurationSeconds != 15 || r.transitions != 0 || !r.acquireTime.Equal(t0) || !r.renewTime.Equal(t0) {
			t.Errorf("created lease record = %+v", r)
		}

		// Renewals every RetryPeriod move renewTime, keep acquireTime.
		time.Sleep(3*retryPeriod + time.Second)
		_, r = getLease(t, lc)
		if want := t0.Add(3 * retryPeriod); !r.renewTime.Equal(want) || !r.acquireTime.Equal(t0) || r.holder != "a" {
			t.Errorf("after three renewals: %+v, want renewTime %v", r, want)
		}
		st := e.Status()
		if !st.Leading || st.Holder != "a" || st.Acquisitions != 1 || !st.LastRenew.Equal(t0.Add(3*retryPeriod)) || st.Name != "kloop-election" || st.Namespace != "default" {
			t.Errorf("Status = %+v", st)
		}

		a.cancel()
		if err := a.wait(); err != nil {
			t.Fatalf("Run after cancel = %v, want nil", err)
		}
		if !isClosed(a.stopped) {
			t.Error("Run returned before onStarted returned")
		}
		if !a.isLeaderAtStop() {
			t.Error("IsLeader was false before the lease was released")
		}
		if !errors.Is(context.Cause(a.ctx()), context.Canceled) {
			t.Errorf("leader ctx cause = %v", context.Cause(a.ctx()))
		}
		_, r = getLease(t, lc)
		if r.holder != "" || r.leaseDurationSeconds != 1 || r.transitions != 0 {
			t.Errorf("released lease record = %+v, want empty holder, 1 s", r)
		}
		if e.IsLeader() || e.Leader() != "" || e.Status().Leading {
			t.Errorf("after release: IsLeader=%t Leader=%q", e.IsLeader(), e.Leader())
		}
	})
}

func TestHandover(t *testing.T) {
	for _, tc := range []struct {
		name    string
		release bool
		// takeover bounds after the leader's context is cancelled
		min, max time.Duration
	}{
		// Released: the other candidate sees the empty holder on its next
		// attempt.
		{"release on cancel", true, 0, maxRetry},
		// Kept: the other waits until the lease expires on its own clock:
		// the last renewal (at most RetryPeriod before the cancel) was
		// observed at most one jittered retry later.
		{"keep on cancel", false, leaseDuration - retryPeriod, leaseDuration + 2*maxRetry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(t)
				cfg, _ := inProcess(srv)
				lc, _ := newLeaseClient(cfg, "default", "kloop-election")
				a := startLeader(t, newElector(t, cfg, "a", Options{ReleaseOnCancel: new(tc.release)}))
				<-a.started
				bElector := newElector(t, cfg, "b", Options{ReleaseOnCancel: new(tc.release)})
				b := startLeader(t, bElector)

				// b waits while a renews, however long.
				time.Sleep(5 * leaseDuration)
				synctest.Wait()
				if isClosed(b.started) || bElector.IsLeader() {
					t.Fatal("b leads while a holds the lease")
				}
				if got := bElector.Leader(); got != "a" {
					t.Errorf("b sees leader %q, want a", got)
				}

				time.Sleep(time.Duration(time.Now().UnixNano()%int64(retryPeriod)) + 1) // cancel somewhere in a's renew cycle
				cancelled := time.Now()
				a.cancel()
				if err := a.wait(); err != nil {
					t.Fatalf("a: Run = %v", err)
				}
				<-b.started
				bStart, _ := b.times()
				_, aStop := a.times()
				if bStart.Before(aStop) {
					t.Errorf("b started leading at %v, before a stopped at %v", bStart, aStop)
				}
				if d := bStart.Sub(cancelled); d < tc.min || d > tc.max {
					t.Errorf("b took over %v after a was cancelled, want within [%v, %v]", d, tc.min, tc.max)
				}
				_, r := getLease(t, lc)
				if r.holder != "b" || r.transitions != 1 {
					t.Errorf("lease after handover = %+v, want holder b, 1 transition", r)
				}
				if bElector.Leader() != "b" || bElector.Status().Transitions != 1 {
					t.Errorf("b: Leader=%q Status=%+v", bElector.Leader(), bElector.Status())
				}
				b.cancel()
				if err := b.wait(); err != nil {
					t.Fatalf("b: Run = %v", err)
				}
			})
		})
	}
}

// A leader whose renewals fail gives leadership up RenewDeadline after its
// last successful renewal, before the lease expires for anyone else.
func TestLossWhenRenewalsFail(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault fault
	}{
		{"server errors", serverError},
		{"server hangs", hang},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(t)
				cfgA, faults := inProcess(srv)
				cfgB, _ := inProcess(srv)
				aElector := newElector(t, cfgA, "a", Options{})
				a := startLeader(t, aElector)
				<-a.started
				b := startLeader(t, newElector(t, cfgB, "b", Options{}))

				time.Sleep(3*retryPeriod + time.Second)
				lastRenew := aElector.Status().LastRenew
				faults.set(tc.fault)

				<-a.stopped
				_, lost := a.times()
				if want := lastRenew.Add(renewDeadline); !lost.Equal(want) {
					t.Errorf("a stopped leading at +%v after its last renewal, want +%v", lost.Sub(lastRenew), renewDeadline)
				}
				if !errors.Is(context.Cause(a.ctx()), ErrLeadershipLost) {
					t.Errorf("leader ctx cause = %v, want ErrLeadershipLost", context.Cause(a.ctx()))
				}
				err := a.wait()
				if !errors.Is(err, ErrLeadershipLost) {
					t.Fatalf("Run = %v, want ErrLeadershipLost", err)
				}
				t.Logf("Run: %v", err)
				if aElector.IsLeader() || a.isLeaderAtStop() {
					t.Error("IsLeader after loss")
				}
				// Failing attempts are retried every RetryPeriod (at +2, +4, +6
				// and +8 s after the last renewal; each tries an optimistic
				// update, then a read); a hanging one is cut off at the deadline.
				if want := map[fault]int{serverError: 2 * 4, hang: 1}[tc.fault]; faults.faulted() != want {
					t.Errorf("%d requests during the renew deadline, want %d", faults.faulted(), want)
				}

				<-b.started
				bStart, _ := b.times()
				if !bStart.After(lost) {
					t.Errorf("b started at %v, not after a gave up at %v", bStart, lost)
				}
				// b saw a's last renewal at most one jittered retry after it, and
				// tries at most one jittered retry after it expired.
				if d := bStart.Sub(lastRenew); d < leaseDuration || d > leaseDuration+2*maxRetry {
					t.Errorf("b took over %v after a's last renewal, want within [%v, %v]", d, leaseDuration, leaseDuration+2*maxRetry)
				}
				b.cancel()
				if err := b.wait(); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// Another writer steals the Lease: the leader's optimistic renewal gets a
// 409 Conflict, it reads the Lease, sees the thief and steps down on that
// renewal, without waiting for the renew deadline.
func TestLossWhenLeaseIsTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(t)
		cfg, _ := inProcess(srv)
		lc, _ := newLeaseClient(cfg, "default", "kloop-election")
		e := newElector(t, cfg, "a", Options{})
		a := startLeader(t, e)
		<-a.started
		time.Sleep(retryPeriod + time.Second)

		lease, r := getLease(t, lc)
		now := time.Now()
		stolen := record{holder: "thief", leaseDurationSeconds: 60, acquireTime: now, renewTime: now, transitions: r.transitions + 1}
		if _, err := lc.update(context.Background(), lease, stolen.spec()); err != nil {
			t.Fatal(err)
		}
		err := a.wait()
		if !errors.Is(err, ErrLeadershipLost) {
			t.Fatalf("Run = %v, want ErrLeadershipLost", err)
		}
		_, lost := a.times()
		if d := lost.Sub(now); d > retryPeriod {
			t.Errorf("stepped down %v after the theft, want within one retry period", d)
		}
		st := e.Status()
		if st.SlowPaths != 1 || st.Holder != "thief" || st.Leading {
			t.Errorf("Status = %+v, want one slow path, holder thief", st)
		}
		if _, r := getLease(t, lc); r.holder != "thief" {
			t.Errorf("the loser wrote the lease: %+v", r)
		}
	})
}

// A write by someone else that leaves the holder alone (here a label)
// conflicts with the leader's optimistic renewal; the leader reads the Lease
// again and renews it on the same attempt.
func TestConflictingWriteKeepsLeadership(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(t)
		cfg, _ := inProcess(srv)
		lc, _ := newLeaseClient(cfg, "default", "kloop-election")
		e := newElector(t, cfg, "a", Options{})
		a := startLeader(t, e)
		<-a.started
		time.Sleep(retryPeriod / 2) // write between renewals
		for i := range 3 {
			time.Sleep(retryPeriod)
			lease, _ := getLease(t, lc)
			lease.Labels = map[string]string{"touched": string(rune('0' + i))}
			if _, err := lc.update(context.Background(), lease, lease.Spec); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(retryPeriod / 2)
		synctest.Wait()
		st := e.Status()
		if !st.Leading || st.SlowPaths != 3 || isClosed(a.stopped) {
			t.Errorf("Status = %+v, want leading after 3 slow paths", st)
		}
		lease, r := getLease(t, lc)
		if r.holder != "a" || !r.renewTime.Equal(time.Now()) || lease.Labels["touched"] != "2" {
			t.Errorf("lease = %+v labels %v, want renewed now by a, the label kept", r, lease.Labels)
		}
		a.cancel()
		if err := a.wait(); err != nil {
			t.Fatal(err)
		}
	})
}

// A Lease created by someone else is respected while its holder renews it,
// and for LeaseDuration after the candidate last saw it change, judged by
// the candidate's own clock (not by the renewTime written in it, which may
// come from a skewed clock).
func TestForeignLease(t *testing.T) {
	for _, tc := range []struct {
		name string
		// renewTime written by the foreign holder, relative to now
		renewAge time.Duration
		holder   string
		// wait until the candidate acquires, after the foreign holder stops
		min, max time.Duration
	}{
		{"fresh", 0, "other", leaseDuration, leaseDuration + 2*maxRetry},
		{"renewTime an hour old", time.Hour, "other", leaseDuration, leaseDuration + 2*maxRetry},
		{"released", 0, "", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(t)
				cfg, _ := inProcess(srv)
				lc, _ := newLeaseClient(cfg, "default", "kloop-election")
				now := time.Now()
				foreign := record{holder: tc.holder, leaseDurationSeconds: 15, acquireTime: now.Add(-tc.renewAge), renewTime: now.Add(-tc.renewAge), transitions: 4}
				lease, err := lc.create(context.Background(), foreign.spec())
				if err != nil {
					t.Fatal(err)
				}
				e := newElector(t, cfg, "a", Options{})
				a := startLeader(t, e)

				// The foreign holder renews every 5 s for a minute.
				stop := now
				if tc.holder != "" {
					for range 12 {
						time.Sleep(5 * time.Second)
						synctest.Wait()
						if isClosed(a.started) {
							t.Fatalf("acquired a lease held by %q", tc.holder)
						}
						if e.Leader() != tc.holder {
							t.Errorf("Leader = %q, want %q", e.Leader(), tc.holder)
						}
						foreign.renewTime = time.Now().Add(-tc.renewAge)
						if lease, err = lc.update(context.Background(), lease, foreign.spec()); err != nil {
							t.Fatal(err)
						}
					}
					stop = time.Now()
				}
				<-a.started
				started, _ := a.times()
				if d := started.Sub(stop); d < tc.min || d > tc.max {
					t.Errorf("acquired %v after the last foreign renewal, want within [%v, %v]", d, tc.min, tc.max)
				}
				_, r := getLease(t, lc)
				if r.holder != "a" || r.transitions != 5 {
					t.Errorf("lease = %+v, want holder a, transitions 5", r)
				}
				a.cancel()
				if err := a.wait(); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

func TestRunBeforeAcquireAndMisuse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(t)
		cfg, _ := inProcess(srv)
		a := startLeader(t, newElector(t, cfg, "a", Options{}))
		<-a.started
		eb := newElector(t, cfg, "b", Options{})
		b := startLeader(t, eb)
		synctest.Wait()

		// A second Run of the same elector is refused, and so is nil.
		if err := eb.Run(context.Background(), func(context.Context) {}); err == nil {
			t.Error("a concurrent second Run was accepted")
		}
		if err := eb.Run(context.Background(), nil); err == nil {
			t.Error("Run with a nil onStarted was accepted")
		}
		// Cancelled before acquiring: Run returns nil, onStarted never ran.
		b.cancel()
		if err := b.wait(); err != nil {
			t.Errorf("b: Run = %v", err)
		}
		if isClosed(b.started) {
			t.Error("b's onStarted ran")
		}
		a.cancel()
		if err := a.wait(); err != nil {
			t.Fatal(err)
		}
		// Run again after it returned: the released lease is acquired again,
		// a transition since it had been released.
		a2 := startLeader(t, a.e)
		<-a2.started
		if st := a.e.Status(); st.Acquisitions != 2 || st.Transitions != 1 {
			t.Errorf("Status = %+v", st)
		}
		a2.cancel()
		if err := a2.wait(); err != nil {
			t.Fatal(err)
		}
	})
}

// skewedClock is the real clock (the bubble's) shifted by a constant.
type skewedClock struct{ by time.Duration }

func (c skewedClock) Now() time.Time { return time.Now().Add(c.by) }
func (c skewedClock) AfterFunc(d time.Duration, f func()) Timer {
	return time.AfterFunc(d, f)
}

// Expiry is judged on each candidate's own clock, from when it saw the Lease
// change: a candidate whose wall clock is an hour off (so every renewTime
// looks an hour old, or an hour in the future) waits exactly as one in step.
func TestClockSkew(t *testing.T) {
	for _, skew := range []time.Duration{time.Hour, -time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(t)
				cfg, _ := inProcess(srv)
				a := startLeader(t, newElector(t, cfg, "a", Options{ReleaseOnCancel: new(false)}))
				<-a.started
				eb := newElector(t, cfg, "b", Options{Clock: skewedClock{skew}})
				b := startLeader(t, eb)
				time.Sleep(time.Minute)
				synctest.Wait()
				if isClosed(b.started) {
					t.Fatal("b took a lease that a renews")
				}
				cancelled := time.Now()
				a.cancel()
				if err := a.wait(); err != nil {
					t.Fatal(err)
				}
				<-b.started
				started, _ := b.times()
				if d := started.Sub(cancelled); d < leaseDuration-retryPeriod || d > leaseDuration+2*maxRetry {
					t.Errorf("b took over %v after a stopped renewing, want within [%v, %v]", d, leaseDuration-retryPeriod, leaseDuration+2*maxRetry)
				}
				if st := eb.Status(); !st.LastRenew.Equal(started.Add(skew)) {
					t.Errorf("LastRenew %v is not on b's clock (%v)", st.LastRenew, started.Add(skew))
				}
			})
		})
	}
}

// A process restarted with the same fixed identity (a StatefulSet pod's
// name, say) finds itself in the Lease and resumes at once, keeping
// acquireTime and the transition count.
func TestSameIdentityResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(t)
		cfg, _ := inProcess(srv)
		lc, _ := newLeaseClient(cfg, "default", "kloop-election")
		first := startLeader(t, newElector(t, cfg, "pod-0", Options{ReleaseOnCancel: new(false)}))
		<-first.started
		_, before := getLease(t, lc)
		time.Sleep(5 * time.Second)
		first.cancel()
		if err := first.wait(); err != nil {
			t.Fatal(err)
		}
		restarted := time.Now()
		second := startLeader(t, newElector(t, cfg, "pod-0", Options{}))
		<-second.started
		if started, _ := second.times(); !started.Equal(restarted) {
			t.Errorf("resumed after %v, want at once", started.Sub(restarted))
		}
		if _, r := getLease(t, lc); !r.acquireTime.Equal(before.acquireTime) || r.transitions != 0 || !r.renewTime.Equal(restarted) {
			t.Errorf("lease = %+v, want acquireTime %v kept", r, before.acquireTime)
		}
	})
}

// Run with a context that is already cancelled writes nothing.
func TestRunCancelledContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(t)
		cfg, faults := inProcess(srv)
		e := newElector(t, cfg, "a", Options{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		faults.setBefore(func(req *http.Request) {
			if req.Method != http.MethodGet {
				t.Errorf("sent %s %s", req.Method, req.URL.Path)
			}
		})
		if err := e.Run(ctx, func(context.Context) { t.Error("onStarted called") }); err != nil {
			t.Errorf("Run = %v", err)
		}
	})
}

// lostResponse applies a Lease write and then loses its response: the
// request waits until its context is done, as when Run is cancelled while
// the write is in flight.
type lostResponse struct {
	next    http.RoundTripper
	written chan struct{} // closed once a write has been applied
	once    bool
}

func (l *lostResponse) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet || l.once {
		return l.next.RoundTrip(req)
	}
	l.once = true
	resp, err := l.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	_ = resp.Body.Close()
	close(l.written)
	<-req.Context().Done()
	return nil, req.Context().Err()
}

// When Run is cancelled while its write that acquires the lease is in
// flight, the write may have been applied: with ReleaseOnCancel Run
// releases the lease if it turns out to hold it, so that another candidate
// need not wait for it to expire. Without ReleaseOnCancel it is left alone.
func TestCancelDuringAcquiringWrite(t *testing.T) {
	for _, tc := range []struct {
		name       string
		release    bool
		wantHolder string
	}{
		{"released", true, ""},
		{"kept", false, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(t)
				cfg, _ := inProcess(srv)
				lc, err := newLeaseClient(cfg, "default", "kloop-election")
				if err != nil {
					t.Fatal(err)
				}
				lr := &lostResponse{next: cfg.Transport, written: make(chan struct{})}
				cfg.Transport = lr
				e := newElector(t, cfg, "a", Options{ReleaseOnCancel: new(tc.release)})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- e.Run(ctx, func(context.Context) { t.Error("onStarted called") }) }()
				<-lr.written
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Run = %v, want nil", err)
				}
				if _, r := getLease(t, lc); r.holder != tc.wantHolder {
					t.Errorf("holder after the cancelled acquisition = %q, want %q", r.holder, tc.wantHolder)
				}
				if e.IsLeader() {
					t.Error("IsLeader after Run returned")
				}
			})
		})
	}
}
