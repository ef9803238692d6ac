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
// GetEventRecorderFor.
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
// Three optional HTTP servers, each off unless its bind address is set
// ("" and "0" mean off, as controller-runtime's "0"; "127.0.0.1:0" picks a
// free port, read back with MetricsAddr, HealthProbeAddr and PprofAddr after
// Started is closed):
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
//
// The webhook server (kloop.dev/kloop/webhook, Options.Webhook: ":9443",
// TLS with the certificate of its CertDir reloaded on rotation, or a
// self-signed one) serves admission and conversion webhooks. WebhookServer
// returns it; the first call (kloop.dev/kloop/builder's WebhookManagedBy
// makes it) adds it to the runnables of every replica and its "webhook"
// readiness check, and its controller_runtime_webhook_* metrics are on
// Options.Registerer.
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
