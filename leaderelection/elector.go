package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
)

// ErrLeadershipLost is returned (wrapped) by Run when the elector led and
// then lost the lease: a renewal did not succeed within RenewDeadline, or
// another candidate was seen holding the Lease. It is also the cause
// (context.Cause) of the cancellation of onStarted's context. The process
// should exit: its leader-only work has stopped and may have been cut short.
var ErrLeadershipLost = errors.New("leaderelection: leadership lost")

// Status is a snapshot of an Elector's state, for metrics and health checks.
type Status struct {
	// Namespace and Name of the Lease.
	Namespace, Name string
	// Identity of this candidate.
	Identity string
	// Leading is true from the acquisition of the lease until leadership is
	// lost or released (leader_election_master_status).
	Leading bool
	// Holder is the Lease's holder as last observed ("" when released or not
	// yet read).
	Holder string
	// Transitions is the Lease's leaseTransitions as last observed.
	Transitions int32
	// LastRenew is the start of this elector's last successful acquisition
	// or renewal; zero before the first.
	LastRenew time.Time
	// Acquisitions counts the times this elector became leader.
	Acquisitions uint64
	// SlowPaths counts renewals that could not use the cached Lease (for
	// example after a 409 Conflict) and read it again, as client-go's
	// leader_election_slowpath_total.
	SlowPaths uint64
}

// Elector takes part in one leader election on a coordination.k8s.io/v1
// Lease. Create it with New and call Run.
type Elector struct {
	opts   Options
	client *leaseClient
	log    *slog.Logger

	mu sync.Mutex // guards the fields below
	// running is true while Run runs; a second concurrent Run is refused.
	running bool
	// lease is the Lease as last read or written by this elector (nil
	// before the first read); its resourceVersion makes the next update
	// optimistic.
	lease *coordinationv1.Lease
	// observed is the record of lease, and observedTime the time (on
	// opts.Clock) at which this elector first saw it: the lease expires
	// for this elector at observedTime + observed.leaseDurationSeconds.
	observed     record
	observedTime time.Time
	// leading is true between acquisition and loss or release.
	leading      bool
	lastRenew    time.Time
	acquisitions uint64
	slowPaths    uint64
}

// New returns an Elector for the Lease opts.Namespace/opts.Name that talks to
// the API server of cfg. It starts nothing; see Run.
func New(cfg *rest.Config, opts Options) (*Elector, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	client, err := newLeaseClient(cfg, opts.Namespace, opts.Name)
	if err != nil {
		return nil, err
	}
	e := &Elector{
		opts:   opts,
		client: client,
		log:    opts.Logger.With("lease", opts.Namespace+"/"+opts.Name, "identity", opts.Identity),
	}
	if opts.Metrics != nil {
		if err := opts.Metrics.Register(opts.Name, e.readStatus); err != nil {
			return nil, fmt.Errorf("leaderelection: registering metrics: %w", err)
		}
	}
	return e, nil
}

// Identity returns this candidate's identity.
func (e *Elector) Identity() string { return e.opts.Identity }

// IsLeader reports whether this elector leads now: it has acquired the
// lease and has neither lost nor released it.
func (e *Elector) IsLeader() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading
}

// Leader returns the Lease's holder as last observed by this elector, ""
// when the lease was released or has not been read yet.
func (e *Elector) Leader() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.observed.holder
}

// Status returns a snapshot of the elector's state.
func (e *Elector) Status() Status {
	var s Status
	e.readStatus(&s)
	return s
}

func (e *Elector) readStatus(s *Status) {
	e.mu.Lock()
	defer e.mu.Unlock()
	*s = Status{
		Namespace:    e.opts.Namespace,
		Name:         e.opts.Name,
		Identity:     e.opts.Identity,
		Leading:      e.leading,
		Holder:       e.observed.holder,
		Transitions:  e.observed.transitions,
		LastRenew:    e.lastRenew,
		Acquisitions: e.acquisitions,
		SlowPaths:    e.slowPaths,
	}
}

