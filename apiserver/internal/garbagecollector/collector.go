package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/internal/inproc"
	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/reconcile"
	"kloop.dev/kloop/reflector"
	"kloop.dev/kloop/workqueue"
)

// Options configure a Collector. Config is required; the rest has
// defaults.
type Options struct {
	// Config reaches the API server as the collector's identity (kube's
	// is the ServiceAccount kube-system/generic-garbage-collector).
	Config *rest.Config
	// Workers is the number of workers of each of the two queues
	// (attempts to delete, attempts to orphan). Default 8 (kube: 20, over
	// a network).
	Workers int
	// ResyncPeriod is how often discovery is read again for resources
	// that came or went without a CRD event (Trigger). Default 30 s, as
	// kube-controller-manager's garbage collector.
	ResyncPeriod time.Duration
	// InitialSyncTimeout bounds the wait for the monitors' first lists
	// before the collector works anyway. Default 30 s.
	InitialSyncTimeout time.Duration
	// Logger receives the collector's logs. Default: discards.
	Logger *slog.Logger
	// QueueMetrics reads the statistics of the collector's three queues
	// (garbage_collector_graph_changes, garbage_collector_attempt_to_delete,
	// garbage_collector_attempt_to_orphan, kube's names). Default: none.
	QueueMetrics workqueue.MetricsProvider
	// ControllerMetrics reads the statistics of its two controllers.
	// Default: none.
	ControllerMetrics controller.MetricsProvider
}

// Stats are the collector's counters, read by Collector.ReadStats.
type Stats struct {
	// DeletionsAttempted counts the deletes the collector sent,
	// DeletionsDone those that succeeded (or found the object gone) and
	// DeletionsFailed those that failed (to be retried).
	DeletionsAttempted, DeletionsDone, DeletionsFailed uint64
	// Orphaned counts the dependents whose reference to an owner deleted
	// with the orphan policy the collector removed.
	Orphaned uint64
	// FinalizersRemoved counts the orphan and foregroundDeletion
	// finalizers it removed from owners once their dependents were
	// orphaned or gone.
	FinalizersRemoved uint64
	// GraphNodes is the number of objects in its owner graph, virtual
	// owners included; Monitors the number of resources it watches.
	GraphNodes, Monitors int
	// ResourceSyncErrors counts discovery reads that failed.
	ResourceSyncErrors uint64
}

// Collector is the garbage collector.
type Collector struct {
	opts   Options
	client inproc.Client

	graphChanges *workqueue.Queue[*event]
	deleteCtl    *controller.Controller
	orphanCtl    *controller.Controller
	absent       *refCache

	// enq holds the controllers' enqueuers once their sources started;
	// ready is closed then.
	enqMu     sync.Mutex
	deleteQ   handler.Enqueuer
	orphanQ   handler.Enqueuer
	enqReady  chan struct{}
	enqClosed bool

	// deleted holds the uids the collector deleted whose deletion the
	// graph has not seen yet (uid → true): a second attempt would only
	// find them gone (a foreground owner requeues its dependents until it
	// sees them go).
	deleted sync.Map

	mu        sync.RWMutex // guards uidToNode and every node's fields
	uidToNode map[types.UID]*node

	resMu     sync.RWMutex // guards resources and monitors
	resources map[schema.GroupVersionKind]resourceInfo
	monitors  map[schema.GroupVersionResource]*monitor
	synced    atomic.Bool // the first monitors synced, or the wait gave up

	trigger chan struct{}     // a discovery resync is wanted
	events  chan corev1.Event // to record (runEvents)
	started atomic.Bool

	stats struct {
		attempted, done, failed, orphaned, finalizers, syncErrors atomic.Uint64
	}
}

// resourceInfo is a deletable resource found in discovery.
type resourceInfo struct {
	gvr        schema.GroupVersionResource
	gvk        schema.GroupVersionKind
	namespaced bool
}

// monitor watches one resource's metadata.
type monitor struct {
	inf    *informer.Informer[*metav1.PartialObjectMetadata]
	cancel context.CancelFunc
	done   chan struct{}
}

// triggerDelay gathers a burst of triggers into one discovery read.
const triggerDelay = 20 * time.Millisecond

