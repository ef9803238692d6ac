package controller_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/examples/cloud"
	examplev1 "kloop.dev/kloop/examples/widget/api/v1"
	"kloop.dev/kloop/examples/widget/internal/controller"
	"kloop.dev/kloop/internal/testutil"
)

var spec = examplev1.WidgetSpec{Region: "local-1", Size: "small", Tags: map[string]string{"team": "a"}}

// create → Running with one instance; a spec update modifies it; a delete
// deletes it, then the finalizer goes.
func TestWidgetLifecycle(t *testing.T) {
	apiservertest.ForEachTarget(t, crdOptions, func(t *testing.T, env *apiservertest.Env) {
		h := newHarness(t, env, cloud.Options{ProvisionDelay: 300 * time.Millisecond})
		h.startManager(managerOptions{})
		w := h.createWidget("w1", spec)

		w = h.waitWidget("w1", "Running", isRunning)
		insts := h.liveInstances(w.UID)
		if len(insts) != 1 || insts[0].ID != w.Status.InstanceID {
			t.Fatalf("instances %+v for status %+v", insts, w.Status)
		}
		in := insts[0]
		if in.Region != "local-1" || in.Size != "small" || in.Tags["team"] != "a" ||
			in.Tags[controller.TagUID] != string(w.UID) || in.Tags[controller.TagName] != h.ns+"/w1" || in.ClientToken != controller.ClientToken(w) {
			t.Errorf("instance %+v", in)
		}
		if !controllerHasFinalizer(w) {
			t.Errorf("finalizers %v", w.Finalizers)
		}
		if c := meta.FindStatusCondition(w.Status.Conditions, examplev1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "Running" {
			t.Errorf("Ready condition %+v", c)
		}

		// A spec update: the instance is modified, not replaced.
		w.Spec.Size, w.Spec.Tags = "large", map[string]string{"team": "b"}
		if err := h.c.Update(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		w = h.waitWidget("w1", "Running at generation 2", func(w *examplev1.Widget) error {
			if w.Generation != 2 {
				return fmt.Errorf("generation %d", w.Generation)
			}
			return isRunning(w)
		})
		insts = h.liveInstances(w.UID)
		if len(insts) != 1 || insts[0].ID != in.ID || insts[0].Size != "large" || insts[0].Tags["team"] != "b" {
			t.Errorf("after the update: %+v, want %s large team=b", insts, in.ID)
		}

		// Delete: the instance goes, then the Widget.
		if err := h.c.Delete(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "w1 gone", func() bool {
			_, err := h.getWidget("w1")
			return err != nil && strings.Contains(err.Error(), "not found")
		})
		if insts := h.liveInstances(w.UID); len(insts) != 0 {
			t.Errorf("instances left after the delete: %+v", insts)
		}
		for _, reason := range []string{"Created", "Modified", "Running", "Deleted"} {
			testutil.Eventually(t, "a "+reason+" Event", func() bool { return h.eventCount("w1", reason) > 0 })
		}
	})
}

func controllerHasFinalizer(w *examplev1.Widget) bool {
	for _, f := range w.Finalizers {
		if f == controller.Finalizer {
			return true
		}
	}
	return false
}

// failing is a transport that answers the cloud requests matching method
// with a 500 while on is set.
type failing struct {
	next   http.RoundTripper
	method string
	on     atomic.Bool
	hits   atomic.Int64
}

func (f *failing) RoundTrip(r *http.Request) (*http.Response, error) {
	if f.on.Load() && r.Method == f.method {
		f.hits.Add(1)
		return &http.Response{StatusCode: 500, Status: "500 Internal Server Error", Header: http.Header{},
			Body: http.NoBody, Request: r}, nil
	}
	return f.next.RoundTrip(r)
}

// A cloud that fails the delete keeps the finalizer, and the operator
// retries until it succeeds.
func TestWidgetDeleteFailureKeepsFinalizer(t *testing.T) {
	apiservertest.ForEachTarget(t, crdOptions, func(t *testing.T, env *apiservertest.Env) {
		h := newHarness(t, env, cloud.Options{})
		f := &failing{method: http.MethodDelete}
		h.startManager(managerOptions{wrap: func(rt http.RoundTripper) http.RoundTripper { f.next = rt; return f }})
		h.createWidget("w1", spec)
		w := h.waitWidget("w1", "Running", isRunning)

		f.on.Store(true)
		if err := h.c.Delete(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "three failed deletes", func() bool { return f.hits.Load() >= 3 })
		held, err := h.getWidget("w1")
		if err != nil {
			t.Fatalf("the Widget went while its instance could not be deleted: %v", err)
		}
		if !controllerHasFinalizer(held) || held.DeletionTimestamp.IsZero() || held.Status.State != examplev1.StateDeleting {
			t.Errorf("held Widget: finalizers %v, deletionTimestamp %v, state %q", held.Finalizers, held.DeletionTimestamp, held.Status.State)
		}
		if n := len(h.liveInstances(w.UID)); n != 1 {
			t.Errorf("%d live instances while the deletes fail, want 1", n)
		}
		testutil.Eventually(t, "a DeleteFailed Event", func() bool { return h.eventCount("w1", "DeleteFailed") > 0 })

		f.on.Store(false)
		testutil.Eventually(t, "w1 gone once the cloud recovers", func() bool {
			_, err := h.getWidget("w1")
			return err != nil
		})
		if n := len(h.liveInstances(w.UID)); n != 0 {
			t.Errorf("%d live instances after the delete", n)
		}
	})
}

// Throttling and random failures (some after the change was made): every
// Widget ends Running with exactly one instance, and their deletes leave
// none.
func TestWidgetThrottlingAndFailures(t *testing.T) {
	apiservertest.ForEachTarget(t, crdOptions, func(t *testing.T, env *apiservertest.Env) {
		h := newHarness(t, env, cloud.Options{RateLimit: 40, Burst: 10, FailureRate: 0.2, Seed: 3, ProvisionDelay: 100 * time.Millisecond})
		h.startManager(managerOptions{widget: controller.WidgetOptions{MaxConcurrentReconciles: 8}})
		const n = 30
		for i := range n {
			h.createWidget(fmt.Sprintf("w%02d", i), spec)
		}
		uids := map[types.UID]string{}
		for i := range n {
			w := h.waitWidget(fmt.Sprintf("w%02d", i), "Running", isRunning)
			uids[w.UID] = w.Name
		}
		for uid, name := range uids {
			if insts := h.liveInstances(uid); len(insts) != 1 {
				t.Errorf("%s has %d instances: %+v", name, len(insts), insts)
			}
		}
		s := h.cloud.Stats()
		if s.Throttled == 0 || s.Failed == 0 {
			t.Errorf("the cloud throttled %d and failed %d requests: the test tested neither", s.Throttled, s.Failed)
		}
		if s.Live != n {
			t.Errorf("%d live instances for %d Widgets", s.Live, n)
		}
		t.Logf("cloud: %+v", s)
		for i := range n {
			w, err := h.getWidget(fmt.Sprintf("w%02d", i))
			if err != nil {
				t.Fatal(err)
			}
			if err := h.c.Delete(context.Background(), w); err != nil {
				t.Fatal(err)
			}
		}
		testutil.Eventually(t, "no live instance", func() error {
			if s := h.cloud.Stats(); s.Live != 0 {
				return fmt.Errorf("%d live", s.Live)
			}
			return nil
		})
	})
}

// Inside the cloud's visibility window the operator polls, finds nothing
// by ID or tag, creates again with the Widget's client token, and gets the
// same instance: no duplicate.
func TestWidgetEventualConsistency(t *testing.T) {
	apiservertest.ForEachTarget(t, crdOptions, func(t *testing.T, env *apiservertest.Env) {
		h := newHarness(t, env, cloud.Options{VisibilityDelay: 2 * time.Second, ProvisionDelay: 100 * time.Millisecond})
		h.startManager(managerOptions{widget: controller.WidgetOptions{PendingPoll: 50 * time.Millisecond}})
		const n = 5
		for i := range n {
			h.createWidget(fmt.Sprintf("w%d", i), spec)
		}
		for i := range n {
			w := h.waitWidget(fmt.Sprintf("w%d", i), "Running", isRunning)
			if insts := h.liveInstances(w.UID); len(insts) != 1 {
				t.Errorf("%s has %d instances", w.Name, len(insts))
			}
		}
		s := h.cloud.Stats()
		if s.Created != n {
			t.Errorf("%d instances created for %d Widgets", s.Created, n)
		}
		// The operator did ask again inside the window (the test tested it).
		if s.Requests["create"] <= n {
			t.Errorf("%d creates: the window was never hit", s.Requests["create"])
		}
	})
}

// An invalid spec: a Failed state, a Ready=False InvalidSpec condition,
// no instance, no retry (a terminal error); fixed, the Widget runs.
func TestWidgetInvalidSpec(t *testing.T) {
	apiservertest.ForEachTarget(t, crdOptions, func(t *testing.T, env *apiservertest.Env) {
		h := newHarness(t, env, cloud.Options{})
		h.startManager(managerOptions{})
		bad := spec
		bad.Tags = map[string]string{controller.TagUID: "mine"}
		h.createWidget("w1", bad)
		w := h.waitWidget("w1", "Failed", func(w *examplev1.Widget) error {
			c := meta.FindStatusCondition(w.Status.Conditions, examplev1.ConditionReady)
			if w.Status.State != examplev1.StateFailed || c == nil || c.Reason != "InvalidSpec" || c.Status != metav1.ConditionFalse {
				return fmt.Errorf("status %+v", w.Status)
			}
			if !strings.Contains(c.Message, controller.TagUID) {
				return fmt.Errorf("condition message %q does not name the tag", c.Message)
			}
			return nil
		})
		testutil.Eventually(t, "an InvalidSpec Event", func() bool { return h.eventCount("w1", "InvalidSpec") == 1 })
		time.Sleep(time.Second) // with backoff, a retried error would run ~8 times in a second
		if n := h.eventCount("w1", "InvalidSpec"); n != 1 {
			t.Errorf("%d InvalidSpec Events: the terminal error was retried", n)
		}
		if s := h.cloud.Stats(); s.Created != 0 {
			t.Errorf("%d instances for an invalid spec", s.Created)
		}

		w.Spec.Tags = map[string]string{"team": "a"}
		if err := h.c.Update(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		h.waitWidget("w1", "Running once fixed", isRunning)
	})
}

// The operator stops right after the cloud's create answered and before
// the status write: its answer is lost. A new manager finds — or,
// inside the visibility window, is given back by the client token — the
// same instance: exactly one.
func TestWidgetCrashBetweenCreateAndStatus(t *testing.T) {
	apiservertest.ForEachTarget(t, crdOptions, func(t *testing.T, env *apiservertest.Env) {
		h := newHarness(t, env, cloud.Options{VisibilityDelay: 2 * time.Second})
		crash := h.startCrashingManager()
		w := h.createWidget("w1", spec)
		got := crash.wait("w1")
		if got.Status.InstanceID != "" {
			t.Fatalf("the status recorded %s before the crash", got.Status.InstanceID)
		}
		insts := h.liveInstances(w.UID)
		if len(insts) != 1 {
			t.Fatalf("%d instances after the crash, want the 1 created", len(insts))
		}

		h.startManager(managerOptions{})
		w = h.waitWidget("w1", "Running after the restart", isRunning)
		if w.Status.InstanceID != insts[0].ID {
			t.Errorf("status names %s, the instance created before the crash is %s", w.Status.InstanceID, insts[0].ID)
		}
		if after := h.liveInstances(w.UID); len(after) != 1 {
			t.Errorf("%d instances after the restart: %+v", len(after), after)
		}
		if s := h.cloud.Stats(); s.Created != 1 {
			t.Errorf("%d instances created", s.Created)
		}
	})
}

// crashing is a manager whose process "dies" right after the cloud
// answered its first create: it is cancelled with the answer in flight,
// which it never reads.
type crashing struct {
	h       *harness
	first   *running
	crashed chan struct{} // closed at the crash
}

func (h *harness) startCrashingManager() *crashing {
	c := &crashing{h: h, crashed: make(chan struct{})}
	var once atomic.Bool
	started := make(chan struct{}) // c.first is set
	crash := func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(req)
			if err == nil && req.Method == http.MethodPost && resp.StatusCode < 300 && once.CompareAndSwap(false, true) {
				resp.Body.Close()
				<-started
				c.first.cancel() // the process dies with the answer in flight
				close(c.crashed)
				return nil, errors.New("crashed")
			}
			return resp, err
		})
	}
	c.first = h.startManager(managerOptions{wrap: crash})
	close(started)
	return c
}

