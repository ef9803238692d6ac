package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"kloop.dev/kloop/apiserver"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/controller/controllerutil"
	"kloop.dev/kloop/handler/predicate"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
)

// Widget is the custom resource of the demo, as kubebuilder would generate it.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec   `json:"spec"`
	Status            WidgetStatus `json:"status,omitempty"`
}

// WidgetSpec is what the user wants.
type WidgetSpec struct {
	Color string `json:"color"`
}

// WidgetStatus is what the controller last observed.
type WidgetStatus struct {
	State              string `json:"state,omitempty"`
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
}

// DeepCopyObject implements runtime.Object.
func (w *Widget) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// WidgetList is a list of Widgets.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (l *WidgetList) DeepCopyObject() runtime.Object {
	out := *l
	out.Items = make([]Widget, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*Widget)
	}
	return &out
}

var widgetGV = schema.GroupVersion{Group: "demo.kloop.dev", Version: "v1"}

const finalizer = "demo.kloop.dev/cleanup"

func widgetCRD() *unstructured.Unstructured {
	str := map[string]any{"type": "string"}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "widgets.demo.kloop.dev"},
		"spec": map[string]any{
			"group": widgetGV.Group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"additionalPrinterColumns": []any{
					map[string]any{"name": "Color", "type": "string", "jsonPath": ".spec.color"},
					map[string]any{"name": "State", "type": "string", "jsonPath": ".status.state"},
				},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec": map[string]any{"type": "object", "required": []any{"color"}, "properties": map[string]any{"color": str}},
						"status": map[string]any{"type": "object", "properties": map[string]any{
							"state": str, "observedGeneration": map[string]any{"type": "integer"},
						}},
					},
				}},
			}},
		},
	}}
}

// reconciler keeps one ConfigMap per Widget, owned by it, with the Widget's
// color; it holds the Widget's deletion with a finalizer until it has cleaned
// up, and writes the status only when it changes (no hot loop).
type reconciler struct {
	c    *client.Client
	rec  *client.Recorder // Kubernetes Events about the Widgets
	log  func(format string, args ...any)
	slow time.Duration // how long the pretend external call of an update takes

	mu    sync.Mutex // guards count
	count map[string]int
}

// Reconcile logs each reconcile's error, then hands it to the controller,
// which requeues the key with backoff.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := r.reconcile(ctx, req)
	if err != nil {
		r.log("  %s: %v (requeued with backoff)", req, shortError(err))
	}
	return res, err
}

func shortError(err error) string {
	switch {
	case apierrors.IsConflict(err):
		return "409 Conflict: the object changed since the cache saw it"
	default:
		return err.Error()
	}
}

func (r *reconciler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.mu.Lock()
	r.count[req.Name]++
	n := r.count[req.Name]
	r.mu.Unlock()

	var w Widget
	if err := r.c.Get(ctx, req.NamespacedName, &w); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err) // gone: nothing to do
	}
	r.log("reconcile %-10s #%d generation=%d color=%s", req, n, w.Generation, w.Spec.Color)

	if !w.DeletionTimestamp.IsZero() {
		if controllerutil.ContainsFinalizer(&w, finalizer) {
			r.log("  cleanup of %s done, removing the finalizer", req)
			controllerutil.RemoveFinalizer(&w, finalizer)
			if err := r.c.Update(ctx, &w); err != nil {
				return reconcile.Result{}, err // retried with backoff, the finalizer stays
			}
			r.rec.Event(&w, corev1.EventTypeNormal, "CleanedUp", "cleanup done, finalizer removed")
		}
		return reconcile.Result{}, nil
	}
	if added, err := controllerutil.AddFinalizer(&w, finalizer); err != nil {
		return reconcile.Result{}, reconcile.Terminal(err) // a bad finalizer name will not fix itself
	} else if added {
		if err := r.c.Update(ctx, &w); err != nil {
			return reconcile.Result{}, err
		}
	}

	// The owned ConfigMap, with a deterministic name: a second create is AlreadyExists.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: controllerutil.Name(w.Name, "color")},
		Data: map[string]string{"color": w.Spec.Color}}
	if err := controllerutil.SetControllerReference(&w, cm, r.c.Scheme()); err != nil {
		return reconcile.Result{}, reconcile.Terminal(err)
	}
	var existing corev1.ConfigMap
	switch err := r.c.Get(ctx, types.NamespacedName{Namespace: cm.Namespace, Name: cm.Name}, &existing); {
	case apierrors.IsNotFound(err):
		if err := r.c.Create(ctx, cm); client.IgnoreAlreadyExists(err) != nil {
			return reconcile.Result{}, err
		}
		r.log("  created ConfigMap %s/%s", cm.Namespace, cm.Name)
		r.rec.Eventf(&w, corev1.EventTypeNormal, "Created", "created ConfigMap %s", cm.Name)
	case err != nil:
		return reconcile.Result{}, err
	case existing.Data["color"] != w.Spec.Color:
		time.Sleep(r.slow) // a slow call to the outside world; edits meanwhile pile up as one key
		existing.Data = cm.Data
		if err := r.c.Update(ctx, &existing); err != nil {
			return reconcile.Result{}, err
		}
		r.log("  updated ConfigMap %s/%s to %s", cm.Namespace, cm.Name, w.Spec.Color)
		r.rec.Eventf(&w, corev1.EventTypeNormal, "Updated", "ConfigMap %s set to %s", cm.Name, w.Spec.Color)
	}

	// Status only when it changes: a status write is an event too.
	_, err := controllerutil.UpdateStatus(ctx, r.c.Status(), &w, func() error {
		w.Status = WidgetStatus{State: "ready", ObservedGeneration: w.Generation}
		return nil
	})
	return reconcile.Result{}, err
}

