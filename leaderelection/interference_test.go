package leaderelection

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func deleteLease(t *testing.T, lc *leaseClient) {
	t.Helper()
	if err := lc.rest.Delete().Namespace(lc.namespace).Resource("leases").Name(lc.name).Do(context.Background()).Error(); err != nil {
		t.Fatalf("delete lease: %v", err)
	}
}

// What other writers do to the Lease while a leader holds it.
func TestLeaderUnderInterference(t *testing.T) {
	for _, tc := range []struct {
		name string
		// do interferes, between two renewals.
		do func(t *testing.T, lc *leaseClient)
		// lost: Run must return ErrLeadershipLost with this text.
		lost string
		// else the leader keeps leading and the lease looks like this
		holder      string
		transitions int32
	}{
		{
			name: "lease emptied",
			do: func(t *testing.T, lc *leaseClient) {
				l, r := getLease(t, lc)
				r.holder = ""
				if _, err := lc.update(context.Background(), l, r.spec()); err != nil {
					t.Fatal(err)
				}
			},
			lost: "the lease was released by another writer",
		},
		{
			name: "lease deleted",
			do:   func(t *testing.T, lc *leaseClient) { deleteLease(t, lc) },
			// The leader creates it again: nobody else can have held it in
			// between without the create failing.
			holder: "a", transitions: 0,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(t)
				cfg, _ := inProcess(srv)
				lc, _ := newLeaseClient(cfg, "default", "kloop-election")
				e := newElector(t, cfg, "a", Options{})
				a := startLeader(t, e)
				<-a.started
				time.Sleep(retryPeriod + time.Second)
				tc.do(t, lc)
				time.Sleep(retryPeriod)
				synctest.Wait()
				if tc.lost != "" {
					err := a.wait()
					if !errors.Is(err, ErrLeadershipLost) || !strings.Contains(err.Error(), tc.lost) {
						t.Fatalf("Run = %v, want ErrLeadershipLost: %s", err, tc.lost)
					}
					return
				}
				if isClosed(a.stopped) || !e.IsLeader() {
					t.Fatal("the leader stopped")
				}
				if _, r := getLease(t, lc); r.holder != tc.holder || r.transitions != tc.transitions || !r.renewTime.Equal(time.Now().Add(-time.Second)) {
					t.Errorf("lease = %+v", r)
				}
			})
		})
	}
}

// The release on cancel: retried on a conflict, skipped when the lease is
// gone or no longer ours, reported when it fails.
func TestRelease(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before the cancel
		prepare func(t *testing.T, lc *leaseClient, faults *faultTransport)
		wantErr string // in Run's error; "" for nil
		// the lease afterwards ("-" when it must not exist)
		holder string
	}{
		{
			name: "conflict retried",
			prepare: func(t *testing.T, lc *leaseClient, faults *faultTransport) {
				var once sync.Once
				faults.setBefore(func(req *http.Request) {
					if req.Method != http.MethodPut {
						return
					}
					once.Do(func() { // a label written between the release's read and write
						l, _ := getLease(t, lc)
						l.Labels = map[string]string{"x": "y"}
						if _, err := lc.update(context.Background(), l, l.Spec); err != nil {
							t.Error(err)
						}
					})
				})
			},
			holder: "",
		},
		{
			name:    "lease deleted",
			prepare: func(t *testing.T, lc *leaseClient, _ *faultTransport) { deleteLease(t, lc) },
			holder:  "-",
		},
		{
			name: "lease taken meanwhile",
			prepare: func(t *testing.T, lc *leaseClient, _ *faultTransport) {
				l, r := getLease(t, lc)
				r.holder = "thief"
				if _, err := lc.update(context.Background(), l, r.spec()); err != nil {
					t.Fatal(err)
				}
			},
			holder: "thief",
		},
		{
			name:    "server fails",
			prepare: func(_ *testing.T, _ *leaseClient, faults *faultTransport) { faults.set(serverError) },
			wantErr: "releasing default/kloop-election: reading lease: injected failure",
			holder:  "a",
		},
		{
			name:    "server hangs",
			prepare: func(_ *testing.T, _ *leaseClient, faults *faultTransport) { faults.set(hang) },
			wantErr: "context deadline exceeded",
			holder:  "a",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(t)
				cfg, faults := inProcess(srv)
				other, _ := inProcess(srv)
				lc, _ := newLeaseClient(other, "default", "kloop-election")
				a := startLeader(t, newElector(t, cfg, "a", Options{}))
				<-a.started
				time.Sleep(retryPeriod / 2)
				tc.prepare(t, lc, faults)
				start := time.Now()
				a.cancel()
				err := a.wait()
				switch {
				case tc.wantErr == "" && err != nil:
					t.Errorf("Run = %v, want nil", err)
				case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.Is(err, ErrLeadershipLost)):
					t.Errorf("Run = %v, want an error with %q", err, tc.wantErr)
				}
				if d := time.Since(start); d > renewDeadline {
					t.Errorf("release took %v, more than the renew deadline", d)
				}
				l, err := lc.get(context.Background())
				switch {
				case tc.holder == "-":
					if err == nil {
						t.Errorf("the release created the lease: %+v", l.Spec)
					}
				case err != nil:
					t.Fatal(err)
				case recordOf(&l.Spec).holder != tc.holder:
					t.Errorf("holder after release = %q, want %q", recordOf(&l.Spec).holder, tc.holder)
				case tc.name == "conflict retried" && (l.Labels["x"] != "y" || *l.Spec.LeaseDurationSeconds != 1):
					t.Errorf("released lease = %+v %v", l.Spec, l.Labels)
				}
			})
		})
	}
}
