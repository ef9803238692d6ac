package testutil

import (
	"errors"
	"testing"
	"time"
)

// Polling bounds of Eventually. The timeout is generous because the real
// kube-apiserver target writes through etcd, and some of its work is done
// asynchronously (CRDs established, CRs removed with their CRD) where the
// embedded server does it at once: Kubernetes promises it only eventually.
const (
	EventuallyTimeout  = 30 * time.Second
	EventuallyInterval = 5 * time.Millisecond
)

// Condition is what Eventually polls: true, or a nil error, once it holds.
type Condition interface {
	func() bool | func() error
}

// Eventually polls cond every EventuallyInterval until it holds, and fails tb
// (naming what, and with cond's last error if it returns one) if it still
// does not after EventuallyTimeout.
func Eventually[C Condition](tb testing.TB, what string, cond C) {
	tb.Helper()
	eventually(tb, what, cond, EventuallyTimeout)
}

// eventually is Eventually with another timeout, for its own tests.
func eventually[C Condition](tb testing.TB, what string, cond C, timeout time.Duration) {
	tb.Helper()
	check := func() error { return nil }
	switch c := any(cond).(type) {
	case func() bool:
		check = func() error {
			if !c() {
				return errNotYet
			}
			return nil
		}
	case func() error:
		check = c
	}
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			if errors.Is(err, errNotYet) {
				tb.Fatalf("timed out after %v waiting for %s", timeout, what)
			}
			tb.Fatalf("timed out after %v waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(EventuallyInterval)
	}
}

var errNotYet = errors.New("not yet")