// wait waits for the crash and the manager's end, and returns the Widget
// name as the crash left it.
func (c *crashing) wait(name string) *examplev1.Widget {
	c.h.t.Helper()
	<-c.crashed
	if err := c.first.stop(); err != nil && !errors.Is(err, context.Canceled) {
		c.h.t.Fatal(err)
	}
	w, err := c.h.getWidget(name)
	if err != nil {
		c.h.t.Fatal(err)
	}
	return w
}

// A size edited while the new instance is still invisible to describes:
// the create's client token is refused for its other size (409), which
// means the instance exists: the operator waits for it to show and
// resizes it, and the Widget never fails.
func TestWidgetResizeInsideVisibilityWindow(t *testing.T) {
	apiservertest.ForEachTarget(t, crdOptions, func(t *testing.T, env *apiservertest.Env) {
		h := newHarness(t, env, cloud.Options{VisibilityDelay: 2 * time.Second, ProvisionDelay: 100 * time.Millisecond})
		h.startManager(managerOptions{widget: controller.WidgetOptions{PendingPoll: 50 * time.Millisecond}})
		h.createWidget("w1", spec)
		testutil.Eventually(t, "the instance created", func() bool { return h.cloud.Stats().Created == 1 })
		testutil.Eventually(t, "the size edited", func() error {
			w, err := h.getWidget("w1")
			if err != nil {
				return err
			}
			w.Spec.Size = "large"
			return h.c.Update(context.Background(), w) // a conflict with the operator's writes is tried again
		})
		w := h.waitWidget("w1", "Running large", func(w *examplev1.Widget) error {
			if w.Status.State == examplev1.StateFailed {
				t.Fatalf("the Widget failed: %+v", w.Status)
			}
			if err := isRunning(w); err != nil {
				return err
			}
			if insts := h.liveInstances(w.UID); len(insts) != 1 || insts[0].Size != "large" || insts[0].ID != w.Status.InstanceID {
				return fmt.Errorf("instances %+v", insts)
			}
			return nil
		})
		if s := h.cloud.Stats(); s.Created != 1 {
			t.Errorf("%d instances created", s.Created)
		}
		if n := h.eventCount(w.Name, "CloudRejected"); n != 0 {
			t.Errorf("%d CloudRejected Events", n)
		}
	})
}

