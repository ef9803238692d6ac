package manager_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The integration tests run on every target of apiservertest.ForEachTarget
// (the embedded server and the real kube-apiserver), each in the namespace
// of its Env; controllers watch that namespace only (builder.WithScope), as
// the real server is shared by every test of the binary.

// run starts mgr; the returned channel receives Start's error.
func run(t *testing.T, ctx context.Context, mgr *manager.Manager) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	select {
	case <-mgr.Started():
	case err := <-done:
		t.Fatalf("manager stopped at once: %v", err)
	}
	return done
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

func TestOptionsValidation(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testOptionsValidation)
}

func testOptionsValidation(t *testing.T, env *apiservertest.Env) {
	cfg := env.Config()
	tests := []struct {
		name string
		opts manager.Options
		want string
	}{
		{"leader election without ID", manager.Options{LeaderElection: true}, "LeaderElectionID is required"},
		{"bad metrics address", manager.Options{MetricsBindAddress: "8080"}, "MetricsBindAddress"},
		{"bad live view address", manager.Options{LiveViewBindAddress: "8082"}, "LiveViewBindAddress"},
		{"bad probe address", manager.Options{HealthProbeBindAddress: "localhost"}, "HealthProbeBindAddress"},
		{"lease not whole seconds", manager.Options{LeaderElection: true, LeaderElectionID: "x", LeaseDuration: 1500 * time.Millisecond}, "whole number of seconds"},
		{"invalid lease name", manager.Options{LeaderElection: true, LeaderElectionID: "Not_A_Name"}, "Not_A_Name"},
		{"renew deadline above lease", manager.Options{LeaderElection: true, LeaderElectionID: "x", RenewDeadline: time.Minute}, "RenewDeadline"},
		{"registerer that cannot gather", manager.Options{Registerer: prometheus.WrapRegistererWithPrefix("x_", prometheus.NewRegistry())}, "set Gatherer too"},
		{"gatherer without registerer", manager.Options{Gatherer: prometheus.NewRegistry()}, "set both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := manager.New(cfg, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
	if _, err := manager.New(nil, manager.Options{}); err == nil {
		t.Fatal("New(nil config) succeeded")
	}
	mgr, err := manager.New(cfg, manager.Options{})
	if err != nil {
		t.Fatalf("zero Options: %v", err)
	}
	if mgr.MetricsAddr() != nil || mgr.HealthProbeAddr() != nil || mgr.PprofAddr() != nil {
		t.Fatal("servers bound before Start")
	}
	if _, err := manager.New(cfg, manager.Options{Registerer: mgr.Registerer()}); err == nil {
		t.Fatal("a second manager registered the same collectors on one registry")
	}
}

// The metrics go to the registry passed in, never the global one.
func TestMetricsOnTheRegistryPassedIn(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testMetricsOnTheRegistryPassedIn)
}

func testMetricsOnTheRegistryPassedIn(t *testing.T, env *apiservertest.Env) {
	cfg := env.Config()
	reg := prometheus.NewRegistry()
	mgr, err := manager.New(cfg, manager.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if mgr.Gatherer() != prometheus.Gatherer(reg) || mgr.Registerer() != prometheus.Registerer(reg) {
		t.Fatal("the manager does not use the registry passed in")
	}
	r := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil })
	if err := builder.ControllerManagedBy(mgr).For(&corev1.Secret{}).Complete(r); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "secret" {
					found[f.GetName()] = true
				}
			}
		}
	}
	for _, name := range []string{"workqueue_adds_total", "controller_runtime_max_concurrent_reconciles"} {
		if !found[name] {
			t.Errorf("%s{controller=\"secret\"} not on the registry passed in (found %v)", name, found)
		}
	}
	global, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range global {
		if strings.HasPrefix(f.GetName(), "workqueue_") || strings.HasPrefix(f.GetName(), "controller_runtime_") {
			t.Fatalf("%s is on the global registry", f.GetName())
		}
	}
}

