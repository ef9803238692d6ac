package bench

import (
	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// client-go's event broadcaster logs through klog, to stderr, the
	// Events it could not write once a manager stopped. klog's logger is
	// process-wide: set before any test starts a server that logs
	// through it (setting it later races with those servers).
	klog.SetLogger(logr.Discard())
	goleak.VerifyTestMain(m)
}

// The harness is only worth its ratios if every contender does the same work:
// each hands out every distinct key, dedups repeated adds and honours delays.
func TestContendersBehaveAlike(t *testing.T) {
	for _, impl := range queueImpls {
		for _, withMetrics := range []bool{false, true} {
			q := impl.new(t, withMetrics)
			for i := range 300 {
				q.Add(benchKeys[i%100])
			}
			seen := map[string]bool{}
			for range 100 {
				k, shutdown := q.Get()
				if shutdown || seen[k] {
					t.Fatalf("%s: Get = %q, shutdown %v, seen before %v", impl.name, k, shutdown, seen[k])
				}
				seen[k] = true
				q.Done(k)
			}
			start := time.Now()
			q.AddAfter("late", 20*time.Millisecond)
			if k, _ := q.Get(); k != "late" || time.Since(start) < 20*time.Millisecond {
				t.Fatalf("%s: delayed Get = %q after %v", impl.name, k, time.Since(start))
			}
			q.Done("late")
			q.ShutDown()
		}
	}
}
