package controller

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"kloop.dev/kloop/reconcile"
)

// observed keeps copies of what an Observer is told.
type observed struct {
	mu  sync.Mutex // guards got
	got []Observation
}

func (o *observed) Observe(ctrl string, ob *Observation) {
	if ctrl != "widget" {
		panic("observation of controller " + ctrl)
	}
	c := *ob
	c.Triggers = nil // the worker's: valid only during the call
	if ob.Triggers != nil && ob.Triggers.Len() > 0 {
		c.Message = ob.Triggers.At(ob.Triggers.Len() - 1).Type.String()
	}
	o.mu.Lock()
	o.got = append(o.got, c)
	o.mu.Unlock()
}

// TestObserver: the Observer is told of each reconcile, with its outcome by
// the Result rules, its triggers and its duration.
func TestObserver(t *testing.T) {
	tests := []struct {
		name    string
		res     reconcile.Result
		err     error
		outcome Outcome
	}{
		{"success", reconcile.Result{}, nil, OutcomeSuccess},
		{"requeueAfter", reconcile.Result{RequeueAfter: time.Hour}, nil, OutcomeRequeueAfter},
		{"error", reconcile.Result{}, errors.New("boom"), OutcomeError},
		{"terminal", reconcile.Result{}, reconcile.Terminal(errors.New("bad")), OutcomeTerminal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				obs := &observed{}
				r := &recorder{do: func(context.Context, reconcile.Request, int) (reconcile.Result, error) {
					time.Sleep(3 * time.Millisecond)
					return tt.res, tt.err
				}}
				tc := newTest(t, r, Options{Observer: obs})
				cancel, errc := run(tc.c)
				tc.send("a")
				synctest.Wait()
				cancel()
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
				obs.mu.Lock()
				defer obs.mu.Unlock()
				if len(obs.got) == 0 {
					t.Fatal("no observation")
				}
				o := obs.got[0]
				if o.Type != Reconciled || o.Request.Name != "a" || o.Outcome != tt.outcome || o.Duration != 3*time.Millisecond ||
					o.ReconcileID == "" || o.Message != "Generic" || (o.Err == nil) != (tt.err == nil) {
					t.Errorf("observation %+v", o)
				}
				if tt.outcome == OutcomeRequeueAfter && o.RequeueAfter != time.Hour {
					t.Errorf("RequeueAfter %v", o.RequeueAfter)
				}
			})
		})
	}
}

func TestObservationTypeString(t *testing.T) {
	for typ, want := range map[ObservationType]string{Reconciled: "Reconciled", StaleSkip: "StaleSkip",
		StaleTimeout: "StaleTimeout", HotLoopReported: "HotLoop", FightingWritersReported: "FightingWriters", 0: "Unknown", 99: "Unknown"} {
		if got := typ.String(); got != want {
			t.Errorf("%d: %q, want %q", typ, got, want)
		}
	}
}
