package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	crbuilder "sigs.k8s.io/controller-runtime/pkg/builder"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	crcontrollerutil "sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	crmanager "sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crpredicate "sigs.k8s.io/controller-runtime/pkg/predicate"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/examples/cloud"
	"kloop.dev/kloop/examples/cloud/cloudclient"
	examplev1 "kloop.dev/kloop/examples/widget/api/v1"
	"kloop.dev/kloop/examples/widget/operator"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/manager"
)

// The convergence race: the Widget operator (examples/widget) on kloop and
// the same reconciler written for controller-runtime, each given the same
// server (a fresh embedded one per run, or the real kube-apiserver), the
// same local cloud settings and the same number of workers; N Widgets are
// created at once and the clock runs until every one is Running with its
// instance and the cloud holds exactly N.

const (
	raceWorkers     = 8
	raceProvision   = 500 * time.Millisecond
	raceVisibility  = 500 * time.Millisecond
	racePendingPoll = time.Second
	racePoll        = 30 * time.Second
	widgetFinalizer = "example.kloop.dev/instance" // the operator's, so that both hold the same
	tagUID          = "widget.kloop.dev/uid"
	tagName         = "widget.kloop.dev/name"
)

// median is the median of f over rs (the mean of the middle two for an
// even count).
func median(rs []raceResult, f func(raceResult) float64) float64 {
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = f(r)
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}

// eventCreates is the verbCounter key of Event creates, counted apart
// from the other creates: both runtimes' recorders write Events one at a
// time from a buffer (and drop them when it is full), so how many are
// written by the time a run converges varies from run to run.
const eventCreates = "create events"

// raceResult is one contender's run, as its process reports it.
type raceResult struct {
	Create     time.Duration    `json:"create"` // to create the N Widgets (part of converge)
	Converge   time.Duration    `json:"converge"`
	Requests   map[string]int64 `json:"requests"` // by verb
	Reconciles int64            `json:"reconciles"`
	PeakHeap   uint64           `json:"peakHeap"` // bytes of heap objects, the whole process (server included)
	CPU        time.Duration    `json:"cpu"`      // user and system time of the whole process during the run
	Created    int64            `json:"created"`  // instances the cloud made
}

func (r raceResult) totalRequests() int64 {
	var n int64
	for _, v := range r.Requests {
		n += v
	}
	return n
}

func (r raceResult) String() string {
	verbs := slices.Sorted(maps.Keys(r.Requests))
	var parts []string
	for _, v := range verbs {
		parts = append(parts, fmt.Sprintf("%s %d", v, r.Requests[v]))
	}
	return fmt.Sprintf("created in %.2fs, converged in %.2fs, %.2f CPU-s, %d API requests (%s), %d reconciles, peak heap %.0f MB, %d instances created",
		r.Create.Seconds(), r.Converge.Seconds(), r.CPU.Seconds(), r.totalRequests(), strings.Join(parts, ", "), r.Reconciles, float64(r.PeakHeap)/(1<<20), r.Created)
}

// verbCounter counts a client's API requests by verb.
type verbCounter struct {
	next http.RoundTripper
	mu   sync.Mutex // guards n
	n    map[string]int64
}

func (c *verbCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	verb := ""
	switch r.Method {
	case http.MethodGet:
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		q := r.URL.Query()
		switch {
		case q.Get("watch") == "true" || q.Get("watch") == "1":
			verb = "watch"
		case (len(parts) == 5 && parts[0] == "apis" || len(parts) == 4 && parts[0] == "api") && parts[len(parts)-2] != "namespaces",
			len(parts) == 6 && parts[0] == "apis" && parts[3] == "namespaces",
			len(parts) == 5 && parts[0] == "api" && parts[2] == "namespaces":
			verb = "list"
		default:
			verb = "get" // objects, and discovery
		}
	case http.MethodPost:
		verb = "create"
		if strings.HasSuffix(r.URL.Path, "/events") {
			verb = eventCreates
		}
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	default:
		verb = strings.ToLower(r.Method)
	}
	c.mu.Lock()
	c.n[verb]++
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

func (c *verbCounter) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

// raceContender starts an operator on cfg's namespace ns with the cloud
// client cc; it returns a function that counts its reconciles and one that
// stops it.
type raceContender func(tb testing.TB, cfg *rest.Config, ns string, cc *cloudclient.Client) (reconciles func() int64, stop func())

func raceScheme(tb testing.TB) *kruntime.Scheme {
	s := kruntime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(s), examplev1.AddToScheme(s)); err != nil {
		tb.Fatal(err)
	}
	return s
}

