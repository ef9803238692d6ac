package controller

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/reconcile"
)

// slowStopSource enqueues keys at start and, once its context is cancelled,
// takes stopDelay to return (as an informer source that removes its handler).
type slowStopSource struct {
	keys      []string
	stopDelay time.Duration
}

func (s *slowStopSource) Start(ctx context.Context, q, _ handler.Enqueuer) error {
	for _, k := range s.keys {
		q.Add(req(k))
	}
	<-ctx.Done()
	time.Sleep(s.stopDelay)
	return nil
}

func (s *slowStopSource) HasSynced() bool { return true }

// Once Start's context is cancelled, no reconcile starts: keys still waiting
// are dropped, however long the sources take to stop, and only the reconciles
// in flight at the cancellation finish.
func TestNoReconcileStartsAfterCancel(t *testing.T) {
	tests := []struct {
		name      string
		workers   int
		stopDelay time.Duration
		keys      []string
		want      []string // the reconciles in flight at the cancellation
	}{
		{"one worker, source stops at once", 1, 0, []string{"a", "b", "c"}, []string{"ns/a"}},
		{"one worker, source slow to stop", 1, 5 * time.Second, []string{"a", "b", "c"}, []string{"ns/a"}},
		{"two workers, source slow to stop", 2, 5 * time.Second, []string{"a", "b", "c", "d"}, []string{"ns/a", "ns/b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				var mu sync.Mutex      // guards cancelled
				var cancelled []string // reconciles that began with a cancelled context
				r := &recorder{do: func(ctx context.Context, req reconcile.Request, _ int) (reconcile.Result, error) {
					if ctx.Err() != nil {
						mu.Lock()
						cancelled = append(cancelled, req.String())
						mu.Unlock()
					}
					<-release
					return reconcile.Result{}, nil
				}}
				c, err := New("widget", r, Options{MaxConcurrentReconciles: tt.workers})
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Watch(&slowStopSource{keys: tt.keys, stopDelay: tt.stopDelay}); err != nil {
					t.Fatal(err)
				}
				cancel, errc := run(c)
				synctest.Wait() // the first keys are in flight
				cancel()
				synctest.Wait()
				close(release) // the reconciles in flight return; the source is still stopping
				synctest.Wait()
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
				got := r.got()
				slices.Sort(got)
				if !slices.Equal(got, tt.want) {
					t.Errorf("reconciles %q, want only those in flight at the cancellation %q", got, tt.want)
				}
				if len(cancelled) > 0 {
					t.Errorf("reconciles started after the cancellation: %q", cancelled)
				}
			})
		})
	}
}