// A Widget created long ago whose instance is created only now (its
// operator was down), and whose create's answer is lost with the process;
// the Widget is deleted at once, while describes do not show the
// instance yet. The finalizer waits out the visibility window from the
// deletion, not from the Widget's creation, and the instance goes.
func TestWidgetDeletedBeforeItsNewInstanceShows(t *testing.T) {
	apiservertest.ForEachTarget(t, crdOptions, func(t *testing.T, env *apiservertest.Env) {
		h := newHarness(t, env, cloud.Options{VisibilityDelay: 2 * time.Second})
		w := h.createWidget("w1", spec)
		time.Sleep(2500 * time.Millisecond) // the window, counted from the creation, is over
		got := h.startCrashingManager().wait("w1")
		if err := h.c.Delete(context.Background(), got); err != nil {
			t.Fatal(err)
		}
		h.startManager(managerOptions{widget: controller.WidgetOptions{ConsistencyWindow: 2 * time.Second}})
		testutil.Eventually(t, "the Widget gone", func() error {
			if _, err := h.getWidget("w1"); err == nil {
				return errors.New("still there")
			} else if !apierrors.IsNotFound(err) {
				return err
			}
			return nil
		})
		if insts := h.liveInstances(w.UID); len(insts) != 0 {
			t.Errorf("leaked: %+v", insts)
		}
		if s := h.cloud.Stats(); s.Created != 1 {
			t.Errorf("%d instances created", s.Created)
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
