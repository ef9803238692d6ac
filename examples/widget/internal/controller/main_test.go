package controller_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/examples/cloud"
	"kloop.dev/kloop/examples/cloud/cloudclient"
	examplev1 "kloop.dev/kloop/examples/widget/api/v1"
	"kloop.dev/kloop/examples/widget/internal/controller"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/manager"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// crdOptions install the generated CRDs on both targets.
var crdOptions = apiservertest.Options{CRDPaths: []string{"../../config/crd/bases"}}

func newScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := examplev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// harness is one test's API server, cloud and checker client.
type harness struct {
	t      *testing.T
	env    *apiservertest.Env
	ns     string
	scheme *runtime.Scheme
	cloud  *cloud.Cloud
	// c is the administrator's client, uncached: the test's writes and its
	// checks.
	c *client.Client
	// logs collects the managers' warnings and errors, shown if the test
	// fails.
	logs *testutil.SyncBuffer
}

func newHarness(t *testing.T, env *apiservertest.Env, copts cloud.Options) *harness {
	t.Helper()
	copts.Logger = slog.New(slog.DiscardHandler)
	cl, err := cloud.New(copts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cl.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	<-cl.Ready()
	s := newScheme(t)
	c, err := client.New(env.Config(), client.Options{Scheme: s, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, env: env, ns: env.Namespace, scheme: s, cloud: cl, c: c, logs: &testutil.SyncBuffer{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the managers' logs:\n%s", h.logs.String())
		}
	})
	return h
}

// managerOptions are what one test's manager runs with.
type managerOptions struct {
	cfg    *rest.Config                              // default: the administrator's
	wrap   func(http.RoundTripper) http.RoundTripper // wraps the cloud client's transport
	widget controller.WidgetOptions
	set    bool // also run the WidgetSet controller
}

// running is a started manager.
type running struct {
	mgr    *manager.Manager
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// stop stops the manager and returns what its Start returned.
func (r *running) stop() error {
	r.once.Do(func() {
		r.cancel()
		r.err = <-r.done
	})
	return r.err
}

// startManager starts a manager with the Widget controller (and the
// WidgetSet one if asked) on the test's namespace; it stops at the test's
// end.
func (h *harness) startManager(o managerOptions) *running {
	h.t.Helper()
	cfg := o.cfg
	if cfg == nil {
		cfg = h.env.Config()
	}
	reg := prometheus.NewRegistry()
	mgr, err := manager.New(cfg, manager.Options{
		Cache:      informer.FactoryOptions{Scheme: h.scheme, DefaultNamespaces: []string{h.ns}},
		Logger:     slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Registerer: reg,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	var rt http.RoundTripper = http.DefaultTransport.(*http.Transport).Clone()
	if o.wrap != nil {
		rt = o.wrap(rt)
	}
	cc, err := cloudclient.New(h.cloud.URL(), cloudclient.Options{HTTPClient: &http.Client{Transport: rt, Timeout: 30 * time.Second}})
	if err != nil {
		h.t.Fatal(err)
	}
	if o.widget.PendingPoll == 0 {
		o.widget.PendingPoll = 100 * time.Millisecond
	}
	if _, err := controller.NewWidget(mgr, cc, o.widget); err != nil {
		h.t.Fatal(err)
	}
	if o.set {
		if _, err := controller.NewWidgetSet(mgr, controller.WidgetSetOptions{}); err != nil {
			h.t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{mgr: mgr, reg: reg, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- mgr.Start(ctx) }()
	h.t.Cleanup(func() {
		if err := r.stop(); err != nil && !errors.Is(err, context.Canceled) {
			h.t.Errorf("manager: %v", err)
		}
	})
	select {
	case <-mgr.Started():
	case err := <-r.done:
		h.t.Fatalf("manager: %v", err)
	}
	return r
}

func (h *harness) createWidget(name string, spec examplev1.WidgetSpec) *examplev1.Widget {
	h.t.Helper()
	w := &examplev1.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}, Spec: spec}
	if err := h.c.Create(context.Background(), w); err != nil {
		h.t.Fatal(err)
	}
	return w
}

func (h *harness) getWidget(name string) (*examplev1.Widget, error) {
	var w examplev1.Widget
	err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, &w)
	return &w, err
}

// waitWidget waits until the Widget name satisfies cond and returns it.
func (h *harness) waitWidget(name, what string, cond func(*examplev1.Widget) error) *examplev1.Widget {
	h.t.Helper()
	var w *examplev1.Widget
	testutil.Eventually(h.t, name+" "+what, func() error {
		var err error
		if w, err = h.getWidget(name); err != nil {
			return err
		}
		return cond(w)
	})
	return w
}

// running reports whether w is Running at its generation.
func isRunning(w *examplev1.Widget) error {
	if w.Status.State != examplev1.StateRunning || w.Status.ObservedGeneration != w.Generation || w.Status.Endpoint == "" {
		return fmt.Errorf("status %+v at generation %d", w.Status, w.Generation)
	}
	return nil
}

// liveInstances returns the cloud's live instances of the Widget with uid,
// whether describes show them yet or not.
func (h *harness) liveInstances(uid types.UID) []cloudclient.Instance {
	var out []cloudclient.Instance
	for _, in := range h.cloud.Instances() {
		if in.Tags[controller.TagUID] == string(uid) && in.Live() {
			out = append(out, in)
		}
	}
	return out
}

// eventCount returns the count of w's Events with reason (0: none).
func (h *harness) eventCount(name, reason string) int32 {
	var l corev1.EventList
	if err := h.c.List(context.Background(), &l, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	var n int32
	for _, e := range l.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			n += max(e.Count, 1)
		}
	}
	return n
}