// ignoredResources are never watched, as kube's defaults: events.
var ignoredResources = map[schema.GroupResource]bool{
	{Group: "", Resource: "events"}:              true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// New returns a collector; it runs from Start.
func New(opts Options) (*Collector, error) {
	if opts.Config == nil {
		return nil, errors.New("garbagecollector: Options.Config is required")
	}
	if opts.Workers == 0 {
		opts.Workers = 8
	}
	if opts.ResyncPeriod == 0 {
		opts.ResyncPeriod = 30 * time.Second
	}
	if opts.InitialSyncTimeout == 0 {
		opts.InitialSyncTimeout = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Workers < 0 || opts.ResyncPeriod < 0 || opts.InitialSyncTimeout < 0 {
		return nil, errors.New("garbagecollector: Workers, ResyncPeriod and InitialSyncTimeout must not be negative")
	}
	c := &Collector{
		opts:      opts,
		client:    inproc.NewClient(opts.Config),
		absent:    newRefCache(500),
		enqReady:  make(chan struct{}),
		uidToNode: map[types.UID]*node{},
		resources: map[schema.GroupVersionKind]resourceInfo{},
		monitors:  map[schema.GroupVersionResource]*monitor{},
		trigger:   make(chan struct{}, 1),
		events:    make(chan corev1.Event, 1000),
	}
	var err error
	if c.graphChanges, err = workqueue.New(workqueue.Options[*event]{Name: "garbage_collector_graph_changes", Metrics: opts.QueueMetrics}); err != nil {
		return nil, fmt.Errorf("garbagecollector: %w", err)
	}
	// The controllers start working once the first monitors listed (or
	// InitialSyncTimeout passed: queueSource.HasSynced).
	ctlOpts := controller.Options{MaxConcurrentReconciles: opts.Workers, Logger: opts.Logger, Metrics: opts.ControllerMetrics, QueueMetrics: opts.QueueMetrics,
		CacheSyncTimeout: opts.InitialSyncTimeout + time.Minute}
	if c.deleteCtl, err = controller.New("garbage_collector_attempt_to_delete", reconcile.Func(c.attemptToDelete), ctlOpts); err != nil {
		return nil, fmt.Errorf("garbagecollector: %w", err)
	}
	if c.orphanCtl, err = controller.New("garbage_collector_attempt_to_orphan", reconcile.Func(c.attemptToOrphan), ctlOpts); err != nil {
		return nil, fmt.Errorf("garbagecollector: %w", err)
	}
	if err := c.deleteCtl.Watch(&queueSource{c: c, orphan: false}); err != nil {
		return nil, err
	}
	if err := c.orphanCtl.Watch(&queueSource{c: c, orphan: true}); err != nil {
		return nil, err
	}
	return c, nil
}

// ReadStats fills s with the collector's counters.
func (c *Collector) ReadStats(s *Stats) {
	s.DeletionsAttempted = c.stats.attempted.Load()
	s.DeletionsDone = c.stats.done.Load()
	s.DeletionsFailed = c.stats.failed.Load()
	s.Orphaned = c.stats.orphaned.Load()
	s.FinalizersRemoved = c.stats.finalizers.Load()
	s.ResourceSyncErrors = c.stats.syncErrors.Load()
	c.mu.RLock()
	s.GraphNodes = len(c.uidToNode)
	c.mu.RUnlock()
	c.resMu.RLock()
	s.Monitors = len(c.monitors)
	c.resMu.RUnlock()
}

// Trigger asks for a discovery resync soon (a CRD was created, changed or
// deleted).
func (c *Collector) Trigger() {
	select {
	case c.trigger <- struct{}{}:
	default:
	}
}

// Start runs the collector until ctx is cancelled.
func (c *Collector) Start(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("garbagecollector: started twice")
	}
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	wg.Go(func() { errc <- c.deleteCtl.Start(ctx) })
	wg.Go(func() { errc <- c.orphanCtl.Start(ctx) })
	wg.Go(func() {
		select {
		case <-c.enqReady:
		case <-ctx.Done():
			return
		}
		c.processGraphChanges()
	})
	wg.Go(func() { c.syncLoop(ctx) })
	wg.Go(func() { c.runEvents(ctx) })
	<-ctx.Done()
	c.graphChanges.ShutDown()
	c.stopMonitors()
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			return err
		}
	}
	return nil
}

// queueSource is a controller.Source that hands the collector the
// controller's enqueuer; the graph builder adds the work.
type queueSource struct {
	c      *Collector
	orphan bool
}

