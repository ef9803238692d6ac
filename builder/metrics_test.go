package builder_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/metrics"
	"kloop.dev/kloop/workqueue"
)

// sample returns the value of the metric name whose labels include want, or
// -1 when the registry has no such series.
func sample(t *testing.T, g prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue metrics
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

// A Complete that fails (the name is taken, or a watch cannot be made) must
// leave the metrics of the controller that holds the name alone: its
// reconciles stay counted under its name.
func TestFailedCompleteKeepsMetrics(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		tests := []struct {
			name   string
			cm     string
			second func(mgr *manager.Manager, name string) error
		}{
			{"name taken", "cm-taken", func(mgr *manager.Manager, name string) error {
				return builder.ControllerManagedBy(mgr).Named(name).For(&corev1.Secret{}).Complete(&counter{})
			}},
			{"watch fails after the controller is made", "cm-badscope", func(mgr *manager.Manager, name string) error {
				return builder.ControllerManagedBy(mgr).Named(name).For(&corev1.Secret{},
					builder.WithScope(informer.Scope{LabelSelector: "a in (("})).Complete(&counter{})
			}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				reg := prometheus.NewRegistry()
				mgr, err := manager.New(env.Config(), manager.Options{Registerer: reg})
				if err != nil {
					t.Fatal(err)
				}
				const name = "keeper"
				r := &counter{ns: env.Namespace}
				if err := builder.ControllerManagedBy(mgr).Named(name).For(&corev1.ConfigMap{}).Complete(r); err != nil {
					t.Fatal(err)
				}
				if err := tt.second(mgr, name); err == nil {
					t.Fatal("second Complete succeeded")
				}
				start(t, mgr)
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: tt.cm}}
				create(t, mgr.Client(), cm)
				testutil.Eventually(t, "a reconcile of "+tt.cm, func() bool { return r.get(tt.cm) > 0 })
				total := map[string]string{"controller": name, "result": "success"}
				testutil.Eventually(t, "reconcile_total counting the reconcile", func() bool {
					return sample(t, reg, "controller_runtime_reconcile_total", total) >= 1
				})
				if got := sample(t, reg, "workqueue_adds_total", map[string]string{"name": name}); got < 1 {
					t.Errorf("workqueue_adds_total{name=%q} = %v, want >= 1", name, got)
				}
			})
		}
	})
}

// A Build that fails on a watch registers no metrics, so a corrected Build
// under the same name succeeds and reports under it.
func TestCorrectedBuildAfterFailedWatch(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		reg := prometheus.NewRegistry()
		mgr, err := manager.New(env.Config(), manager.Options{Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		const name = "retried"
		err = builder.ControllerManagedBy(mgr).Named(name).For(&corev1.ConfigMap{},
			builder.WithScope(informer.Scope{LabelSelector: "a in (("})).Complete(&counter{})
		if err == nil {
			t.Fatal("Complete with a bad label selector succeeded")
		}
		if got := sample(t, reg, "controller_runtime_max_concurrent_reconciles", map[string]string{"controller": name}); got != -1 {
			t.Fatalf("the failed Build left controller_runtime_max_concurrent_reconciles{controller=%q} = %v", name, got)
		}
		r := &counter{ns: env.Namespace}
		if err := builder.ControllerManagedBy(mgr).Named(name).For(&corev1.ConfigMap{}).Complete(r); err != nil {
			t.Fatalf("the corrected Build: %v", err)
		}
		start(t, mgr)
		create(t, mgr.Client(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "cm-retried"}})
		testutil.Eventually(t, "a reconcile of cm-retried", func() bool { return r.get("cm-retried") > 0 })
		testutil.Eventually(t, "reconcile_total counting it", func() bool {
			return sample(t, reg, "controller_runtime_reconcile_total", map[string]string{"controller": name, "result": "success"}) >= 1
		})
	})
}

// A Build that fails after one of its registrations was accepted (the queue's
// name is taken by another queue on the manager's registry, or the manager
// refuses the controller after the controller's own providers accepted it)
// takes that registration back: no series of a controller that does not run
// stays behind.
func TestFailedBuildRegistersNothing(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		const name = "phantom"
		tests := []struct {
			name string
			// setup prepares mgr and returns the options of the Build and
			// the registry its metrics go to.
			setup func(t *testing.T, mgr *manager.Manager, reg *prometheus.Registry) (controller.Options, *prometheus.Registry)
		}{
			{"queue name taken", func(t *testing.T, mgr *manager.Manager, reg *prometheus.Registry) (controller.Options, *prometheus.Registry) {
				if _, err := workqueue.New(workqueue.Options[string]{Name: name, Metrics: mgr.QueueMetrics()}); err != nil {
					t.Fatal(err)
				}
				return controller.Options{}, reg
			}},
			{"manager refuses the name", func(t *testing.T, mgr *manager.Manager, _ *prometheus.Registry) (controller.Options, *prometheus.Registry) {
				if err := builder.ControllerManagedBy(mgr).Named(name).For(&corev1.Secret{}).Complete(&counter{}); err != nil {
					t.Fatal(err)
				}
				own := prometheus.NewRegistry()
				cm, err := metrics.NewController(own)
				if err != nil {
					t.Fatal(err)
				}
				qm, err := metrics.NewWorkqueue(own)
				if err != nil {
					t.Fatal(err)
				}
				return controller.Options{Metrics: cm, QueueMetrics: qm}, own
			}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				reg := prometheus.NewRegistry()
				mgr, err := manager.New(env.Config(), manager.Options{Registerer: reg})
				if err != nil {
					t.Fatal(err)
				}
				opts, check := tt.setup(t, mgr, reg)
				if err := builder.ControllerManagedBy(mgr).Named(name).For(&corev1.ConfigMap{}).WithOptions(opts).Complete(&counter{}); err == nil {
					t.Fatal("Complete succeeded")
				}
				if check != reg {
					for metric, label := range map[string]string{"controller_runtime_max_concurrent_reconciles": "controller", "workqueue_depth": "name"} {
						if got := sample(t, check, metric, map[string]string{label: name}); got != -1 {
							t.Errorf("the failed Build left %s{%s=%q} = %v", metric, label, name, got)
						}
					}
					return
				}
				if got := sample(t, reg, "controller_runtime_max_concurrent_reconciles", map[string]string{"controller": name}); got != -1 {
					t.Errorf("the failed Build left controller_runtime_max_concurrent_reconciles{controller=%q} = %v", name, got)
				}
			})
		}
	})
}