func kloopRace(tb testing.TB, cfg *rest.Config, ns string, cc *cloudclient.Client) (func() int64, func()) {
	reg := prometheus.NewRegistry()
	mgr, err := manager.New(cfg, manager.Options{Logger: quiet(), Registerer: reg,
		Cache: informer.FactoryOptions{Scheme: raceScheme(tb), DefaultNamespaces: []string{ns}}})
	if err != nil {
		tb.Fatal(err)
	}
	if err := operator.AddToManager(mgr, cc, operator.Options{Workers: raceWorkers, PendingPoll: racePendingPoll,
		Poll: racePoll, NoWidgetSets: true}); err != nil {
		tb.Fatal(err)
	}
	reconciles := func() int64 {
		fams, _ := reg.Gather()
		var n float64
		for _, f := range fams {
			if f.GetName() == "controller_runtime_reconcile_total" {
				for _, m := range f.GetMetric() {
					n += m.GetCounter().GetValue()
				}
			}
		}
		return int64(n)
	}
	return reconciles, runManager(tb, "kloop", mgr.Start)
}

func controllerRuntimeRace(tb testing.TB, cfg *rest.Config, ns string, cc *cloudclient.Client) (func() int64, func()) {
	silenceControllerRuntime.Do(func() { crlog.SetLogger(logr.Discard()) })
	mgr, err := ctrl.NewManager(cfg, crmanager.Options{
		Scheme:                 raceScheme(tb),
		Logger:                 logr.Discard(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  crcache.Options{DefaultNamespaces: map[string]crcache.Config{ns: {}}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	r := &crWidgetReconciler{c: mgr.GetClient(), cloud: cc, rec: mgr.GetEventRecorderFor("widget-controller")} //nolint:staticcheck // core/v1 Events, as kloop's recorder
	err = ctrl.NewControllerManagedBy(mgr).Named("widget").
		For(&examplev1.Widget{}, crbuilder.WithPredicates(crpredicate.GenerationChangedPredicate{})).
		WithOptions(crcontroller.Options{MaxConcurrentReconciles: raceWorkers, SkipNameValidation: ptr(true)}).
		Complete(r)
	if err != nil {
		tb.Fatal(err)
	}
	return r.reconciles.Load, runManager(tb, "controller-runtime", mgr.Start)
}

// crWidgetReconciler is examples/widget's WidgetReconciler written for
// controller-runtime: the same steps, calls and writes, with its client,
// its controllerutil and its event recorder.
type crWidgetReconciler struct {
	c          crclient.Client
	cloud      *cloudclient.Client
	rec        record.EventRecorder
	reconciles atomic.Int64
}

func (r *crWidgetReconciler) Reconcile(ctx context.Context, req crreconcile.Request) (crreconcile.Result, error) {
	r.reconciles.Add(1)
	var w examplev1.Widget
	if err := r.c.Get(ctx, req.NamespacedName, &w); err != nil {
		return crreconcile.Result{}, crclient.IgnoreNotFound(err)
	}
	if !w.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, &w)
	}
	if crcontrollerutil.AddFinalizer(&w, widgetFinalizer) {
		if err := r.c.Update(ctx, &w); err != nil {
			return crreconcile.Result{}, err
		}
	}
	for k := range w.Spec.Tags {
		if strings.HasPrefix(k, "widget.kloop.dev/") {
			err := fmt.Errorf("spec.tags[%q]: keys under widget.kloop.dev/ are the operator's", k)
			r.rec.Eventf(&w, corev1.EventTypeWarning, "InvalidSpec", "%v", err)
			if err := r.setStatus(ctx, &w, examplev1.StateFailed, w.Status.InstanceID, w.Status.Endpoint, metav1.ConditionFalse, "InvalidSpec", err.Error()); err != nil {
				return crreconcile.Result{}, err
			}
			return crreconcile.Result{}, crreconcile.TerminalError(err)
		}
	}
	inst, err := r.lookup(ctx, &w)
	if err != nil {
		return crreconcile.Result{}, err
	}
	created := false
	if inst == nil {
		in, err := r.cloud.Create(ctx, cloudclient.CreateInput{ClientToken: "widget-" + string(w.UID),
			Region: w.Spec.Region, Size: crSize(&w.Spec), Tags: crTags(&w)})
		if cloudclient.IsParameterMismatch(err) {
			return crreconcile.Result{RequeueAfter: racePendingPoll}, nil // made already, not shown yet
		}
		if err != nil {
			return crreconcile.Result{}, fmt.Errorf("creating the instance: %w", err)
		}
		inst, created = &in, true
		r.rec.Eventf(&w, corev1.EventTypeNormal, "Created", "instance %s (%s, %s)", in.ID, in.Region, in.Size)
	}
	if want := crTags(&w); inst.Size != crSize(&w.Spec) || !maps.Equal(inst.Tags, want) {
		in, err := r.cloud.Modify(ctx, inst.ID, cloudclient.ModifyInput{Size: crSize(&w.Spec), Tags: want})
		if err != nil {
			return crreconcile.Result{}, err
		}
		inst = &in
		r.rec.Eventf(&w, corev1.EventTypeNormal, "Modified", "instance %s: size %s, %d tags", in.ID, in.Size, len(in.Tags))
	}
	state, status, reason, msg := examplev1.StatePending, metav1.ConditionFalse, "Provisioning", "instance "+inst.ID+" is "+string(inst.State)
	if inst.State == cloudclient.Running {
		state, status, reason, msg = examplev1.StateRunning, metav1.ConditionTrue, "Running", "instance "+inst.ID+" runs at "+inst.Endpoint
	}
	wasRunning := w.Status.State == examplev1.StateRunning
	if err := r.setStatus(ctx, &w, state, inst.ID, inst.Endpoint, status, reason, msg); err != nil {
		return crreconcile.Result{}, err
	}
	if state == examplev1.StateRunning && !wasRunning {
		r.rec.Eventf(&w, corev1.EventTypeNormal, "Running", "instance %s runs at %s", inst.ID, inst.Endpoint)
	}
	if created || state != examplev1.StateRunning {
		return crreconcile.Result{RequeueAfter: racePendingPoll}, nil
	}
	return crreconcile.Result{RequeueAfter: racePoll}, nil
}

func (r *crWidgetReconciler) lookup(ctx context.Context, w *examplev1.Widget) (*cloudclient.Instance, error) {
	if id := w.Status.InstanceID; id != "" {
		in, err := r.cloud.Get(ctx, id)
		if err == nil {
			return &in, nil
		}
		if !cloudclient.IsNotFound(err) {
			return nil, err
		}
	}
	found, err := r.cloud.ListByTags(ctx, map[string]string{tagUID: string(w.UID)})
	if err != nil || len(found) == 0 {
		return nil, err
	}
	slices.SortFunc(found, func(a, b cloudclient.Instance) int { return a.CreatedAt.Compare(b.CreatedAt) })
	for _, dup := range found[1:] {
		if err := r.cloud.Delete(ctx, dup.ID); err != nil && !cloudclient.IsNotFound(err) {
			return nil, err
		}
	}
	return &found[0], nil
}

func (r *crWidgetReconciler) finalize(ctx context.Context, w *examplev1.Widget) (crreconcile.Result, error) {
	if !crcontrollerutil.ContainsFinalizer(w, widgetFinalizer) {
		return crreconcile.Result{}, nil
	}
	var ids []string
	if w.Status.InstanceID != "" {
		ids = append(ids, w.Status.InstanceID)
	}
	found, err := r.cloud.ListByTags(ctx, map[string]string{tagUID: string(w.UID)})
	if err != nil {
		return crreconcile.Result{}, err
	}
	for _, in := range found {
		if !slices.Contains(ids, in.ID) {
			ids = append(ids, in.ID)
		}
	}
	if len(ids) == 0 {
		since := w.CreationTimestamp.Time
		if w.DeletionTimestamp != nil && w.DeletionTimestamp.After(since) {
			since = w.DeletionTimestamp.Time
		}
		if left := 10*time.Second - time.Since(since.Add(time.Second)); left > 0 {
			return crreconcile.Result{RequeueAfter: left}, nil
		}
	}
	if err := r.setStatus(ctx, w, examplev1.StateDeleting, w.Status.InstanceID, "", metav1.ConditionFalse, "Deleting", "deleting instance "+strings.Join(ids, ", ")); err != nil {
		return crreconcile.Result{}, err
	}
	for _, id := range ids {
		if err := r.cloud.Delete(ctx, id); err != nil && !cloudclient.IsNotFound(err) {
			return crreconcile.Result{}, err
		}
	}
	crcontrollerutil.RemoveFinalizer(w, widgetFinalizer)
	return crreconcile.Result{}, r.c.Update(ctx, w)
}

// setStatus writes the status if it changed, as controllerutil.UpdateStatus
// does in kloop.
func (r *crWidgetReconciler) setStatus(ctx context.Context, w *examplev1.Widget, state, id, endpoint string, ready metav1.ConditionStatus, reason, msg string) error {
	before := w.Status.DeepCopy()
	w.Status.State, w.Status.InstanceID, w.Status.Endpoint = state, id, endpoint
	w.Status.ObservedGeneration = w.Generation
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{
		Type: examplev1.ConditionReady, Status: ready, Reason: reason, Message: msg, ObservedGeneration: w.Generation,
	})
	if equality.Semantic.DeepEqual(before, &w.Status) {
		return nil
	}
	return r.c.Status().Update(ctx, w)
}

func crSize(s *examplev1.WidgetSpec) string {
	if s.Size == "" {
		return "small"
	}
	return s.Size
}

func crTags(w *examplev1.Widget) map[string]string {
	tags := maps.Clone(w.Spec.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	tags[tagUID] = string(w.UID)
	tags[tagName] = w.Namespace + "/" + w.Name
	return tags
}

// inPart runs f with the profiler label part=name, which the goroutines f
// starts keep: a run's CPU profile ($KLOOP_BENCH_RACE_CPUPROFILE) splits
// by part with `go tool pprof -tags` (server, cloud, operator, harness;
// the garbage collector's own work has no label).
func inPart(name string, f func()) {
	pprof.Do(context.Background(), pprof.Labels("part", name), func(context.Context) { f() })
}

// processCPU is the user and system time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heapPeak samples the heap every 20 ms until stop is called.
func heapPeak() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > peak.Load() {
			peak.Store(v)
		}
	}
	wg.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			read()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() uint64 { close(done); wg.Wait(); return peak.Load() }
}

