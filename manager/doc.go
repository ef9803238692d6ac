// Package manager runs a process's controllers around one shared cache:
//
//	API server → informer (one per kind, shared) → handlers → queues → Reconcile → client → API server
//
// A Manager holds one informer.Factory — one watch and one cache per kind,
// however many controllers watch it — and one client.Client that reads from
// that cache and writes to the API server. A controller that watches a kind
// with a scope (builder.WithScope) shares the scope's informer with every
// controller that asks for the same scope, and its reconciles read that kind
// from it (client.ReadScopes), not from a whole-kind informer. Controllers (usually made with
// kloop.dev/kloop/builder) and any other Runnable are added with Add and run
// by Start, which blocks until its context is cancelled or a runnable fails.
// Recorder hands out event recorders (client.Recorder) that write through
// the manager's client on every replica, as controller-runtime's
// GetEventRecorderFor. The client reads its own writes (a cached read
// right after a write of the client waits for the cache, at most
// Options.ReadYourOwnWritesTimeout; Options.DisableReadYourOwnWrites turns
// it off), and its statistics are the kloop_client_* metrics.
//
//	cfg, err := config.Load(config.Options{}) // kloop.dev/kloop/client/config
//	ctx, stop := manager.SignalContext(context.Background())
//	defer stop()
//	mgr, err := manager.New(cfg, manager.Options{
//		HealthProbeBindAddress: ":8081",
//		MetricsBindAddress:     ":8080",
//		LeaderElection:         true,
//		LeaderElectionID:       "widget-controller",
//	})
//	err = builder.ControllerManagedBy(mgr).For(&v1.Widget{}).Complete(r)
//	if err := mgr.Start(ctx); err != nil { // ctx: cancelled on SIGINT or SIGTERM
//		log.Fatal(err) // ErrLeadershipLost: exit at once, another replica leads
//	}
//
// SignalContext cancels its context on the first SIGINT or SIGTERM and exits
// the process with code 1 on a second one, as controller-runtime's
// SetupSignalHandler, but with no global state: it may be called more than
// once, and its stop function releases the signal handlers.
//
// # Leader election
//
// With Options.LeaderElection, the runnables that need leadership run only
// on the replica that holds the coordination.k8s.io/v1 Lease
// LeaderElectionNamespace/LeaderElectionID (kloop.dev/kloop/leaderelection;
// defaults 15 s lease, 10 s renew deadline, 2 s retry period). A
// Runnable needs leadership unless it implements LeaderElectionRunnable and
// answers false, as in controller-runtime (a *controller.Controller answers
// from its Options.NeedLeaderElection, true by default). Informers and
// runnables that need no leadership run on every replica, so a standby has a
// warm cache when it takes over. On cancel, the leader stops its leader-only runnables and then
// releases the Lease, so that a standby takes over at its next retry instead
// of after the lease duration. When leadership is lost, the leader-only
// runnables are cancelled (cause ErrLeadershipLost), everything shuts down,
// and Start returns an error wrapping ErrLeadershipLost: the process should
// exit. As client-go warns, election relies on timing: reconcilers must stay
// idempotent.
//
// # Servers
//
// Four optional HTTP servers, each off unless its bind address is set
// ("" and "0" mean off, as controller-runtime's "0"; "127.0.0.1:0" picks a
// free port, read back with MetricsAddr, HealthProbeAddr, PprofAddr and
// LiveViewAddr after Started is closed):
//
//   - /metrics serves Options.Gatherer (by default the manager's own
//     registry, never the global one). The manager registers
//     metrics.NewWorkqueue and metrics.NewController on Options.Registerer
//     (and leader_election_master_status with leader election) and the
//     builder hands them to every controller, so workqueue_* and
//     controller_runtime_* series carry controller-runtime's names and labels;
//     go_* and process_* are there too (metrics.RegisterRuntime), unless
//     DisableRuntimeMetrics. With MetricsSecureServing it is served over
//     HTTPS: the certificate and key of MetricsCertDir (tls.crt, tls.key),
//     reloaded at the first handshake after they change, or a self-signed
//     certificate for development. MetricsAuth adds kubebuilder's default
//     protection (controller-runtime's
//     filters.WithAuthenticationAndAuthorization): a scraper's bearer token
//     is checked with a TokenReview (else 401), then a SubjectAccessReview
//     for "get" on the non-resource URL "/metrics" (else 403), both made
//     with the manager's rest.Config; the scraper needs a ClusterRole with
//     nonResourceURLs ["/metrics"], verbs ["get"], the manager "create" on
//     tokenreviews and subjectaccessreviews.
//   - /healthz and /readyz (and /healthz/<check>, /readyz/<check>) answer 200
//     "ok" when every check passes, else 500 with one line per check
//     (?verbose lists them on success too). /healthz has "ping"; /readyz has
//     "informers" (every informer of the factory has its initial list) and
//     one "controller-<name>" per builder controller (its sources have
//     delivered their initial lists; a standby replica's controllers, not
//     started, pass). Add more with AddHealthzCheck and AddReadyzCheck.
//   - /debug/pprof/ (net/http/pprof), opt-in with PprofBindAddress.
//   - the live view, opt-in with LiveViewBindAddress (below).
//
// The webhook server (kloop.dev/kloop/webhook, Options.Webhook: ":9443",
// TLS with the certificate of its CertDir reloaded on rotation, or a
// self-signed one) serves admission and conversion webhooks. WebhookServer
// returns it; the first call (kloop.dev/kloop/builder's WebhookManagedBy
// makes it) adds it to the runnables of every replica and its "webhook"
// readiness check, and its controller_runtime_webhook_* metrics are on
// Options.Registerer.
//
// # Live view
//
// With Options.LiveViewBindAddress, the manager serves a web page (one
// embedded HTML file: no build step, nothing fetched from elsewhere) that
// draws the pipeline and updates it every second by server-sent events:
// each shared informer's watch events/s, FIFO depth and cache size; each
// controller's queue depth by priority, active workers, reconciles/s by
// result (success, requeueAfter, error, terminal), stale-read skips and hot
// loops, and the p50 and p99 of its queue wait and reconcile time over the
// last 10 s (estimated from the stages' histograms). The figures are the
// statistics the stages keep anyway (informer.Factory.InformerStats, the
// metrics providers' Each), read only while a page is open. Below them, the
// objects reconciled lately, and for the one selected its timeline: each
// reconcile with the events merged into it (what, which object and
// resourceVersion, which handler, when enqueued; an event at the
// resourceVersion of the object's own earlier write is marked), its ID,
// duration, result and the writes it made; the skips while the cache was
// behind the object's own writes and the hot-loop and fighting-writers
// reports, flagged. The timeline is recorded by the controllers the
// builder makes (the manager's Observer, controller.Options.Observer): the
// last 32 entries of each of the last 1,000 objects. It shows object
// names and has no authentication: bind it to localhost, or keep it
// behind what protects your other debugging endpoints (on localhost, a
// web page in your browser that rebinds its own host name to 127.0.0.1
// can still read it; it checks no Host header). It serves at most 16
// event streams at once.
//
//	mgr, err := manager.New(cfg, manager.Options{LiveViewBindAddress: "127.0.0.1:8082"})
//	// after Start: open http://127.0.0.1:8082/ (mgr.LiveViewAddr())
//
// The page's data is JSON too: /stats (one frame), /events (the stream),
// /objects and /timeline?controller=C&namespace=NS&name=N.
//
// # Tracing
//
// With Options.TracerProvider (an OpenTelemetry trace.TracerProvider: the
// SDK's, configured as usual — sdktrace.NewTracerProvider with an OTLP
// exporter, or otel.GetTracerProvider() after your main set it; kloop sets
// no global), every request the manager sends to the API server is a
// client span "<VERB> <resource>" (informers' lists and watches, the
// client's reads and writes, leader election; attributes: HTTP method, URL
// path, status code, group, version, resource, subresource, namespace,
// name, and the resourceVersion a JSON answer returned; the W3C
// traceparent header carries it to the server), and the builder hands it
// to every controller (controller.Options.TracerProvider), whose
// reconciles are spans "Reconcile <controller>" with their triggers and
// result; the API calls a reconcile makes with its context are its
// children, and a reconcile triggered by the event of a write one of the
// manager's controllers made links to that write's span (they share
// TracedWrites): one change can be followed from the watch event to the
// write and on to the reconciles it triggers.
//
//	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter))
//	defer tp.Shutdown(context.Background())
//	mgr, err := manager.New(cfg, manager.Options{TracerProvider: tp})
//
// # Shutdown
//
// When Start's context is cancelled, the manager stops the leader-only
// runnables first (controllers let the reconciles in flight finish; the
// leader keeps renewing its Lease meanwhile, so that no standby takes over
// while they drain), then releases the Lease, then stops the other runnables, the informers and last
// the servers, which answer probes and scrapes during the shutdown. The whole
// shutdown is bounded by GracefulShutdownTimeout (default 30 s); runnables
// still running then are abandoned and Start's error wraps
// ErrShutdownTimeout.
//
// # Sources
//
// The controller.Source over one of the manager's shared informers is
// informer.Source (informer.NewSource); the builder makes one for each For,
// Owns and Watches.
package manager
