package informer

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/util/flowcontrol"
)

// What the package's external tests use of its internals: the integration
// tests are in package informer_test because they import apiservertest, whose
// server imports this package (its garbage collector runs on informers).

// waitUntil polls cond every few milliseconds until it holds.
func waitUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// WaitUntil is waitUntil.
func WaitUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	waitUntil(t, ctx, what, cond)
}

// Timeout is timeout.
func Timeout(t *testing.T) context.Context { return timeout(t) }

// WaitSynced is waitSynced.
func WaitSynced(t *testing.T, ctx context.Context, reg *Registration) {
	t.Helper()
	waitSynced(t, ctx, reg)
}

// Recorder is recorder, a Handler of Pods that records what it is told.
type Recorder = recorder

// RecorderOf is recorderOf.
type RecorderOf[T Object] = recorderOf[T]

// NewRecorder is newRecorder.
func NewRecorder() *Recorder { return newRecorder() }

// NewRecorderOf is newRecorderOf.
func NewRecorderOf[T Object]() *RecorderOf[T] { return newRecorderOf[T]() }

// WaitUntil is waitUntil.
func (r *recorderOf[T]) WaitUntil(t *testing.T, ctx context.Context, what string, cond func([]string) bool) []string {
	t.Helper()
	return r.waitUntil(t, ctx, what, cond)
}

// WaitFor is waitFor.
func (r *recorderOf[T]) WaitFor(t *testing.T, ctx context.Context, n int) []string {
	t.Helper()
	return r.waitFor(t, ctx, n)
}

// Snapshot is snapshot.
func (r *recorderOf[T]) Snapshot() []string { return r.snapshot() }

// SetCheck sets check, which runs inside each call before it is recorded.
func (r *recorderOf[T]) SetCheck(check func(event string, obj T)) { r.check = check }

// Shared returns the shared informer behind i, for comparisons: views of the
// same kind, form and scope share one.
func (i *Informer[T]) Shared() any { return i.s }

// ListerRateLimiter returns the rate limiter the factory's listers and
// watchers share.
func (f *Factory) ListerRateLimiter() flowcontrol.RateLimiter { return f.lwCfg.RateLimiter }