// raceTarget is the server of the race: $KLOOP_BENCH_RACE_TARGET (embedded
// or real), embedded by default.
func raceTarget() apiservertest.Target {
	if os.Getenv("KLOOP_BENCH_RACE_TARGET") == string(apiservertest.RealServer) {
		return apiservertest.RealServer
	}
	return apiservertest.Embedded
}

// runRace runs one contender at n Widgets on a server of its own (on the
// real target, a namespace of its own).
func runRace(tb testing.TB, n int, c raceContender) raceResult {
	crds := []string{"../examples/widget/config/crd/bases"}
	var baseCfg *rest.Config
	var ns string
	if raceTarget() == apiservertest.Embedded {
		// A server of the run's own, closed when the run ends (not when
		// the benchmark does, as a test's cleanup would): the next run's
		// heap and CPU are its own.
		var srv *apiservertest.Server
		var err error
		inPart("server", func() { srv, err = apiservertest.New(apiservertest.Options{CRDPaths: crds}) })
		if err != nil {
			tb.Fatal(err)
		}
		defer func() {
			if err := srv.Close(); err != nil {
				tb.Error(err)
			}
		}()
		baseCfg, ns = srv.Config(), "default"
	} else {
		env := apiservertest.Start(tb, apiservertest.RealServer, apiservertest.Options{CRDPaths: crds})
		baseCfg, ns = env.Config(), env.Namespace
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl, err := cloud.New(cloud.Options{ProvisionDelay: raceProvision, VisibilityDelay: raceVisibility, Logger: quiet()})
	if err != nil {
		tb.Fatal(err)
	}
	cloudDone := make(chan error, 1)
	inPart("cloud", func() { go func() { cloudDone <- cl.Start(ctx) }() })
	defer func() { cancel(); <-cloudDone }()
	cc, err := cloudclient.New(cl.URL(), cloudclient.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	admin, err := client.New(rest.CopyConfig(baseCfg), client.Options{Scheme: raceScheme(tb), Logger: quiet()})
	if err != nil {
		tb.Fatal(err)
	}

	counter := &verbCounter{n: map[string]int64{}}
	cfg := rest.CopyConfig(baseCfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	runtime.GC()
	stopHeap := heapPeak()
	var reconciles func() int64
	var stop func()
	inPart("operator", func() { reconciles, stop = c(tb, cfg, ns, cc) })
	defer stop()

	defer pprof.SetGoroutineLabels(ctx)
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels("part", "harness"))) // the finish line, the writers
	watching, err := watchRunning(ctx, rest.CopyConfig(baseCfg), ns)
	if err != nil {
		tb.Fatal(err)
	}
	start, cpu0 := time.Now(), processCPU()
	var wg sync.WaitGroup
	const writers = 16
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := w; i < n; i += writers {
				wd := &examplev1.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("w%05d", i)},
					Spec: examplev1.WidgetSpec{Region: "local-1", Size: "small"}}
				if err := admin.Create(ctx, wd); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		tb.Fatal(err)
	}
	created := time.Since(start)
	deadline := time.NewTimer(20 * time.Minute)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	timeline := os.Getenv("KLOOP_BENCH_RACE_TIMELINE") != ""
	lastLine := time.Now()
	for done := false; !done; {
		select {
		case err := <-watching.err:
			tb.Fatalf("watching Widgets: %v", err)
		case <-deadline.C:
			tb.Fatalf("%d Widgets not converged after 20 minutes: %d Running, cloud %+v", n, watching.count(), cl.Stats())
		case <-tick.C:
		}
		if timeline && time.Since(lastLine) >= time.Second {
			lastLine = time.Now()
			tb.Logf("t=%.0fs: %d reconciles, %d Widgets Running, cloud %+v, requests %v",
				time.Since(start).Seconds(), reconciles(), watching.count(), cl.Stats(), counter.snapshot())
		}
		done = watching.count() == n && cloudRunning(cl) == n // the cloud is read only once the Widgets say so
	}
	res := raceResult{Create: created, Converge: time.Since(start), Reconciles: reconciles(), CPU: processCPU() - cpu0}
	res.PeakHeap = stopHeap()
	res.Requests = counter.snapshot()
	res.Created = cl.Stats().Created
	if res.Created != int64(n) {
		tb.Errorf("the cloud made %d instances for %d Widgets", res.Created, n)
	}
	return res
}

