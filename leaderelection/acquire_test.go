package leaderelection

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// Another candidate's write lands between this candidate's read and its
// write: the write is refused with 409 (AlreadyExists for a create, Conflict
// for an update), the candidate does not lead, and it respects the winner.
func TestAcquireLosesRace(t *testing.T) {
	for _, tc := range []struct {
		name string
		// existing lease before the race (nil: none)
		existing *record
		method   string // the request the other writer overtakes
	}{
		{"create", nil, http.MethodPost},
		{"update of a released lease", &record{leaseDurationSeconds: 1, transitions: 3}, http.MethodPut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(t)
				cfg, faults := inProcess(srv)
				other, _ := inProcess(srv)
				lc, _ := newLeaseClient(other, "default", "kloop-election")
				if tc.existing != nil {
					if _, err := lc.create(context.Background(), tc.existing.spec()); err != nil {
						t.Fatal(err)
					}
				}
				var once sync.Once
				winner := record{holder: "winner", leaseDurationSeconds: 15}
				faults.setBefore(func(req *http.Request) {
					if req.Method != tc.method {
						return
					}
					once.Do(func() {
						now := time.Now()
						winner.acquireTime, winner.renewTime = now, now
						var err error
						if tc.existing == nil {
							_, err = lc.create(context.Background(), winner.spec())
						} else {
							var l *coordinationv1.Lease
							if l, err = lc.get(context.Background()); err == nil {
								winner.transitions = tc.existing.transitions + 1
								_, err = lc.update(context.Background(), l, winner.spec())
							}
						}
						if err != nil {
							t.Errorf("the other writer: %v", err)
						}
					})
				})
				e := newElector(t, cfg, "a", Options{})
				start := time.Now()
				a := startLeader(t, e)
				time.Sleep(leaseDuration - time.Second) // within the winner's lease
				synctest.Wait()
				if isClosed(a.started) || e.Leader() != "winner" {
					t.Fatalf("started=%t Leader=%q, want the winner respected", isClosed(a.started), e.Leader())
				}
				// The winner never renews: a takes over once its lease expired,
				// as a observed it (at most a jittered retry after the race).
				<-a.started
				started, _ := a.times()
				if d := started.Sub(start); d < leaseDuration || d > leaseDuration+2*maxRetry {
					t.Errorf("acquired %v after the race, want within [%v, %v]", d, leaseDuration, leaseDuration+2*maxRetry)
				}
				if _, r := getLease(t, lc); r.holder != "a" || r.transitions != winner.transitions+1 {
					t.Errorf("lease = %+v, want holder a, transitions %d", r, winner.transitions+1)
				}
			})
		})
	}
}

// Candidates started at the same instant on an absent lease: exactly one
// leads, whatever the interleaving of their requests.
func TestSimultaneousCandidates(t *testing.T) {
	for i := range 10 {
		synctest.Test(t, func(t *testing.T) {
			srv := newServer(t)
			cfg, _ := inProcess(srv)
			ids := []string{"a", "b", "c"}
			var ls []*leader
			for _, id := range ids {
				ls = append(ls, startLeader(t, newElector(t, cfg, id, Options{})))
			}
			time.Sleep(time.Minute)
			synctest.Wait()
			leaders := 0
			var holder string
			for j, l := range ls {
				if isClosed(l.started) {
					leaders++
					holder = ids[j]
				}
			}
			if leaders != 1 {
				t.Fatalf("run %d: %d leaders", i, leaders)
			}
			for _, l := range ls {
				if got := l.e.Leader(); got != holder {
					t.Errorf("run %d: %s sees leader %q, want %q", i, l.e.Identity(), got, holder)
				}
			}
			lc, _ := newLeaseClient(cfg, "default", "kloop-election")
			if _, r := getLease(t, lc); r.holder != holder || r.transitions != 0 {
				t.Errorf("run %d: lease = %+v", i, r)
			}
		})
	}
}

// A waiting candidate retries every RetryPeriod stretched by a random factor
// in [1, 1+JitterFactor).
func TestAcquireJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(t)
		cfg, _ := inProcess(srv)
		bcfg, faults := inProcess(srv)
		a := startLeader(t, newElector(t, cfg, "a", Options{}))
		<-a.started
		var mu sync.Mutex // guards reads
		var reads []time.Time
		faults.setBefore(func(req *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			if req.Method != http.MethodGet {
				t.Errorf("a waiting candidate sent %s", req.Method)
			}
			reads = append(reads, time.Now())
		})
		startLeader(t, newElector(t, bcfg, "b", Options{}))
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(reads) < 50 {
			t.Fatalf("%d attempts in 5 minutes", len(reads))
		}
		distinct := map[time.Duration]bool{}
		for i := 1; i < len(reads); i++ {
			d := reads[i].Sub(reads[i-1])
			if d < retryPeriod || d >= maxRetry {
				t.Errorf("attempt %d came %v after the previous, want within [%v, %v)", i, d, retryPeriod, maxRetry)
			}
			distinct[d] = true
		}
		if len(distinct) < len(reads)/2 {
			t.Errorf("only %d distinct intervals among %d: no jitter", len(distinct), len(reads)-1)
		}
	})
}

// The elector speaks JSON or protobuf, as the caller's config asks.
func TestContentTypes(t *testing.T) {
	for _, ct := range []string{"", "application/json", "application/vnd.kubernetes.protobuf"} {
		t.Run(ct, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(t)
				cfg, faults := inProcess(srv)
				cfg.ContentType = ct
				var mu sync.Mutex // guards seen
				seen := map[string]bool{}
				faults.setBefore(func(req *http.Request) {
					mu.Lock()
					defer mu.Unlock()
					if c := req.Header.Get("Content-Type"); c != "" {
						seen[c] = true
					}
				})
				e := newElector(t, cfg, "a", Options{})
				a := startLeader(t, e)
				<-a.started
				time.Sleep(2*retryPeriod + time.Second)
				a.cancel()
				if err := a.wait(); err != nil {
					t.Fatal(err)
				}
				if st := e.Status(); st.Acquisitions != 1 || !st.LastRenew.Equal(time.Now().Add(-time.Second)) || st.Holder != "" {
					t.Errorf("Status = %+v", st)
				}
				want := ct
				if want == "" {
					want = "application/json"
				}
				mu.Lock()
				defer mu.Unlock()
				if len(seen) != 1 || !seen[want] {
					t.Errorf("request bodies sent as %v, want %s", seen, want)
				}
			})
		})
	}
}