func (s *queueSource) Start(ctx context.Context, q, _ handler.Enqueuer) error {
	c := s.c
	c.enqMu.Lock()
	if s.orphan {
		c.orphanQ = q
	} else {
		c.deleteQ = q
	}
	if c.orphanQ != nil && c.deleteQ != nil && !c.enqClosed {
		c.enqClosed = true
		close(c.enqReady)
	}
	c.enqMu.Unlock()
	<-ctx.Done()
	return nil
}

func (s *queueSource) HasSynced() bool { return s.c.synced.Load() }

func (s *queueSource) String() string { return "garbage collector graph" }

// request is a node's key in the controllers' queues: its uid.
func request(uid types.UID) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Name: string(uid)}}
}

func (c *Collector) enqueueDelete(n *node) { c.deleteQ.Add(request(n.identity.UID)) }

func (c *Collector) enqueueDeleteLater(n *node, d time.Duration) {
	c.deleteQ.AddAfter(request(n.identity.UID), d)
}

func (c *Collector) enqueueOrphan(n *node) { c.orphanQ.Add(request(n.identity.UID)) }

// syncLoop reads discovery at the start, on Trigger and every
// ResyncPeriod, and runs a monitor for each deletable resource.
func (c *Collector) syncLoop(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	first := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-c.trigger:
			// A CRD's create is followed by its status (Established) and
			// the kind served: a burst of triggers, read once after it.
			select {
			case <-ctx.Done():
				return
			case <-time.After(triggerDelay):
			}
			select {
			case <-c.trigger:
			default:
			}
		}
		if err := c.syncResources(ctx); err != nil && ctx.Err() == nil {
			c.stats.syncErrors.Add(1)
			c.opts.Logger.Warn("garbage collector: reading discovery", "err", err)
		}
		if first {
			first = false
			wg.Go(func() { c.waitInitialSync(ctx) })
		}
		timer.Reset(c.opts.ResyncPeriod)
	}
}

// waitInitialSync marks the collector synced once the first monitors have
// listed, or InitialSyncTimeout passed (kube's collector then proceeds
// anyway).
func (c *Collector) waitInitialSync(ctx context.Context) {
	deadline := time.Now().Add(c.opts.InitialSyncTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if c.monitorsSynced() {
			break
		}
		time.Sleep(time.Millisecond)
	}
	c.synced.Store(true)
}

func (c *Collector) monitorsSynced() bool {
	c.resMu.RLock()
	defer c.resMu.RUnlock()
	for _, m := range c.monitors {
		if !m.inf.HasSynced() {
			return false
		}
	}
	return len(c.monitors) > 0
}

// syncResources reads the deletable resources from aggregated discovery
// (each group's preferred version; verbs delete, list and watch), starts a
// monitor for each new one and stops those of resources gone.
func (c *Collector) syncResources(ctx context.Context) error {
	found := map[schema.GroupVersionKind]resourceInfo{}
	var deletable []resourceInfo
	for _, path := range []string{"/api", "/apis"} {
		var list apidiscoveryv2.APIGroupDiscoveryList
		if err := c.discovery(ctx, path, &list); err != nil {
			return err
		}
		for _, g := range list.Items {
			for vi, v := range g.Versions {
				for _, r := range v.Resources {
					if r.ResponseKind == nil || r.ResponseKind.Kind == "" {
						continue
					}
					info := resourceInfo{
						gvr:        schema.GroupVersionResource{Group: g.Name, Version: v.Version, Resource: r.Resource},
						gvk:        schema.GroupVersionKind{Group: g.Name, Version: v.Version, Kind: r.ResponseKind.Kind},
						namespaced: r.Scope == apidiscoveryv2.ScopeNamespace,
					}
					if _, ok := found[info.gvk]; !ok {
						found[info.gvk] = info
					}
					if vi == 0 && !ignoredResources[info.gvr.GroupResource()] &&
						slices.Contains(r.Verbs, "delete") && slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "watch") {
						deletable = append(deletable, info)
					}
				}
			}
		}
	}
	c.resMu.Lock()
	c.resources = found
	c.resMu.Unlock()
	c.opts.Logger.Debug("garbage collector: discovery read", "resources", len(found), "monitored", len(deletable))
	want := map[schema.GroupVersionResource]bool{}
	for _, r := range deletable {
		want[r.gvr] = true
		c.ensureMonitor(ctx, r.gvr, r.gvk)
	}
	c.resMu.Lock()
	var stale []*monitor
	for gvr, m := range c.monitors {
		if !want[gvr] {
			stale = append(stale, m)
			delete(c.monitors, gvr)
		}
	}
	c.resMu.Unlock()
	for _, m := range stale {
		m.cancel()
		<-m.done
	}
	return nil
}