// cloudRunning is the number of running instances in cl.
func cloudRunning(cl *cloud.Cloud) int {
	running := 0
	for _, in := range cl.Instances() {
		if in.State == cloudclient.Running {
			running++
		}
	}
	return running
}

// runningWatch counts, from a watch, the Widgets whose status says Running
// for their generation: the race's finish line, seen without listing every
// Widget again and again (which, at 10,000, would cost the server more
// than either contender).
type runningWatch struct {
	mu      sync.Mutex      // guards running and n
	running map[string]bool // name -> Running for its generation
	n       int             // how many of running are true
	err     chan error      // the watch's end, other than by ctx
}

func (w *runningWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// set records name's state (deleted: gone).
func (w *runningWatch) set(name string, running, deleted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running[name] {
		w.n--
	}
	if deleted {
		delete(w.running, name)
		return
	}
	w.running[name] = running
	if running {
		w.n++
	}
}

// raceWatchEvent is what the finish line reads of a watch event: a
// Widget's name, generation and status, decoded without the rest.
type raceWatchEvent struct {
	Type   watch.EventType `json:"type"`
	Object struct {
		Metadata struct {
			Name            string `json:"name"`
			ResourceVersion string `json:"resourceVersion"`
			Generation      int64  `json:"generation"`
		} `json:"metadata"`
		Status struct {
			State              string `json:"state"`
			ObservedGeneration int64  `json:"observedGeneration"`
		} `json:"status"`
	} `json:"object"`
}

// watchRunning watches ns's Widgets until ctx ends, resuming a watch the
// server closed from its last resourceVersion. It decodes only the fields
// it reads: the finish line should cost both contenders little.
func watchRunning(ctx context.Context, cfg *rest.Config, ns string) (*runningWatch, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	rw := &runningWatch{running: map[string]bool{}, err: make(chan error, 1)}
	rv := ""
	open := func() (*http.Response, error) {
		u := fmt.Sprintf("%s/apis/%s/namespaces/%s/widgets?watch=1&allowWatchBookmarks=true&resourceVersion=%s",
			strings.TrimSuffix(cfg.Host, "/"), examplev1.GroupVersion(), ns, rv)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("watching Widgets: %s", resp.Status)
		}
		return resp, nil
	}
	resp, err := open()
	if err != nil {
		return nil, err
	}
	go func() {
		defer func() { resp.Body.Close() }()
		dec := json.NewDecoder(resp.Body)
		for {
			var ev raceWatchEvent
			if err := dec.Decode(&ev); err != nil {
				resp.Body.Close()
				if ctx.Err() != nil {
					return
				}
				if resp, err = open(); err != nil {
					rw.err <- err
					return
				}
				dec = json.NewDecoder(resp.Body)
				continue
			}
			m := ev.Object.Metadata
			switch ev.Type {
			case watch.Error:
				rw.err <- fmt.Errorf("watch error event (resourceVersion %s)", rv)
				return
			case watch.Bookmark:
				rv = m.ResourceVersion
				continue
			}
			rv = m.ResourceVersion
			rw.set(m.Name, ev.Object.Status.State == examplev1.StateRunning && ev.Object.Status.ObservedGeneration == m.Generation,
				ev.Type == watch.Deleted)
		}
	}()
	return rw, nil
}

