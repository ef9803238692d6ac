package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"go.opentelemetry.io/otel/trace"

	"kloop.dev/kloop/client"
	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/liveview"
	irest "kloop.dev/kloop/internal/rest"
	"kloop.dev/kloop/leaderelection"
	"kloop.dev/kloop/metrics"
	"kloop.dev/kloop/workqueue"
)

var (
	// ErrLeadershipLost is wrapped by the error Start returns when this
	// replica led and lost its Lease: its leader-only runnables have stopped
	// and the process should exit. It is leaderelection.ErrLeadershipLost.
	ErrLeadershipLost = leaderelection.ErrLeadershipLost
	// ErrShutdownTimeout is wrapped by the error Start returns when
	// runnables were still running GracefulShutdownTimeout after the
	// shutdown began; they were abandoned.
	ErrShutdownTimeout = errors.New("manager: graceful shutdown timed out")
	// ErrAlreadyStarted is returned by a second call of Start.
	ErrAlreadyStarted = errors.New("manager: Start called more than once")
)

// informerSyncProbeWait bounds how long the "informers" readiness check
// waits for unsynced informers before it reports them.
const informerSyncProbeWait = 50 * time.Millisecond

// Manager runs controllers and other runnables around one shared informer
// factory and one client, with leader election, health probes and metrics.
// See the package documentation.
type Manager struct {
	cfg     *rest.Config
	opts    Options
	log     *slog.Logger
	factory *informer.Factory
	client  *client.Client
	queueM  *metrics.Workqueue
	ctrlM   *metrics.Controller
	elector *leaderelection.Elector // nil without leader election
	webhook webhookServing
	// tracedWrites is shared by the traced controllers (nil without a
	// TracerProvider).
	tracedWrites *controller.WriteSpans
	// timeline and liveView are the live view's (nil without
	// LiveViewBindAddress).
	timeline *liveview.Timeline
	liveView *liveview.Server

	healthz, readyz *checks
	leaders, others *group

	started   atomic.Bool   // Start was called
	startedCh chan struct{} // closed once servers are bound and runnables launched
	electedCh chan struct{} // closed once this replica leads (at Start without leader election)
	elect     sync.Once     // closes electedCh

	mu sync.Mutex // guards names, recorders and the bound addresses
	// names are the names of the controllers added, unique.
	names map[string]bool
	// recorders are the event recorders of Recorder, by component.
	recorders                                       map[string]*client.Recorder
	metricsAddr, probeAddr, pprofAddr, liveViewAddr net.Addr

	errMu sync.Mutex // guards errs, stopping, cancelRun
	// errs are the failures that stop the manager, in order.
	errs []error
	// stopping is set once the shutdown began.
	stopping  bool
	cancelRun context.CancelCauseFunc
}