// Run takes part in the election until ctx is cancelled or leadership is
// lost. It blocks until this elector acquires the lease, then calls
// onStarted in a new goroutine with a context that is cancelled when
// leadership ends, and renews the lease every RetryPeriod meanwhile.
//
// When leadership ends, Run cancels onStarted's context and waits for
// onStarted to return before it returns (and before it releases the lease),
// so onStarted must return soon after its context is done. Then:
//   - ctx was cancelled: with ReleaseOnCancel the lease is released (empty
//     holder, leaseDurationSeconds 1) and Run returns nil, or an error if the
//     release failed (the lease then expires after LeaseDuration); without
//     ReleaseOnCancel Run returns nil. If ctx is cancelled before the lease
//     was acquired, onStarted is not called and Run returns nil (with
//     ReleaseOnCancel, after releasing the lease if a write cut off by the
//     cancellation did acquire it).
//   - leadership was lost: Run returns an error wrapping ErrLeadershipLost
//     and does not touch the Lease.
//
// An Elector runs once at a time; Run may be called again after it returned.
func (e *Elector) Run(ctx context.Context, onStarted func(ctx context.Context)) error {
	if onStarted == nil {
		return errors.New("leaderelection: Run needs an onStarted function")
	}
	e.mu.Lock()
	if e.running {
		e.mu.Unlock()
		return errors.New("leaderelection: Run is already running")
	}
	e.running = true
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.running = false
		e.leading = false
		e.mu.Unlock()
	}()

	e.log.Info("attempting to acquire leader lease")
	acquiredAt, ok, cut := e.acquire(ctx)
	if !ok {
		if cut && *e.opts.ReleaseOnCancel {
			// The cancellation cut off a write that may have acquired the
			// lease: release it if it did (release reads the Lease first
			// and clears it only if this elector holds it).
			if err := e.release(context.WithoutCancel(ctx)); err != nil {
				e.log.Warn("failed to release a lease possibly acquired as Run was cancelled", "err", err)
			}
		}
		return nil
	}
	if ctx.Err() != nil {
		// Acquired as Run was being cancelled: lead no work, release.
		return e.stop(ctx)
	}
	e.log.Info("acquired leader lease")

	leaderCtx, cancelLeader := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		onStarted(leaderCtx)
	}()
	lost := e.renew(ctx, acquiredAt)
	if lost != nil {
		e.mu.Lock()
		e.leading = false
		e.mu.Unlock()
		e.log.Info("lost leader lease", "err", lost)
		cancelLeader(lost)
		<-done
		return lost
	}
	// Still the holder until the release: IsLeader stays true while
	// onStarted winds down.
	cancelLeader(context.Cause(ctx))
	<-done
	return e.stop(ctx)
}

// stop ends leadership after the context of Run was cancelled: it releases
// the lease with ReleaseOnCancel.
func (e *Elector) stop(ctx context.Context) error {
	e.mu.Lock()
	e.leading = false
	e.mu.Unlock()
	if !*e.opts.ReleaseOnCancel {
		e.log.Info("stopped leading; the lease is kept until it expires")
		return nil
	}
	if err := e.release(context.WithoutCancel(ctx)); err != nil {
		e.log.Warn("failed to release leader lease; it expires after the lease duration", "err", err)
		return err
	}
	e.log.Info("released leader lease")
	return nil
}

