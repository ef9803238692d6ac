package manager

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"kloop.dev/kloop/controller"
)

// Runnable is anything the manager runs: Start blocks until ctx is
// cancelled and then returns nil (or ctx's error, which is taken as nil), or
// returns an error early when it fails (the manager then stops everything
// and Start returns that error). A Runnable that returns nil early has
// simply finished.
type Runnable interface {
	Start(ctx context.Context) error
}

// RunnableFunc adapts a function to a Runnable.
type RunnableFunc func(ctx context.Context) error

// Start calls f.
func (f RunnableFunc) Start(ctx context.Context) error { return f(ctx) }

// LeaderElectionRunnable is implemented by a Runnable that says whether it
// needs leadership; *controller.Controller implements it (true unless its
// Options.NeedLeaderElection is false). As in controller-runtime, a Runnable
// without it needs leadership: one that must run on every replica (a cache
// warmer, a server) implements it and answers false.
type LeaderElectionRunnable interface {
	NeedLeaderElection() bool
}

// needsLeader reports whether r runs only on the leader: unless it says
// otherwise, it does (a runnable that writes must not run on standbys).
func needsLeader(r Runnable) bool {
	le, ok := r.(LeaderElectionRunnable)
	return !ok || le.NeedLeaderElection()
}

// errGroupStopped is returned by add once the group has stopped.
var errGroupStopped = errors.New("manager: stopping: runnable not started")

// group runs a set of runnables with one context: those added before start
// begin at start, those added later begin at once.
type group struct {
	name string
	fail func(error) // reports a runnable's error to the manager

	mu sync.Mutex // guards ctx, pending, stopped, and the wg.Add calls
	// ctx is nil until start; runnables start with it.
	ctx     context.Context
	pending []Runnable
	// stopped is set before wg.Wait: no runnable starts after it.
	stopped bool
	wg      sync.WaitGroup
}

func newGroup(name string, fail func(error)) *group {
	return &group{name: name, fail: fail}
}

// add starts r now if the group runs, or at start.
func (g *group) add(r Runnable) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return errGroupStopped
	}
	if g.ctx == nil {
		g.pending = append(g.pending, r)
		return nil
	}
	g.launchLocked(r)
	return nil
}

// start runs every pending runnable with ctx. It does nothing after stop.
func (g *group) start(ctx context.Context) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped || g.ctx != nil {
		return
	}
	g.ctx = ctx
	for _, r := range g.pending {
		g.launchLocked(r)
	}
	g.pending = nil
}

func (g *group) launchLocked(r Runnable) {
	g.wg.Add(1)
	ctx := g.ctx
	go func() {
		defer g.wg.Done()
		if err := r.Start(ctx); err != nil {
			if ctx.Err() != nil && errors.Is(err, context.Canceled) {
				// It reports its own cancellation (by a shutdown or a lost
				// election): it has stopped, it has not failed.
				return
			}
			g.fail(fmt.Errorf("manager: %s runnable %s: %w", g.name, describe(r), err))
		}
	}()
}

// stop prevents further starts; the caller cancels the group's context.
func (g *group) stop() {
	g.mu.Lock()
	g.stopped = true
	g.pending = nil
	g.mu.Unlock()
}

// wait returns a channel closed when every started runnable has returned.
// Call it after stop.
func (g *group) wait() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		g.wg.Wait()
		close(done)
	}()
	return done
}

// describe names a runnable in errors.
func describe(r Runnable) string {
	switch v := r.(type) {
	case *controller.Controller:
		return fmt.Sprintf("controller %q", v.Name())
	case fmt.Stringer:
		return v.String()
	default:
		return fmt.Sprintf("%T", r)
	}
}