// New returns a Manager for the API server of cfg. It starts nothing; add
// runnables (the builder adds controllers) and call Start.
func New(cfg *rest.Config, opts Options) (*Manager, error) {
	if cfg == nil {
		return nil, errors.New("manager: New needs a *rest.Config")
	}
	opts.setDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	// Every request of the manager (informers, client, leader election)
	// is counted in rest_client_requests_total, as controller-runtime
	// counts client-go's.
	restM, err := metrics.NewRESTClient(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("manager: REST client metrics: %w", err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(restM.RoundTripper)
	// With a TracerProvider, every request is a span too (around the
	// counting transport).
	tracing := irest.NewTracing(opts.TracerProvider)
	if tracing != nil {
		cfg.Wrap(tracing.Transport)
	}
	if hc := opts.Cache.HTTPClient; hc != nil {
		counted := *hc
		counted.Transport = tracing.Transport(restM.RoundTripper(hc.Transport))
		opts.Cache.HTTPClient = &counted
	}
	factory, err := informer.NewFactory(cfg, opts.Cache)
	if err != nil {
		opts.Registerer.Unregister(restM)
		return nil, fmt.Errorf("manager: informer factory: %w", err)
	}
	clientM, err := metrics.NewClient(opts.Registerer)
	if err != nil {
		opts.Registerer.Unregister(restM)
		return nil, fmt.Errorf("manager: client metrics: %w", err)
	}
	cl, err := client.New(cfg, client.Options{
		Factory:                  factory,
		Uncached:                 opts.Uncached,
		FieldOwner:               opts.FieldOwner,
		Logger:                   opts.Logger,
		DisableReadYourOwnWrites: opts.DisableReadYourOwnWrites,
		ReadYourOwnWritesTimeout: opts.ReadYourOwnWritesTimeout,
		Metrics:                  clientM,
	})
	if err != nil {
		opts.Registerer.Unregister(restM)
		opts.Registerer.Unregister(clientM)
		return nil, fmt.Errorf("manager: client: %w", err)
	}
	// A New that fails unregisters what it registered, so that the
	// registry passed in serves a New with corrected options.
	registered := []prometheus.Collector{restM, clientM}
	failed := func(err error) (*Manager, error) {
		for _, c := range registered {
			opts.Registerer.Unregister(c)
		}
		return nil, err
	}
	queueM, err := metrics.NewWorkqueue(opts.Registerer)
	if err != nil {
		return failed(fmt.Errorf("manager: work queue metrics: %w", err))
	}
	registered = append(registered, queueM)
	ctrlM, err := metrics.NewController(opts.Registerer)
	if err != nil {
		return failed(fmt.Errorf("manager: controller metrics: %w", err))
	}
	registered = append(registered, ctrlM)
	if !opts.DisableRuntimeMetrics {
		rt, err := metrics.RegisterRuntime(opts.Registerer)
		if err != nil {
			return failed(fmt.Errorf("manager: %w", err))
		}
		registered = append(registered, rt...)
	}
	m := &Manager{
		cfg:       cfg, // a copy, with the counting transport
		opts:      opts,
		log:       opts.Logger,
		factory:   factory,
		client:    cl,
		queueM:    queueM,
		ctrlM:     ctrlM,
		healthz:   &checks{path: "healthz"},
		readyz:    &checks{path: "readyz"},
		startedCh: make(chan struct{}),
		electedCh: make(chan struct{}),
		names:     map[string]bool{},
	}
	if err := m.newWebhookServer(&registered); err != nil {
		return failed(err)
	}
	if opts.TracerProvider != nil {
		m.tracedWrites = controller.NewWriteSpans(0)
	}
	if !disabled(opts.LiveViewBindAddress) {
		if m.timeline, err = liveview.NewTimeline(liveview.TimelineOptions{}); err != nil {
			return failed(fmt.Errorf("manager: live view: %w", err))
		}
		m.liveView, err = liveview.New(liveview.Options{Read: m.readPipeline, Timeline: m.timeline,
			Logger: opts.Logger.With("component", "liveview")})
		if err != nil {
			return failed(fmt.Errorf("manager: live view: %w", err))
		}
	}
	m.leaders = newGroup("leader-only", m.fail)
	m.others = newGroup("every-replica", m.fail)
	if opts.LeaderElection {
		lm, err := metrics.NewLeaderElection(opts.Registerer)
		if err != nil {
			return failed(fmt.Errorf("manager: leader election metrics: %w", err))
		}
		registered = append(registered, lm)
		m.elector, err = leaderelection.New(cfg, leaderelection.Options{
			Namespace:       opts.LeaderElectionNamespace,
			Name:            opts.LeaderElectionID,
			Identity:        opts.LeaderElectionIdentity,
			LeaseDuration:   opts.LeaseDuration,
			RenewDeadline:   opts.RenewDeadline,
			RetryPeriod:     opts.RetryPeriod,
			ReleaseOnCancel: new(!opts.LeaderElectionKeepLease),
			Logger:          opts.Logger.With("component", "leaderelection"),
			Metrics:         lm,
		})
		if err != nil {
			return failed(fmt.Errorf("manager: %w", err))
		}
	}
	// Names are valid and unique: these cannot fail.
	_ = m.healthz.add("ping", Ping)
	_ = m.readyz.add("informers", m.informersSynced)
	return m, nil
}

// Client returns the manager's client: reads from the shared informers'
// cache, writes to the API server. In the reconciles of a controller that
// watches a kind with a scope (builder.WithScope), its reads of that kind
// come from the scoped informer the controller watches (client.ReadScopes).
func (m *Manager) Client() *client.Client { return m.client }

// Factory returns the shared informer factory: one informer, one watch and
// one cache per kind for every controller of the manager.
func (m *Manager) Factory() *informer.Factory { return m.factory }

// Scheme returns the scheme of the factory and the client.
func (m *Manager) Scheme() *runtime.Scheme { return m.factory.Scheme() }

// Config returns a copy of the manager's rest.Config, whose transport counts
// its requests in rest_client_requests_total and, with
// Options.TracerProvider, traces them (a client built on it with a
// TracerProvider of its own would trace each request twice).
func (m *Manager) Config() *rest.Config { return rest.CopyConfig(m.cfg) }

// TracerProvider returns Options.TracerProvider (nil: no tracing), for
// controller.Options.TracerProvider (the builder sets it).
func (m *Manager) TracerProvider() trace.TracerProvider { return m.opts.TracerProvider }

// TracedWrites returns the spans of the writes of the manager's traced
// controllers, shared by them (controller.Options.TracedWrites; the builder
// sets it), so that a reconcile of one links to the writes of another;
// nil without a TracerProvider.
func (m *Manager) TracedWrites() *controller.WriteSpans { return m.tracedWrites }

// Observer returns what records the controllers' timelines for the live
// view, for controller.Options.Observer (the builder sets it); nil without
// LiveViewBindAddress.
func (m *Manager) Observer() controller.Observer {
	if m.timeline == nil {
		return nil
	}
	return m.timeline
}

// readPipeline reads the stages' statistics for the live view.
func (m *Manager) readPipeline(s *liveview.Sample) {
	s.Informers = m.factory.InformerStats()
	s.Controllers = map[string]controller.Stats{}
	m.ctrlM.Each(func(name string, st *controller.Stats) { s.Controllers[name] = *st })
	s.Queues = map[string]workqueue.Stats{}
	m.queueM.Each(func(name string, st *workqueue.Stats) { s.Queues[name] = *st })
}

// Logger returns the manager's logger.
func (m *Manager) Logger() *slog.Logger { return m.log }

// Registerer returns the registry the manager's metrics are registered on:
// register your own collectors there to have them served on /metrics.
func (m *Manager) Registerer() prometheus.Registerer { return m.opts.Registerer }

// Gatherer returns what /metrics serves.
func (m *Manager) Gatherer() prometheus.Gatherer { return m.opts.Gatherer }

// QueueMetrics returns the work queue collector, to set as
// controller.Options.QueueMetrics (the builder does).
func (m *Manager) QueueMetrics() *metrics.Workqueue { return m.queueM }

// ControllerMetrics returns the controller collector, to set as
// controller.Options.Metrics (the builder does).
func (m *Manager) ControllerMetrics() *metrics.Controller { return m.ctrlM }

// Recorder returns the event recorder of component (a controller's name,
// such as "widget-controller"), as controller-runtime's
// GetEventRecorderFor: it writes core/v1 Events through the manager's
// client, on every replica (leader or not), from the manager's Start on.
// Asking again for a component returns the same recorder.
func (m *Manager) Recorder(component string) (*client.Recorder, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.recorders[component]; ok {
		return r, nil
	}
	r, err := client.NewRecorder(m.client, component, client.RecorderOptions{Logger: m.log})
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	if err := m.others.add(r); err != nil {
		return nil, fmt.Errorf("manager: recorder %q: %w", component, err)
	}
	if m.recorders == nil {
		m.recorders = map[string]*client.Recorder{}
	}
	m.recorders[component] = r
	return r, nil
}

// Add adds a runnable. Leader-only runnables (all, unless they say otherwise
// through LeaderElectionRunnable, as in controller-runtime) start once this replica leads,
// the others at Start; a runnable added after Start begins at once (or when
// leadership is acquired). Two controllers may not share a name.
func (m *Manager) Add(r Runnable) error {
	if r == nil {
		return errors.New("manager: Add needs a Runnable")
	}
	if c, ok := r.(*controller.Controller); ok {
		m.mu.Lock()
		if m.names[c.Name()] {
			m.mu.Unlock()
			return fmt.Errorf("manager: a controller named %q was already added: controller names must be unique", c.Name())
		}
		m.names[c.Name()] = true
		m.mu.Unlock()
	}
	if needsLeader(r) {
		return m.leaders.add(r)
	}
	return m.others.add(r)
}

// AddHealthzCheck adds a liveness check served at /healthz and
// /healthz/<name>. "ping" is there from the start.
func (m *Manager) AddHealthzCheck(name string, check Checker) error {
	return m.healthz.add(name, check)
}

// AddReadyzCheck adds a readiness check served at /readyz and
// /readyz/<name>. "informers" (every informer of the factory has its initial
// list) is there from the start; the builder adds one per controller.
func (m *Manager) AddReadyzCheck(name string, check Checker) error {
	return m.readyz.add(name, check)
}

// Started returns a channel closed once Start has bound its servers, started
// the informers and launched the runnables: the addresses are known then.
func (m *Manager) Started() <-chan struct{} { return m.startedCh }

// Elected returns a channel closed when this replica becomes the leader, or
// at Start without leader election: leader-only runnables start then.
func (m *Manager) Elected() <-chan struct{} { return m.electedCh }

// MetricsAddr returns the address the /metrics server listens on, nil when
// it is disabled or before Start.
func (m *Manager) MetricsAddr() net.Addr { return m.addr(&m.metricsAddr) }

// HealthProbeAddr returns the address the /healthz and /readyz server
// listens on, nil when it is disabled or before Start.
func (m *Manager) HealthProbeAddr() net.Addr { return m.addr(&m.probeAddr) }

// PprofAddr returns the address the pprof server listens on, nil when it
// is disabled or before Start.
func (m *Manager) PprofAddr() net.Addr { return m.addr(&m.pprofAddr) }

// LiveViewAddr returns the address the live view listens on
// (Options.LiveViewBindAddress; open http://<addr>/ in a browser), nil
// before Start or without it.
func (m *Manager) LiveViewAddr() net.Addr { return m.addr(&m.liveViewAddr) }

func (m *Manager) addr(p *net.Addr) net.Addr {
	m.mu.Lock()
	defer m.mu.Unlock()
	return *p
}

// informersSynced is the "informers" readiness check.
func (m *Manager) informersSynced(r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), informerSyncProbeWait)
	defer cancel()
	if err := m.factory.WaitForCacheSync(ctx); err != nil {
		return fmt.Errorf("not synced: %w", err)
	}
	return nil
}