// acquire tries to acquire the lease every RetryPeriod (jittered) until it
// succeeds or ctx is cancelled. It returns the start of the successful
// attempt and true; on cancellation, its third result reports that the last
// attempt was a write cut off by it, which the API server may have applied.
func (e *Elector) acquire(ctx context.Context) (time.Time, bool, bool) {
	for {
		start := e.opts.Clock.Now()
		attemptCtx, cancel := context.WithTimeout(ctx, e.opts.RenewDeadline)
		ok, err := e.tryAcquireOrRenew(attemptCtx, false)
		cancel()
		if ok {
			e.mu.Lock()
			e.leading = true
			e.lastRenew = start
			e.acquisitions++
			e.mu.Unlock()
			return start, true, false
		}
		if ctx.Err() != nil {
			return time.Time{}, false, errors.Is(err, errCutWrite)
		}
		switch {
		case err == nil || ctx.Err() != nil:
		case errors.Is(err, errHeld):
			e.log.Debug("leader lease is held", "err", err)
		default:
			e.log.Warn("failed to acquire leader lease", "err", err)
		}
		jittered := e.opts.RetryPeriod + time.Duration(rand.Float64()*JitterFactor*float64(e.opts.RetryPeriod))
		if !e.sleep(ctx, jittered) {
			return time.Time{}, false, false
		}
	}
}

// renew renews the lease every RetryPeriod while ctx lasts. It returns nil
// when ctx is cancelled, and an error wrapping ErrLeadershipLost when no
// renewal succeeded within RenewDeadline of the last successful one, or
// another holder was observed.
func (e *Elector) renew(ctx context.Context, lastRenew time.Time) error {
	for {
		if !e.sleep(ctx, e.opts.RetryPeriod) {
			return nil
		}
		deadline := lastRenew.Add(e.opts.RenewDeadline)
		var lastErr error
		for {
			now := e.opts.Clock.Now()
			remaining := deadline.Sub(now)
			if remaining <= 0 {
				if lastErr == nil {
					lastErr = errors.New("no attempt completed")
				}
				return fmt.Errorf("%w: %s/%s: not renewed within the renew deadline %v: %w",
					ErrLeadershipLost, e.opts.Namespace, e.opts.Name, e.opts.RenewDeadline, lastErr)
			}
			attemptCtx, cancel := context.WithTimeout(ctx, remaining)
			ok, err := e.tryAcquireOrRenew(attemptCtx, true)
			cancel()
			if ctx.Err() != nil {
				return nil
			}
			if ok {
				lastRenew = now
				e.mu.Lock()
				e.lastRenew = now
				e.mu.Unlock()
				break
			}
			var taken *takenError
			if errors.As(err, &taken) {
				return fmt.Errorf("%w: %s/%s: %w", ErrLeadershipLost, e.opts.Namespace, e.opts.Name, err)
			}
			lastErr = err
			e.log.Warn("failed to renew leader lease", "err", err, "deadline_in", deadline.Sub(e.opts.Clock.Now()))
			wait := min(e.opts.RetryPeriod, deadline.Sub(e.opts.Clock.Now()))
			if wait > 0 && !e.sleep(ctx, wait) {
				return nil
			}
		}
	}
}

// takenError says that, while this elector led, the Lease was found with
// another holder (or none).
type takenError struct {
	holder string
}

func (t *takenError) Error() string {
	if t.holder == "" {
		return "the lease was released by another writer"
	}
	return fmt.Sprintf("the lease is held by %q", t.holder)
}

// errCutWrite marks the error of a write to the Lease whose request was
// cut off by its context: the API server may have applied it.
var errCutWrite = errors.New("the write was cut off; the API server may have applied it")

// errHeld is returned by tryAcquireOrRenew when another candidate holds a
// valid lease.
var errHeld = errors.New("the lease is held by another candidate and has not expired")