var raceContenders = []struct {
	name string
	run  raceContender
}{
	{"kloop", kloopRace},
	{"controller-runtime", controllerRuntimeRace},
}

// TestWidgetRaceContenders: both operators converge a few Widgets with one
// instance each (what the benchmark times).
func TestWidgetRaceContenders(t *testing.T) {
	for _, c := range raceContenders {
		t.Run(c.name, func(t *testing.T) {
			res := runRace(t, 40, c.run)
			if res.Reconciles < 40 {
				t.Errorf("%d reconciles for 40 Widgets", res.Reconciles)
			}
			t.Log(res)
		})
	}
}

// envRaceRun makes TestWidgetRaceRun run one contender once in this
// process and print its result: "NAME:N" (kloop:1000).
const envRaceRun = "KLOOP_BENCH_RACE_RUN"

// raceResultPrefix starts the line of a child's result (JSON).
const raceResultPrefix = "RACE-RESULT "

// TestWidgetRaceRun is the child of BenchmarkWidgetConvergence: with
// $KLOOP_BENCH_RACE_RUN set, it runs that contender once and prints the
// result, so that each run of the benchmark has a process of its own (its
// heap, CPU time and garbage, nobody else's: controller-runtime's run
// leaves the server it ran against reachable through client-go's global
// state). Without it, it checks that round trip with kloop at 20 Widgets.
func TestWidgetRaceRun(t *testing.T) {
	if v := os.Getenv(envRaceRun); v != "" {
		name, nStr, _ := strings.Cut(v, ":")
		var n int
		if _, err := fmt.Sscan(nStr, &n); err != nil || n < 1 {
			t.Fatalf("%s=%q: want NAME:N", envRaceRun, v)
		}
		i := slices.IndexFunc(raceContenders, func(c struct {
			name string
			run  raceContender
		}) bool {
			return c.name == name
		})
		if i < 0 {
			t.Fatalf("%s=%q: no contender %q", envRaceRun, v, name)
		}
		res := runRace(t, n, raceContenders[i].run)
		data, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("\n%s%s\n", raceResultPrefix, data)
		return
	}
	res, err := raceInProcess(t.Context(), "kloop", 20, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if res.Created != 20 || res.Reconciles < 20 || res.Converge <= 0 || res.CPU <= 0 || res.PeakHeap == 0 || res.Requests["update"] < 40 {
		t.Errorf("child's result: %+v", res)
	}
}

// raceInProcess runs contender name at n Widgets in a new process (this
// test binary, running TestWidgetRaceRun) and returns its result; logf
// gets the child's other lines when $KLOOP_BENCH_RACE_TIMELINE is set.
// With $KLOOP_BENCH_RACE_CPUPROFILE set to a directory, the child writes
// its CPU profile there (NAME-N-*.prof).
func raceInProcess(ctx context.Context, name string, n int, logf func(string, ...any)) (raceResult, error) {
	args := []string{"-test.run=^TestWidgetRaceRun$", "-test.count=1"}
	timeline := os.Getenv("KLOOP_BENCH_RACE_TIMELINE") != ""
	if timeline {
		args = append(args, "-test.v")
	}
	if dir := os.Getenv("KLOOP_BENCH_RACE_CPUPROFILE"); dir != "" {
		f, err := os.CreateTemp(dir, fmt.Sprintf("%s-%d-*.prof", name, n))
		if err != nil {
			return raceResult{}, err
		}
		f.Close()
		args = append(args, "-test.cpuprofile="+f.Name())
	}
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s:%d", envRaceRun, name, n))
	out, err := cmd.CombinedOutput()
	var res raceResult
	found := false
	for line := range strings.Lines(string(out)) {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, raceResultPrefix); ok {
			if jerr := json.Unmarshal([]byte(rest), &res); jerr != nil {
				return res, fmt.Errorf("%s at %d Widgets: result %q: %w", name, n, rest, jerr)
			}
			found = true
		} else if timeline && line != "" {
			logf("%s: %s", name, line)
		}
	}
	if err != nil || !found {
		return res, fmt.Errorf("%s at %d Widgets: %v (found a result: %v); output:\n%s", name, n, err, found, out)
	}
	return res, nil
}

