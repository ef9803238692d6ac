package apiserver

import (
	"net/http"
	"sync/atomic"
)

// inflightLimits bounds the requests served at once, per class
// (requestClass), as kube-apiserver's max-in-flight filter does for
// read-only and mutating requests: a request past its class's bound is not
// queued but answered 429 with Retry-After: 1 (tooManyRequests). Unlike
// kube-apiserver's filter, long-running requests have a bound of their own
// (MaxWatches) rather than none, and system:masters is not exempt: every
// client of the embedded server authenticates as an administrator, so the
// exemption would leave nothing bounded. The zero value is not usable: see
// newInflightLimits. It is safe for concurrent use.
type inflightLimits struct {
	classes [3]inflightClass // by requestClass
}

// inflightClass is the count and bound of one class, alone on its cache
// line so that classes do not contend.
type inflightClass struct {
	n   atomic.Int64 // requests being served; may pass max for an instant in acquire
	max int64        // set by newInflightLimits, never changed
	_   [48]byte
}

func newInflightLimits(readOnly, mutating, longRunning int) *inflightLimits {
	l := &inflightLimits{}
	for c, max := range []int{readOnly, mutating, longRunning} {
		l.classes[c].max = int64(max)
	}
	return l
}

// acquire takes a slot of class c; false when the class is at its bound.
// A true acquire is matched by a release.
func (l *inflightLimits) acquire(c requestClass) bool {
	cl := &l.classes[c]
	if cl.n.Add(1) > cl.max {
		cl.n.Add(-1)
		return false
	}
	return true
}

func (l *inflightLimits) release(c requestClass) { l.classes[c].n.Add(-1) }

// inflight returns the requests of class c being served.
func (l *inflightLimits) inflight(c requestClass) int64 { return l.classes[c].n.Load() }

// tooManyRequests is kube-apiserver's answer past an in-flight bound (its
// max-in-flight and priority-and-fairness filters'): 429, Retry-After: 1
// (which client-go and kloop's clients wait for before they retry), and a
// plain-text body rather than a Status — client-go turns it into a
// TooManyRequests error all the same.
func tooManyRequests(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
}
