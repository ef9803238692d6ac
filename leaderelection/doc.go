// Package leaderelection elects one leader among the replicas of a
// controller, on a coordination.k8s.io/v1 Lease, with the rules of client-go's
// tools/leaderelection (which kloop does not use: it talks to the API server
// with a k8s.io/client-go/rest client of its own).
//
//	e, err := leaderelection.New(cfg, leaderelection.Options{Namespace: "kloop-system", Name: "widget-controller"})
//	err = e.Run(ctx, func(ctx context.Context) {
//		// leader-only work; return when ctx is done
//	})
//	if errors.Is(err, leaderelection.ErrLeadershipLost) {
//		os.Exit(1)
//	}
//
// # The rules
//
// A candidate acquires the Lease when it does not exist (it creates it), when
// its holderIdentity is empty (released), or when it has expired: a Lease
// expires leaseDurationSeconds after this candidate last saw it change, on
// this candidate's own clock. The renewTime written in the Lease is never
// compared with the local clock, so clock skew between machines does not
// matter; only the rate of the clocks does. Failed attempts are retried every
// RetryPeriod, stretched by a random factor up to 1+JitterFactor.
//
// Every write is an update with the resourceVersion of the Lease it was
// computed from, so that of two candidates that read the same Lease only one
// write succeeds (the other gets 409 Conflict and tries again later). A change
// of holder increments leaseTransitions; acquireTime is the time of the change
// of holder, renewTime the time of the last renewal.
//
// The leader renews every RetryPeriod, first with an optimistic update of the
// Lease it last wrote; when that fails (409 Conflict after another writer
// touched the Lease, or an error) it reads the Lease and, if it still holds
// it, updates it. The leader gives leadership up when:
//   - no renewal succeeded within RenewDeadline of the start of the last
//     successful one (failed attempts are retried every RetryPeriod; each
//     request is cut off at the deadline), or
//   - it reads the Lease and finds another holder, or none: someone else
//     took or emptied it. (client-go keeps trying until RenewDeadline in that
//     case; kloop steps down at once, which is never less safe.)
//
// Since other candidates wait LeaseDuration after they saw the last renewal,
// and RenewDeadline < LeaseDuration, the old leader has stopped before
// another one starts, provided the clocks run at about the same rate and
// onStarted returns promptly when its context is done. As the client-go
// documentation warns, this relies on timing: it is not a guarantee of
// mutual exclusion, so reconcilers must be idempotent anyway.
//
// # Run
//
// Run blocks until it acquires the lease, then calls onStarted in a goroutine
// with a context that is cancelled when leadership ends (with the cause
// ErrLeadershipLost when it is lost). It returns only after onStarted has
// returned. On loss it returns an error wrapping ErrLeadershipLost; the
// process should then exit, as controller-runtime's manager documents. When
// the context of Run is cancelled it returns nil, after releasing the lease.
//
// # Why ReleaseOnCancel is on by default
//
// Releasing writes an empty holderIdentity with leaseDurationSeconds 1, so
// that the next candidate takes over at its next attempt, within about a
// RetryPeriod, instead of after LeaseDuration: a rolling update of a
// controller then pauses reconciliation for ~2 s instead of ~15 s.
// client-go and controller-runtime leave it off by default because their
// elector releases without waiting for the leader's callback to finish, so a
// leader that is still writing could overlap with the next one unless the
// process exits at once. kloop's Run releases only after onStarted has
// returned, so the release is safe whenever onStarted stops its work before
// it returns. Set ReleaseOnCancel to new(false) if onStarted starts work it
// does not wait for. The release only writes a Lease that this elector still
// holds (read first, then updated with its resourceVersion); it never clears
// another leader's lease.
//
// # Observability
//
// IsLeader and Leader report the state as last observed; Status returns a
// snapshot for health checks and metrics, and Options.Metrics receives a
// reader of it (for leader_election_master_status{name}, which is 1 while
// Status.Leading). The package imports no metrics library and keeps no
// globals.
package leaderelection