// eventsOf returns the Events about the Widget name in the default namespace.
func eventsOf(ctx context.Context, c *client.Client, name string) []corev1.Event {
	var l corev1.EventList
	if err := c.Uncached().List(ctx, &l, client.InNamespace("default")); err != nil {
		return nil
	}
	var out []corev1.Event
	for _, ev := range l.Items {
		if ev.InvolvedObject.Kind == "Widget" && ev.InvolvedObject.Name == name {
			out = append(out, ev)
		}
	}
	return out
}

func main() {
	serve := flag.Bool("serve", false, "keep serving after the scripted session, until interrupted")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, *serve); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, serve bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	var outMu sync.Mutex
	logf := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(out, "%6.0fms  %s\n", float64(time.Since(start).Microseconds())/1000, fmt.Sprintf(format, args...))
	}

	// 1. The embedded API server.
	srv, err := apiserver.New(apiserver.Options{TLS: true})
	if err != nil {
		return err
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Start(ctx) }()
	defer func() { cancel(); <-srvDone }()
	select {
	case <-srv.Ready():
	case err := <-srvDone:
		return fmt.Errorf("api server: %w", err)
	}
	dir, err := os.MkdirTemp("", "kloop-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := srv.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	logf("embedded API server at %s (kubeconfig %s)", srv.URL(), kubeconfig)

	// 2. A manager with the Widget type in its scheme, and the CRD.
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	scheme.AddKnownTypes(widgetGV, &Widget{}, &WidgetList{})
	metav1.AddToGroupVersion(scheme, widgetGV)
	mgr, err := manager.New(srv.RESTConfig(), manager.Options{
		Cache:              informer.FactoryOptions{Scheme: scheme},
		MetricsBindAddress: "127.0.0.1:0",
	})
	if err != nil {
		return err
	}
	c := mgr.Client()
	if err := c.Create(ctx, widgetCRD()); err != nil {
		return err
	}
	logf("created CustomResourceDefinition widgets.demo.kloop.dev")

	// 3. The controller: For Widgets (spec changes only), Owns ConfigMaps.
	rec, err := mgr.Recorder("widget-controller")
	if err != nil {
		return err
	}
	r := &reconciler{c: c, rec: rec, log: logf, slow: 100 * time.Millisecond, count: map[string]int{}}
	if err := retry(ctx, func() error {
		err := builder.ControllerManagedBy(mgr).
			For(&Widget{}, builder.WithPredicates(predicate.GenerationChanged{})).
			Owns(&corev1.ConfigMap{}).
			Complete(r)
		if meta.IsNoMatchError(err) {
			return errRetry // discovery has not seen the new kind yet
		}
		return err
	}); err != nil {
		return err
	}
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(ctx) }()
	defer func() { cancel(); <-mgrDone }()
	select {
	case <-mgr.Started():
	case err := <-mgrDone:
		return err
	}

	// 4. The scripted session.
	for _, name := range []string{"w1", "w2"} {
		if err := c.Create(ctx, &Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: WidgetSpec{Color: "red"}}); err != nil {
			return err
		}
	}
	logf("created widgets w1 and w2")
	if err := waitFor(ctx, func() bool { return ready(ctx, c, "w1", 1) && ready(ctx, c, "w2", 1) }); err != nil {
		return fmt.Errorf("waiting for the widgets: %w", err)
	}

	logf("ten quick edits of w1's color, without waiting")
	colors := []string{"orange", "yellow", "green", "cyan", "blue", "indigo", "violet", "pink", "brown", "black"}
	for _, color := range colors {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"color":"`+color+`"}}`))
		if err := c.Patch(ctx, &Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "w1"}}, patch); err != nil {
			return err
		}
	}
	if err := waitFor(ctx, func() bool { return ready(ctx, c, "w1", 11) && configColor(ctx, c, "w1") == "black" }); err != nil {
		return fmt.Errorf("waiting for w1's edits: %w", err)
	}
	r.mu.Lock()
	logf("w1 reconciled %d times in all for 1 create + 10 edits: the queue merged the edits", r.count["w1"])
	r.mu.Unlock()

	logf("someone deletes w2's ConfigMap")
	var old corev1.ConfigMap
	if err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "w2-color"}, &old); err != nil {
		return err
	}
	if err := c.Delete(ctx, &old); err != nil {
		return err
	}
	if err := waitFor(ctx, func() bool { // a new ConfigMap (the cache may still hold the old one)
		var cm corev1.ConfigMap
		err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "w2-color"}, &cm)
		return err == nil && cm.UID != old.UID && cm.Data["color"] == "red"
	}); err != nil {
		return fmt.Errorf("waiting for w2's ConfigMap: %w", err)
	}
	logf("Owns woke w2, which recreated it")
	// The Events the controller recorded about w2 (kubectl describe widget w2):
	// the second "created" counts on the first Event instead of adding one.
	var events []corev1.Event
	if err := waitFor(ctx, func() bool {
		events = eventsOf(ctx, c, "w2")
		return len(events) == 1 && events[0].Count == 2
	}); err != nil {
		return fmt.Errorf("waiting for w2's events: %w (have %d)", err, len(events))
	}
	for _, ev := range events {
		logf("event of w2: %s %s %q (x%d, from %s)", ev.Type, ev.Reason, ev.Message, ev.Count, ev.Source.Component)
	}

	logf("delete w1: the finalizer holds it until the controller has cleaned up")
	if err := c.Delete(ctx, &Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "w1"}}); err != nil {
		return err
	}
	if err := waitFor(ctx, func() bool {
		var w Widget
		return apierrors.IsNotFound(c.Uncached().Get(ctx, types.NamespacedName{Namespace: "default", Name: "w1"}, &w))
	}); err != nil {
		return fmt.Errorf("waiting for w1 to go: %w", err)
	}
	logf("w1 is gone")

	// 5. The metrics, as Prometheus scrapes them.
	lines, err := scrape(ctx, "http://"+mgr.MetricsAddr().String()+"/metrics", "controller_runtime_reconcile_total", "workqueue_adds_total")
	if err != nil {
		return err
	}
	for _, l := range lines {
		logf("metrics: %s", l)
	}

	if serve {
		logf("serving until interrupted; try: kubectl --kubeconfig %s get widgets,configmaps", kubeconfig)
		<-ctx.Done()
	}
	return nil
}

var errRetry = errors.New("retry")

// retry calls fn until it returns something other than errRetry.
func retry(ctx context.Context, fn func() error) error {
	for {
		err := fn()
		if !errors.Is(err, errRetry) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitFor polls cond for up to ten seconds.
func waitFor(ctx context.Context, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

func ready(ctx context.Context, c *client.Client, name string, generation int64) bool {
	var w Widget
	err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: name}, &w)
	return err == nil && w.Status.State == "ready" && w.Status.ObservedGeneration == generation
}

func configColor(ctx context.Context, c *client.Client, widget string) string {
	var cm corev1.ConfigMap
	if err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: widget + "-color"}, &cm); err != nil {
		return ""
	}
	return cm.Data["color"]
}

// scrape returns the sample lines of the named metrics.
func scrape(ctx context.Context, url string, names ...string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		for _, n := range names {
			if strings.HasPrefix(sc.Text(), n+"{") {
				lines = append(lines, sc.Text())
			}
		}
	}
	return lines, sc.Err()
}