// discovery reads the aggregated discovery document at path.
func (c *Collector) discovery(ctx context.Context, path string, out *apidiscoveryv2.APIGroupDiscoveryList) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.client.Host()+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
	resp, err := c.client.HTTP().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	return json.Unmarshal(body, out)
}

// ensureMonitor starts a monitor of gvr if there is none.
func (c *Collector) ensureMonitor(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) {
	c.resMu.Lock()
	defer c.resMu.Unlock()
	if _, ok := c.monitors[gvr]; ok {
		return
	}
	lw, err := reflector.NewRESTListerWatcher[*metav1.PartialObjectMetadata](c.opts.Config, gvr, "", reflector.RESTOptions[*metav1.PartialObjectMetadata]{
		DropManagedFields: true, HTTPClient: c.client.HTTP(),
	})
	if err != nil {
		c.opts.Logger.Error("garbage collector: monitor", "resource", gvr.String(), "err", err)
		return
	}
	inf, err := informer.New[*metav1.PartialObjectMetadata](lw, informer.Options[*metav1.PartialObjectMetadata]{
		Name: "garbage-collector " + gvr.String(), Logger: c.opts.Logger,
	})
	if err != nil {
		c.opts.Logger.Error("garbage collector: monitor", "resource", gvr.String(), "err", err)
		return
	}
	if _, err := inf.AddHandler(monitorHandler{c: c, gvk: gvk}, informer.HandlerOptions{Inline: true, ResyncPeriod: informer.NoResync}); err != nil {
		c.opts.Logger.Error("garbage collector: monitor", "resource", gvr.String(), "err", err)
		return
	}
	mctx, cancel := context.WithCancel(ctx)
	m := &monitor{inf: inf, cancel: cancel, done: make(chan struct{})}
	c.monitors[gvr] = m
	go func() {
		defer close(m.done)
		if err := inf.Run(mctx); err != nil && mctx.Err() == nil {
			c.opts.Logger.Error("garbage collector: monitor stopped", "resource", gvr.String(), "err", err)
		}
	}()
}

func (c *Collector) stopMonitors() {
	c.resMu.Lock()
	ms := c.monitors
	c.monitors = map[schema.GroupVersionResource]*monitor{}
	c.resMu.Unlock()
	for _, m := range ms {
		m.cancel()
		<-m.done
	}
}

// monitorHandler turns a monitor's notifications into graph changes.
type monitorHandler struct {
	c   *Collector
	gvk schema.GroupVersionKind
}

func (h monitorHandler) OnAdd(o *metav1.PartialObjectMetadata, _ bool) {
	h.c.graphChanges.Add(&event{typ: addEvent, gvk: h.gvk, obj: o})
}

func (h monitorHandler) OnUpdate(old, o *metav1.PartialObjectMetadata) {
	if old == o {
		return // a resync
	}
	h.c.graphChanges.Add(&event{typ: updateEvent, gvk: h.gvk, obj: o, old: old})
}

func (h monitorHandler) OnDelete(d informer.Deleted[*metav1.PartialObjectMetadata]) {
	if d.Object == nil {
		return
	}
	h.c.graphChanges.Add(&event{typ: deleteEvent, gvk: h.gvk, obj: d.Object})
}

// mapping returns the resource of an apiVersion and kind: the version's
// if served, else the group's preferred one.
func (c *Collector) mapping(apiVersion, kind string) (resourceInfo, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return resourceInfo{}, fmt.Errorf("garbagecollector: apiVersion %q: %w", apiVersion, err)
	}
	c.resMu.RLock()
	defer c.resMu.RUnlock()
	if r, ok := c.resources[gv.WithKind(kind)]; ok {
		return r, nil
	}
	// Perhaps a kind served since the last read (the item is retried with
	// backoff): read discovery again.
	c.Trigger()
	return resourceInfo{}, &restMappingError{kind: kind, version: apiVersion}
}

// restMappingError: a reference to a kind discovery does not show (a
// custom resource not served yet, or an invalid one); the item is retried.
type restMappingError struct{ kind, version string }

func (e *restMappingError) Error() string {
	return fmt.Sprintf("unable to get REST mapping for %s/%s", e.version, e.kind)
}