// BenchmarkWidgetConvergence is the race at 1,000 and 10,000 Widgets
// (KLOOP_BENCH_RACE_N="1000,10000" by default): each iteration runs each
// contender once, each run in a process of its own, who goes first
// alternating; the ratios are of the medians.
//
//	go test -run XXX -bench WidgetConvergence -benchtime 5x -timeout 60m .
//	KLOOP_BENCH_RACE_TARGET=real go test -run XXX -bench WidgetConvergence -benchtime 3x -timeout 60m .
func BenchmarkWidgetConvergence(b *testing.B) {
	sizes := []int{1000, 10000}
	if v := os.Getenv("KLOOP_BENCH_RACE_N"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			var n int
			if _, err := fmt.Sscan(f, &n); err != nil || n < 1 {
				b.Fatalf("KLOOP_BENCH_RACE_N=%q: want sizes such as 1000,10000", v)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("widgets=%d", n), func(b *testing.B) {
			results := map[string][]raceResult{}
			for i := range b.N {
				order := slices.Clone(raceContenders)
				if i%2 == 1 { // alternate who runs first
					slices.Reverse(order)
				}
				for _, c := range order {
					if only := os.Getenv("KLOOP_BENCH_RACE_ONLY"); only != "" && only != c.name {
						continue
					}
					res, err := raceInProcess(b.Context(), c.name, n, b.Logf)
					if err != nil {
						b.Fatal(err)
					}
					results[c.name] = append(results[c.name], res)
					b.Logf("%s at %d Widgets (%s): %s", c.name, n, raceTarget(), res)
				}
			}
			k, cr := results["kloop"], results["controller-runtime"]
			if len(k) == 0 || len(cr) == 0 {
				return // one contender only ($KLOOP_BENCH_RACE_ONLY)
			}
			secs := func(r raceResult) float64 { return r.Converge.Seconds() }
			cpu := func(r raceResult) float64 { return r.CPU.Seconds() }
			reqs := func(r raceResult) float64 { return float64(r.totalRequests()) }
			writes := func(r raceResult) float64 { return float64(r.totalRequests() - r.Requests[eventCreates]) }
			recs := func(r raceResult) float64 { return float64(r.Reconciles) }
			heap := func(r raceResult) float64 { return float64(r.PeakHeap) }
			b.ReportMetric(median(k, secs), "kloop-s")
			b.ReportMetric(median(cr, secs), "cr-s")
			b.ReportMetric(median(k, reqs), "kloop-requests")
			b.ReportMetric(median(cr, reqs), "cr-requests")
			ratio := func(f func(raceResult) float64) float64 { return median(k, f) / median(cr, f) }
			// The ratios on the benchmark's line too: go test truncates a
			// benchmark's log.
			b.ReportMetric(ratio(secs), "time-ratio")
			b.ReportMetric(ratio(cpu), "cpu-ratio")
			b.Logf("ratio widgets=%d %s, medians of %d runs each: time kloop/controller-runtime=%.2f cpu=%.2f requests=%.2f (without Events %.2f) reconciles=%.2f peak-heap=%.2f",
				n, raceTarget(), len(k), ratio(secs), ratio(cpu), ratio(reqs), ratio(writes), ratio(recs), ratio(heap))
		})
	}
}
