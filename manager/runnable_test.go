package manager

import (
	"context"
	"testing"

	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/reconcile"
)

// A controller with NeedLeaderElection false runs on a standby replica too;
// one that keeps the default does not.
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
	if needsLeader(RunnableFunc(func(context.Context) error { return nil })) {
		t.Fatal("a plain runnable needs leadership")
	}
}
