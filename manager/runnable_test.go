package manager

import (
	"context"
	"testing"

	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/reconcile"
)

// A controller with NeedLeaderElection false runs on a standby replica too;
// one that keeps the default does not; nor does a runnable that does not say.
func TestControllerNeedLeaderElectionOption(t *testing.T) {
	every, err := controller.New("every-replica", reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}), controller.Options{NeedLeaderElection: new(false)})
	if err != nil {
		t.Fatal(err)
	}
	leaderOnly, err := controller.New("leader-only", reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}), controller.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if needsLeader(every) || !needsLeader(leaderOnly) {
		t.Fatalf("needsLeader: every-replica %v, leader-only %v", needsLeader(every), needsLeader(leaderOnly))
	}
	// As in controller-runtime, a runnable that does not say needs leadership.
	if !needsLeader(RunnableFunc(func(context.Context) error { return nil })) {
		t.Fatal("a plain runnable runs on every replica: it must need leadership")
	}
	if needsLeader(everyReplica(func(context.Context) error { return nil })) {
		t.Fatal("a runnable whose NeedLeaderElection is false needs leadership")
	}
}

// everyReplica is a Runnable that needs no leadership.
type everyReplica func(ctx context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }
func (everyReplica) NeedLeaderElection() bool          { return false }