// The probes and /metrics are served over HTTP: readiness follows the
// informers and the controllers; the metrics carry controller-runtime's
// names with the controller label.
func TestProbesAndMetricsOverHTTP(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testProbesAndMetricsOverHTTP)
}

func testProbesAndMetricsOverHTTP(t *testing.T, env *apiservertest.Env) {
	ns, cfg := env.Namespace, env.Config()
	mgr, err := manager.New(cfg, manager.Options{
		MetricsBindAddress:     "127.0.0.1:0",
		HealthProbeBindAddress: "127.0.0.1:0",
		PprofBindAddress:       "127.0.0.1:0",
	})
	if err != nil {
		t.Fatal(err)
	}
	var reconciles atomic.Int32
	r := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		reconciles.Add(1)
		return reconcile.Result{}, nil
	})
	if err := builder.ControllerManagedBy(mgr).Named("probed").For(&corev1.ConfigMap{}, builder.WithScope(informer.Scope{Namespace: ns})).Complete(r); err != nil {
		t.Fatal(err)
	}
	var broken atomic.Bool
	if err := mgr.AddReadyzCheck("custom", func(*http.Request) error {
		if broken.Load() {
			return errors.New("custom dependency down")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := mgr.AddReadyzCheck("custom", manager.Ping); err == nil {
		t.Fatal("a second check with the same name was accepted")
	}
	if err := mgr.AddHealthzCheck("a/b", manager.Ping); err == nil {
		t.Fatal("a check name with a slash was accepted")
	}
	if err := mgr.Client().Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one"}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := run(t, ctx, mgr)
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()
	probe := "http://" + mgr.HealthProbeAddr().String()
	metricsURL := "http://" + mgr.MetricsAddr().String() + "/metrics"

	if code, body := get(t, probe+"/healthz"); code != http.StatusOK || body != "ok" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := get(t, probe+"/healthz/ping"); code != http.StatusOK || body != "ok" {
		t.Fatalf("/healthz/ping: %d %q", code, body)
	}
	testutil.Eventually(t, "/readyz to pass", func() bool { code, _ := get(t, probe+"/readyz"); return code == http.StatusOK })
	code, body := get(t, probe+"/readyz?verbose")
	for _, want := range []string{"[+]informers ok", "[+]controller-probed ok", "[+]custom ok", "readyz check passed"} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Fatalf("/readyz?verbose: %d %q, want %q", code, body, want)
		}
	}
	broken.Store(true)
	code, body = get(t, probe+"/readyz")
	if code != http.StatusInternalServerError || !strings.Contains(body, "[-]custom failed: custom dependency down") || !strings.Contains(body, "[+]informers ok") {
		t.Fatalf("/readyz with a failing check: %d %q", code, body)
	}
	if code, _ := get(t, probe+"/readyz?exclude=custom"); code != http.StatusOK {
		t.Fatalf("/readyz?exclude=custom: %d", code)
	}
	if code, _ := get(t, probe+"/readyz/custom"); code != http.StatusInternalServerError {
		t.Fatalf("/readyz/custom: %d", code)
	}
	if code, _ := get(t, probe+"/readyz/nope"); code != http.StatusNotFound {
		t.Fatalf("/readyz/nope: %d", code)
	}

	// The namespace's ConfigMaps: one, and its kube-root-ca.crt.
	testutil.Eventually(t, "the reconciles", func() bool { return reconciles.Load() >= 2 })
	_, body = get(t, metricsURL)
	for _, want := range []string{
		`workqueue_adds_total{controller="probed",name="probed"}`,
		`workqueue_depth{controller="probed",name="probed"`,
		`controller_runtime_reconcile_total{controller="probed",result="success"} 2`,
		`controller_runtime_max_concurrent_reconciles{controller="probed"} 1`,
		`controller_runtime_reconcile_time_seconds_count{controller="probed"} 2`,
		// The informers' lists and watches, counted by the manager's transport.
		`rest_client_requests_total{code="200",host="` + strings.TrimPrefix(strings.TrimPrefix(cfg.Host, "https://"), "http://") + `",method="GET"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if code, body := get(t, "http://"+mgr.PprofAddr().String()+"/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Fatalf("pprof index: %d", code)
	}
}

// A manager with no servers binds nothing.
func TestServersOffByDefault(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testServersOffByDefault)
}

func testServersOffByDefault(t *testing.T, env *apiservertest.Env) {
	cfg := env.Config()
	mgr, err := manager.New(cfg, manager.Options{MetricsBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := run(t, ctx, mgr)
	if mgr.MetricsAddr() != nil || mgr.HealthProbeAddr() != nil || mgr.PprofAddr() != nil {
		t.Fatal("a server is bound")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := mgr.Start(context.Background()); !errors.Is(err, manager.ErrAlreadyStarted) {
		t.Fatalf("second Start: %v", err)
	}
}

// A bind address in use fails Start at once, and leaks nothing.
func TestStartFailsOnBusyAddress(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testStartFailsOnBusyAddress)
}

func testStartFailsOnBusyAddress(t *testing.T, env *apiservertest.Env) {
	cfg := env.Config()
	first, err := manager.New(cfg, manager.Options{MetricsBindAddress: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := run(t, ctx, first)
	defer func() { cancel(); <-done }()
	second, err := manager.New(cfg, manager.Options{
		HealthProbeBindAddress: "127.0.0.1:0",
		MetricsBindAddress:     first.MetricsAddr().String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "metrics server") {
		t.Fatalf("Start on a busy address: %v", err)
	}
}

// Cancelling Start lets the reconciles in flight finish before Start
// returns; runnables on every replica stop after the controllers.
func TestGracefulShutdownDrainsReconciles(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testGracefulShutdownDrainsReconciles)
}

func testGracefulShutdownDrainsReconciles(t *testing.T, env *apiservertest.Env) {
	ns, cfg := env.Namespace, env.Config()
	mgr, err := manager.New(cfg, manager.Options{})
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	var finished atomic.Bool
	var order []string
	var mu sync.Mutex // guards order
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		if req.Name != "slow" {
			return reconcile.Result{}, nil
		}
		close(entered)
		time.Sleep(300 * time.Millisecond) // work that does not watch ctx
		finished.Store(true)
		note("reconcile finished")
		return reconcile.Result{}, nil
	})
	if err := builder.ControllerManagedBy(mgr).For(&corev1.ConfigMap{}, builder.WithScope(informer.Scope{Namespace: ns})).Complete(r); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(everyReplicaFunc(func(ctx context.Context) error {
		<-ctx.Done()
		note("every-replica runnable stopped")
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Client().Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slow"}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := run(t, ctx, mgr)
	<-entered
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Start: %v", err)
	}
	if !finished.Load() {
		t.Fatal("Start returned before the reconcile in flight finished")
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(order, ", "); got != "reconcile finished, every-replica runnable stopped" {
		t.Fatalf("shutdown order: %s", got)
	}
}

// A runnable that outlives GracefulShutdownTimeout is abandoned: Start
// returns ErrShutdownTimeout.
func TestGracefulShutdownTimeout(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testGracefulShutdownTimeout)
}

func testGracefulShutdownTimeout(t *testing.T, env *apiservertest.Env) {
	cfg := env.Config()
	mgr, err := manager.New(cfg, manager.Options{GracefulShutdownTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	stuck := make(chan struct{})
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		<-release // ignores the shutdown
		close(stuck)
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := run(t, ctx, mgr)
	start := time.Now()
	cancel()
	err = <-done
	if !errors.Is(err, manager.ErrShutdownTimeout) {
		t.Fatalf("Start: %v, want ErrShutdownTimeout", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("shutdown took %v with a 100ms timeout", took)
	}
	close(release)
	<-stuck
}

// A failing runnable stops the manager, and Start returns its error.
func TestRunnableFailureStopsManager(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testRunnableFailureStopsManager)
}

func testRunnableFailureStopsManager(t *testing.T, env *apiservertest.Env) {
	cfg := env.Config()
	mgr, err := manager.New(cfg, manager.Options{})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	stopped := make(chan struct{})
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		close(stopped)
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	done := run(t, context.Background(), mgr)
	// Added after Start: runs at once.
	if err := mgr.Add(manager.RunnableFunc(func(context.Context) error { return boom })); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, boom) {
			t.Fatalf("Start: %v, want boom", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the manager did not stop")
	}
	<-stopped
	if err := mgr.Add(manager.RunnableFunc(func(context.Context) error { return nil })); err == nil {
		t.Fatal("Add after the manager stopped succeeded")
	}
}

// Two controllers of one manager cannot share a name.
func TestAddRejectsDuplicateControllerNames(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testAddRejectsDuplicateControllerNames)
}

func testAddRejectsDuplicateControllerNames(t *testing.T, env *apiservertest.Env) {
	cfg := env.Config()
	mgr, err := manager.New(cfg, manager.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil })
	for i := range 2 {
		c, err := controller.New("same", r, controller.Options{})
		if err != nil {
			t.Fatal(err)
		}
		err = mgr.Add(c)
		if (err != nil) != (i == 1) {
			t.Fatalf("Add #%d: %v", i, err)
		}
	}
	if err := mgr.Add(nil); err == nil {
		t.Fatal("Add(nil) succeeded")
	}
}

// The default graceful shutdown timeout is 30 s, measured on the bubble's
// clock: nothing here talks to a server (no informer is created).
func TestDefaultShutdownTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mgr, err := manager.New(&rest.Config{Host: "http://127.0.0.1:1"}, manager.Options{})
		if err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			<-ctx.Done()
			<-release
			return nil
		})); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		synctest.Wait()
		start := time.Now()
		cancel()
		err = <-done
		if !errors.Is(err, manager.ErrShutdownTimeout) {
			t.Fatalf("Start: %v, want ErrShutdownTimeout", err)
		}
		if took := time.Since(start); took != manager.DefaultGracefulShutdownTimeout {
			t.Fatalf("gave up after %v, want %v", took, manager.DefaultGracefulShutdownTimeout)
		}
		close(release)
		synctest.Wait()
	})
}

// A New that fails leaves nothing registered on the registry passed in: the
// same registry serves a New with corrected options.
func TestFailedNewRegistersNothing(t *testing.T) {
	cfg := &rest.Config{Host: "http://127.0.0.1:1"}
	for _, tt := range []struct {
		name string
		bad  manager.Options
	}{
		{"lease not whole seconds", manager.Options{LeaderElection: true, LeaderElectionID: "x", LeaseDuration: 1500 * time.Millisecond}},
		{"invalid lease name", manager.Options{LeaderElection: true, LeaderElectionID: "Not_A_Name"}},
		{"renew deadline above lease", manager.Options{LeaderElection: true, LeaderElectionID: "x", RenewDeadline: time.Minute}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			tt.bad.Registerer = reg
			if _, err := manager.New(cfg, tt.bad); err == nil {
				t.Fatal("New accepted invalid options")
			}
			if _, err := manager.New(cfg, manager.Options{Registerer: reg, LeaderElection: true, LeaderElectionID: "x"}); err != nil {
				t.Fatalf("New on the registry of a failed New: %v", err)
			}
		})
	}
}

// everyReplicaFunc is a Runnable that needs no leadership.
type everyReplicaFunc func(ctx context.Context) error

func (f everyReplicaFunc) Start(ctx context.Context) error { return f(ctx) }
func (everyReplicaFunc) NeedLeaderElection() bool          { return false }