// tryAcquireOrRenew makes one attempt to acquire or renew the lease, with
// client-go's rules. It reports whether this elector holds the lease after
// the attempt; if not, err says why. When leading is true and the Lease shows
// another holder (or none), err is a *takenError.
func (e *Elector) tryAcquireOrRenew(ctx context.Context, leading bool) (bool, error) {
	now := e.opts.Clock.Now()
	want := record{
		holder:               e.opts.Identity,
		leaseDurationSeconds: int32(e.opts.LeaseDuration / time.Second),
		acquireTime:          now,
		renewTime:            now,
	}

	// Fast path: the leader updates the Lease it wrote last, without reading
	// it first. A conflict means someone else wrote it: read it again.
	e.mu.Lock()
	cached, obs := e.lease, e.observed
	valid := e.observedTime.Add(time.Duration(obs.leaseDurationSeconds) * time.Second).After(now)
	e.mu.Unlock()
	if leading && cached != nil && obs.holder == e.opts.Identity && valid {
		want.acquireTime, want.transitions = obs.acquireTime, obs.transitions
		lease, err := e.client.update(ctx, cached, want.spec())
		if err == nil {
			e.observe(lease, true)
			return true, nil
		}
		if ctx.Err() != nil {
			return false, fmt.Errorf("renewing lease: %w", err)
		}
		e.log.Debug("failed to update lease optimistically, reading it again", "err", err)
		e.mu.Lock()
		e.slowPaths++
		e.mu.Unlock()
	}

	lease, err := e.client.get(ctx)
	if apierrors.IsNotFound(err) {
		lease, err = e.client.create(ctx, want.spec())
		if err != nil {
			return false, writeError(ctx, "creating lease", err)
		}
		e.observe(lease, true)
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading lease: %w", err)
	}
	cur := e.observe(lease, false)
	if cur.holder != e.opts.Identity {
		if leading {
			// Another writer took the lease or emptied it: either way this
			// elector no longer leads, and must not quietly take it back.
			return false, &takenError{holder: cur.holder}
		}
		e.mu.Lock()
		valid = e.observedTime.Add(time.Duration(cur.leaseDurationSeconds) * time.Second).After(now)
		e.mu.Unlock()
		if cur.holder != "" && valid {
			return false, fmt.Errorf("%w: %q", errHeld, cur.holder)
		}
		want.transitions = cur.transitions + 1
	} else {
		want.acquireTime, want.transitions = cur.acquireTime, cur.transitions
	}
	lease, err = e.client.update(ctx, lease, want.spec())
	if err != nil {
		return false, writeError(ctx, "updating lease", err)
	}
	e.observe(lease, true)
	return true, nil
}

// writeError wraps the error of a write; it marks it with errCutWrite when
// ctx ended during the write.
func writeError(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w: %w", what, errCutWrite, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// observe records lease as the last seen Lease and returns its record. The
// observed time restarts when the record changed, or always when own (this
// elector has just written it).
func (e *Elector) observe(lease *coordinationv1.Lease, own bool) record {
	r := recordOf(&lease.Spec)
	now := e.opts.Clock.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lease = lease
	if own || e.observedTime.IsZero() || !r.equal(e.observed) {
		if r.holder != e.observed.holder {
			e.log.Debug("new lease holder observed", "holder", r.holder)
		}
		e.observed = r
		e.observedTime = now
	}
	return r
}

// release writes an empty holder with leaseDurationSeconds 1 onto the Lease
// if this elector still holds it, retrying on conflicts, for at most
// RenewDeadline.
func (e *Elector) release(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, e.opts.RenewDeadline)
	defer cancel()
	for {
		lease, err := e.client.get(ctx)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("leaderelection: releasing %s/%s: reading lease: %w", e.opts.Namespace, e.opts.Name, err)
		}
		cur := e.observe(lease, false)
		if cur.holder != e.opts.Identity {
			return nil // someone else holds it (or nobody): nothing to release
		}
		now := e.opts.Clock.Now()
		rel := record{leaseDurationSeconds: 1, acquireTime: now, renewTime: now, transitions: cur.transitions}
		lease, err = e.client.update(ctx, lease, rel.spec())
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("leaderelection: releasing %s/%s: %w", e.opts.Namespace, e.opts.Name, err)
		}
		e.observe(lease, true)
		return nil
	}
}

// sleep waits d on the clock; it returns false if ctx is cancelled first.
func (e *Elector) sleep(ctx context.Context, d time.Duration) bool {
	fired := make(chan struct{})
	t := e.opts.Clock.AfterFunc(d, func() { close(fired) })
	select {
	case <-fired:
		return true
	case <-ctx.Done():
		t.Stop()
		return false
	}
}