// fail records err and stops the manager.
func (m *Manager) fail(err error) {
	m.errMu.Lock()
	if m.stopping && errors.Is(err, context.Canceled) {
		m.errMu.Unlock()
		m.log.Debug("runnable returned after its context was cancelled", "err", err)
		return
	}
	m.errs = append(m.errs, err)
	cancel := m.cancelRun
	m.errMu.Unlock()
	m.log.Error("stopping the manager", "err", err)
	if cancel != nil {
		cancel(err)
	}
}

// Start runs the manager until ctx is cancelled or a runnable fails (or,
// with leader election, this replica loses its Lease):
//
//  1. it binds the metrics, probe, pprof and live view servers (an error returns at once);
//  2. it starts the shared informers and the runnables that need no
//     leadership, on every replica;
//  3. it starts the leader-only runnables (controllers, and runnables that do
//     not say otherwise) at once, or once this replica acquires the Lease.
//
// Then it shuts down in the reverse order, within GracefulShutdownTimeout:
// leader-only runnables first (the reconciles in flight finish, then the
// Lease is released), then the other runnables, then the informers, then the
// servers. It returns nil after a cancellation, the runnables' errors after
// a failure, an error wrapping ErrLeadershipLost after a lost election (exit
// the process), and an error wrapping ErrShutdownTimeout, too, when the
// shutdown timed out. A Manager starts once.
func (m *Manager) Start(ctx context.Context) error {
	if !m.started.CompareAndSwap(false, true) {
		return ErrAlreadyStarted
	}
	servers, err := m.listen()
	if err != nil {
		return err
	}
	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	m.errMu.Lock()
	m.cancelRun = cancelRun
	m.errMu.Unlock()

	// The runnables and the informers outlive runCtx until the shutdown
	// stops them in order; they keep ctx's values.
	base := context.WithoutCancel(ctx)
	var serving sync.WaitGroup
	for _, s := range servers {
		serving.Add(1)
		go func() {
			defer serving.Done()
			if err := s.srv.Serve(s.l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				m.fail(fmt.Errorf("manager: %s server: %w", s.name, err))
			}
		}()
	}

	factoryCtx, stopFactory := context.WithCancel(base)
	defer stopFactory()
	factoryDone := make(chan struct{})
	go func() {
		defer close(factoryDone)
		if err := m.factory.Start(factoryCtx); err != nil {
			m.fail(fmt.Errorf("manager: informers: %w", err))
		}
	}()

	// Started means the informers run: wait for the factory's Start (a
	// moment), unless ctx is cancelled first.
	_ = m.factory.WaitForStart(runCtx)

	othersCtx, stopOthers := context.WithCancel(base)
	defer stopOthers()
	m.others.start(othersCtx)

	// leaderCtx stops the leader-only runnables; electorCtx stops the
	// elector, which renews the Lease until then. The shutdown cancels
	// electorCtx only after the leader-only runnables have returned (as
	// controller-runtime does): a standby must not take over while they
	// still drain, however long that takes within GracefulShutdownTimeout.
	leaderCtx, stopLeader := context.WithCancel(base)
	defer stopLeader()
	electorCtx, stopElector := context.WithCancel(base)
	defer stopElector()
	electorDone := make(chan struct{})
	if m.elector == nil {
		m.elect.Do(func() { close(m.electedCh) })
		m.leaders.start(leaderCtx)
		close(electorDone)
	} else {
		go func() {
			defer close(electorDone)
			err := m.elector.Run(electorCtx, func(lctx context.Context) {
				m.log.Info("leading: starting leader-only runnables", "lease", m.opts.LeaderElectionID, "identity", m.elector.Identity())
				m.elect.Do(func() { close(m.electedCh) })
				// The runnables stop when leadership is lost (lctx, cause
				// ErrLeadershipLost) or when the shutdown stops them
				// (leaderCtx).
				rctx, cancel := context.WithCancelCause(lctx)
				defer cancel(nil)
				unhook := context.AfterFunc(leaderCtx, func() { cancel(context.Canceled) })
				defer unhook()
				m.leaders.start(rctx)
				<-rctx.Done()
				m.leaders.stop()
				// Return without waiting for the runnables: on a loss, Run
				// then returns at once and the shutdown (which waits for
				// them, within GracefulShutdownTimeout) begins; on a
				// shutdown, Start waits for them before it stops the
				// elector, which renews the Lease meanwhile.
			})
			switch {
			case err == nil:
			case electorCtx.Err() != nil && !errors.Is(err, ErrLeadershipLost):
				// The release at shutdown failed (the elector logged it):
				// the Lease expires after LeaseDuration. Not a failure of
				// the manager, which was asked to stop.
			default:
				m.fail(fmt.Errorf("manager: leader election: %w", err))
			}
		}()
	}
	m.log.Info("manager started", "leaderElection", m.elector != nil)
	close(m.startedCh)

	<-runCtx.Done()
	m.errMu.Lock()
	m.stopping = true
	m.errMu.Unlock()
	m.log.Info("stopping the manager", "cause", context.Cause(runCtx))

	shutdownCtx, cancelShutdown := context.Background(), context.CancelFunc(func() {})
	if m.opts.GracefulShutdownTimeout > 0 {
		shutdownCtx, cancelShutdown = context.WithTimeout(shutdownCtx, m.opts.GracefulShutdownTimeout)
	}
	defer cancelShutdown()
	var timedOut []string
	wait := func(what string, done <-chan struct{}) {
		select {
		case <-done:
		case <-shutdownCtx.Done():
			timedOut = append(timedOut, what)
		}
	}
	// 1. Leader-only runnables, while the elector still renews the Lease;
	// then the elector, which releases the Lease.
	m.leaders.stop()
	stopLeader()
	wait("leader-only runnables", m.leaders.wait())
	stopElector()
	wait("leader election", electorDone)
	// 2. The other runnables.
	m.others.stop()
	stopOthers()
	wait("runnables", m.others.wait())
	// 3. The informers.
	stopFactory()
	wait("informers", factoryDone)
	// 4. The servers, which answered probes and scrapes until now.
	for _, s := range servers {
		if err := s.srv.Shutdown(shutdownCtx); err != nil {
			_ = s.srv.Close()
		}
	}
	serving.Wait()
	for _, s := range servers {
		s.done()
	}
	// 5. The idle connections of the informers' and the client's HTTP
	// client: client-go shares its transports process-wide, so they would
	// outlive the manager (and show as leaked goroutines in tests).
	m.factory.HTTPClient().CloseIdleConnections()

	m.errMu.Lock()
	errs := append([]error(nil), m.errs...)
	m.errMu.Unlock()
	if len(timedOut) > 0 {
		errs = append(errs, fmt.Errorf("%w after %v: still running: %v", ErrShutdownTimeout, m.opts.GracefulShutdownTimeout, timedOut))
	}
	err = errors.Join(errs...)
	m.log.Info("manager stopped", "err", err)
	return err
}
