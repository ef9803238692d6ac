package builder_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testcrd"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
)

// loopEnv is a manager scoped to env's namespace, logging to logs, started.
func loopEnv(t *testing.T, env *apiservertest.Env, fieldOwner string, logs *testutil.SyncBuffer) *manager.Manager {
	t.Helper()
	mgr, err := manager.New(env.Config(), manager.Options{
		Cache:      informer.FactoryOptions{DefaultNamespaces: []string{env.Namespace}},
		FieldOwner: fieldOwner,
		Logger:     slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

// warningEvent waits for a Warning Event with reason about the ConfigMap
// name and returns its message.
func warningEvent(t *testing.T, ctx context.Context, c *client.Client, ns, name, reason string) string {
	t.Helper()
	var msg string
	testutil.Eventually(t, "a "+reason+" Event on "+name, func() error {
		var evs corev1.EventList
		if err := c.Uncached().List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
				msg = e.Message
				return nil
			}
		}
		return apierrors.NewNotFound(corev1.Resource("events"), reason)
	})
	return msg
}

// TestHotLoopReported: the controller that writes a timestamp into the
// object on every reconcile — each write an event that reconciles it again
// — is reported within seconds, on both servers: a Warning Event on the
// object, a log line, the metric.
func TestHotLoopReported(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		logs := &testutil.SyncBuffer{}
		mgr := loopEnv(t, env, "stamper", logs)
		c := mgr.Client()
		r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			var cm corev1.ConfigMap
			if err := c.Get(ctx, req.NamespacedName, &cm); err != nil {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			cm.Data["lastReconciled"] = time.Now().Format(time.RFC3339Nano) // the bug
			return reconcile.Result{}, c.Update(ctx, &cm)
		})
		if err := builder.ControllerManagedBy(mgr).Named("stamper").For(&corev1.ConfigMap{}).Complete(r); err != nil {
			t.Fatal(err)
		}
		start(t, mgr)
		began := time.Now()
		if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "stamped"}}); err != nil {
			t.Fatal(err)
		}
		msg := warningEvent(t, ctx, c, env.Namespace, "stamped", "HotLoop")
		t.Logf("reported after %s: %s", time.Since(began).Round(time.Millisecond), msg)
		if !strings.Contains(msg, "triggered only by the controller's own previous write") {
			t.Errorf("Event message: %s", msg)
		}
		if !strings.Contains(logs.String(), "hot loop: reconciled and written") || !strings.Contains(logs.String(), "name=stamped") {
			t.Errorf("no hot-loop log line:\n%s", logs.String())
		}
		if got := sample(t, mgr.Gatherer(), "kloop_controller_hot_loops_total", map[string]string{"controller": "stamper"}); got < 1 {
			t.Errorf("kloop_controller_hot_loops_total = %v", got)
		}
	})
}

// TestFightingWritersReported: two controllers (field managers "blue" and
// "green") that each set the label team of one ConfigMap to their own
// value are reported within seconds, on both servers, naming both managers
// and the field path.
func TestFightingWritersReported(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		logs := &testutil.SyncBuffer{}
		var mgrs []*manager.Manager
		for _, team := range []string{"blue", "green"} {
			mgr := loopEnv(t, env, team, logs)
			c := mgr.Client()
			r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				var cm corev1.ConfigMap
				if err := c.Get(ctx, req.NamespacedName, &cm); err != nil {
					return reconcile.Result{}, client.IgnoreNotFound(err)
				}
				if cm.Labels["team"] == team {
					return reconcile.Result{}, nil
				}
				if cm.Labels == nil {
					cm.Labels = map[string]string{}
				}
				cm.Labels["team"] = team
				return reconcile.Result{}, c.Update(ctx, &cm)
			})
			if err := builder.ControllerManagedBy(mgr).Named("team-" + team).For(&corev1.ConfigMap{}).Complete(r); err != nil {
				t.Fatal(err)
			}
			start(t, mgr)
			mgrs = append(mgrs, mgr)
		}
		began := time.Now()
		// With a field set: an object created without any has no
		// managedFields, and updates do not start them (kube-apiserver's
		// rule, which the embedded server follows).
		if err := mgrs[0].Client().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "fought"},
			Data: map[string]string{"seed": "1"}}); err != nil {
			t.Fatal(err)
		}
		msg := warningEvent(t, ctx, mgrs[0].Client(), env.Namespace, "fought", "FightingWriters")
		t.Logf("reported after %s: %s", time.Since(began).Round(time.Millisecond), msg)
		for _, want := range []string{`"blue"`, `"green"`, ".metadata.labels.team"} {
			if !strings.Contains(msg, want) {
				t.Errorf("the Event does not name %s: %s", want, msg)
			}
		}
		if !strings.Contains(logs.String(), "fighting writers:") || !strings.Contains(logs.String(), "fields=[.metadata.labels.team]") {
			t.Errorf("no fighting-writers log line naming the field:\n%s", logs.String())
		}
	})
}

// TestHotLoopStatusTimestamp is the seeds' case exactly: a Widget operator
// that writes the time of the reconcile into the status subresource on
// every reconcile. Each status write is an update event (no generation
// change) that reconciles the Widget again; it is reported within seconds,
// on both servers.
func TestHotLoopStatusTimestamp(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		scheme := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			t.Fatal(err)
		}
		testcrd.AddToScheme(scheme)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := testcrd.Install(ctx, env.Config()); err != nil {
			t.Fatal(err)
		}
		logs := &testutil.SyncBuffer{}
		mgr, err := manager.New(env.Config(), manager.Options{
			Cache:      informer.FactoryOptions{Scheme: scheme, DefaultNamespaces: []string{env.Namespace}},
			FieldOwner: "widget-status",
			Logger:     slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		})
		if err != nil {
			t.Fatal(err)
		}
		c := mgr.Client()
		r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			var w testcrd.Widget
			if err := c.Get(ctx, req.NamespacedName, &w); err != nil {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			w.Status.State = "observed at " + time.Now().Format(time.RFC3339Nano) // the bug
			return reconcile.Result{}, c.Status().Update(ctx, &w)
		})
		if err := builder.ControllerManagedBy(mgr).Named("widget-status").For(&testcrd.Widget{}).Complete(r); err != nil {
			t.Fatal(err)
		}
		start(t, mgr)
		began := time.Now()
		if err := c.Create(ctx, &testcrd.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "ticking"},
			Spec: testcrd.WidgetSpec{Color: "red"}}); err != nil {
			t.Fatal(err)
		}
		msg := warningEvent(t, ctx, c, env.Namespace, "ticking", "HotLoop")
		t.Logf("reported after %s: %s", time.Since(began).Round(time.Millisecond), msg)
		if !strings.Contains(msg, "no generation change") || !strings.Contains(logs.String(), "name=ticking") {
			t.Errorf("Event %q, logs:\n%s", msg, logs.String())
		}
		if got := sample(t, mgr.Gatherer(), "kloop_controller_hot_loops_total", map[string]string{"controller": "widget-status"}); got < 1 {
			t.Errorf("kloop_controller_hot_loops_total = %v", got)
		}
	})
}
