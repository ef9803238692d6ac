package manager

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"kloop.dev/kloop/client"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/webhook"

	"go.opentelemetry.io/otel/trace"
)

// Defaults of Options.
const (
	DefaultLeaseDuration           = 15 * time.Second
	DefaultRenewDeadline           = 10 * time.Second
	DefaultRetryPeriod             = 2 * time.Second
	DefaultGracefulShutdownTimeout = 30 * time.Second
)

// Options configures a Manager. The zero value works: no leader election,
// no HTTP server, a private Prometheus registry, a logger that discards.
type Options struct {
	// Logger receives the manager's logs, and is the default logger of the
	// shared informers, the client and the builder's controllers.
	// Default: slog.Default() (Go's convention; set slog.New(slog.DiscardHandler) to silence it).
	Logger *slog.Logger

	// Cache configures the shared informer factory (Scheme, Mapper,
	// resync period, transforms, …). Its Logger defaults to Logger.
	// Default: the zero informer.FactoryOptions (every k8s.io/api type,
	// discovery, 10 h resyncs).
	Cache informer.FactoryOptions

	// Uncached lists kinds (by example object, such as &corev1.Secret{})
	// that the manager's client always reads from the API server.
	// Default: none.
	Uncached []client.Object
	// FieldOwner is the field manager of the client's writes that do not
	// name one. Default "": the server derives one from the user agent.
	FieldOwner string
	// DisableReadYourOwnWrites and ReadYourOwnWritesTimeout are the
	// client's (client.Options): by default a cached read that follows
	// the client's own write waits, at most 3 s after it, until the cache
	// has caught up with it. Defaults: false, 3 s.
	DisableReadYourOwnWrites bool
	ReadYourOwnWritesTimeout time.Duration

	// Registerer receives the manager's metrics: the work queue and
	// controller collectors of kloop.dev/kloop/metrics and
	// leader_election_master_status. Default: a new prometheus.Registry
	// of this manager (never the global one).
	Registerer prometheus.Registerer
	// Gatherer is what /metrics serves. Default: Registerer when it is
	// also a Gatherer (a *prometheus.Registry), else the default registry
	// of this manager; it is an error to set Registerer to something that is
	// not a Gatherer without setting Gatherer.
	Gatherer prometheus.Gatherer

	// MetricsBindAddress is the address of the /metrics server, such as
	// ":8080" or "127.0.0.1:0" (a free port: read it back with
	// Manager.MetricsAddr). Default "" or "0": no metrics server.
	MetricsBindAddress string
	// HealthProbeBindAddress is the address of the /healthz and /readyz
	// server. Default "" or "0": no probe server.
	HealthProbeBindAddress string
	// PprofBindAddress is the address of the net/http/pprof server
	// (/debug/pprof/). Opt-in: it exposes profiles of the process.
	// Default "" or "0": no pprof server.
	PprofBindAddress string
	// LiveViewBindAddress is the address of the live view of the pipeline
	// (see the package documentation, "Live view"): a web page that draws
	// the informers, queues and controllers with their figures updated
	// every second, and each object's recent reconciles. Opt-in: it shows
	// object names. Read the bound address back with Manager.LiveViewAddr.
	// Default "" or "0": no live view, and the controllers record no
	// timeline.
	LiveViewBindAddress string

	// TracerProvider, when set, traces the manager: every request to the
	// API server (its informers', its client's, leader election's) is an
	// OpenTelemetry span, and the builder hands it to each controller
	// (controller.Options.TracerProvider), whose reconciles are spans
	// with the API calls they make as children. Build it with the
	// OpenTelemetry SDK's standard configuration (sdktrace.
	// NewTracerProvider with an exporter, or otel.GetTracerProvider() as
	// your main set it); kloop sets no global. Default nil: no tracing.
	TracerProvider trace.TracerProvider

	// DisableRuntimeMetrics keeps the Go runtime and process collectors
	// off Registerer. Default false: go_* (go_goroutines, go_memstats_*,
	// and every runtime/metrics metric, as controller-runtime) and process_*
	// (process_cpu_seconds_total, process_resident_memory_bytes, … where
	// the platform reports them) are registered (metrics.RegisterRuntime).
	DisableRuntimeMetrics bool
	// MetricsSecureServing serves /metrics over HTTPS, with the certificate
	// and key in MetricsCertDir, or a self-signed certificate (localhost,
	// 127.0.0.1, ::1) made at Start when MetricsCertDir is "". Default
	// false: plain HTTP.
	MetricsSecureServing bool
	// MetricsCertDir is the directory of the metrics server's certificate
	// (MetricsCertName) and key (MetricsKeyName), both PEM, such as a
	// mounted Secret of cert-manager. They are read at Start (missing or
	// invalid files fail Start) and again at the first TLS handshake after
	// either file changes, so that a rotated certificate is served without
	// a restart (a pair that does not load keeps the previous one
	// serving). Requires MetricsSecureServing. Default "": a self-signed
	// certificate, for development.
	MetricsCertDir string
	// MetricsCertName is the certificate's file name in MetricsCertDir.
	// Default "tls.crt".
	MetricsCertName string
	// MetricsKeyName is the key's file name in MetricsCertDir. Default
	// "tls.key".
	MetricsKeyName string
	// MetricsTLSOptions change the metrics server's tls.Config (minimum TLS
	// 1.2, HTTP/2 and HTTP/1.1 offered) in order, such as kubebuilder's
	// option that turns HTTP/2 off (c.NextProtos = []string{"http/1.1"});
	// one that sets GetCertificate or Certificates replaces MetricsCertDir
	// and the self-signed certificate. Requires MetricsSecureServing.
	// Default none.
	MetricsTLSOptions []func(*tls.Config)
	// MetricsAuth authenticates and authorizes every request to the
	// metrics server, as controller-runtime's
	// filters.WithAuthenticationAndAuthorization (kubebuilder's default):
	// the bearer token is checked with a TokenReview (no or a rejected
	// token: 401), then the user with a SubjectAccessReview of the request's
	// non-resource URL (path "/metrics", verb "get": 403 unless allowed),
	// both through the manager's rest.Config, which needs "create" on
	// authentication.k8s.io tokenreviews and authorization.k8s.io
	// subjectaccessreviews. Results are cached as controller-runtime's:
	// tokens 1 min, allowed 5 min, denied 30 s. Requires
	// MetricsSecureServing (tokens must not travel in clear). Default
	// false: every scrape is served.
	MetricsAuth bool

	// Webhook configures the webhook server (Manager.WebhookServer): its
	// address (default ":9443"), certificate directory (default: a
	// self-signed certificate), TLS options. Its Logger defaults to
	// Logger and its Metrics to the manager's controller_runtime_webhook_*
	// metrics. The server runs only once something asks for it (the
	// builder's WebhookManagedBy does).
	Webhook webhook.Options

	// LeaderElection makes the runnables that need leadership (controllers
	// and every runnable that does not say otherwise: see
	// LeaderElectionRunnable) run only on the replica that holds the Lease
	// LeaderElectionNamespace/LeaderElectionID. Default false: they run on
	// every replica.
	LeaderElection bool
	// LeaderElectionID is the name of the Lease; required with
	// LeaderElection. It must be a DNS subdomain.
	LeaderElectionID string
	// LeaderElectionNamespace is the namespace of the Lease. Default: the
	// pod's namespace in a cluster, "default" elsewhere.
	LeaderElectionNamespace string
	// LeaderElectionIdentity is this replica's holderIdentity in the
	// Lease. Default: the hostname and a random suffix.
	LeaderElectionIdentity string
	// LeaseDuration is how long a standby waits after it last saw the Lease
	// change before it takes over; a whole number of seconds. Default 15 s.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps leading without a
	// successful renewal. Default 10 s.
	RenewDeadline time.Duration
	// RetryPeriod is the wait between renewals and between attempts to
	// acquire. Default 2 s.
	RetryPeriod time.Duration
	// LeaderElectionKeepLease keeps the Lease when Start's context is
	// cancelled, instead of releasing it so that a standby takes over at its
	// next attempt. Default false: the lease is released on cancel (after
	// the leader-only runnables returned).
	LeaderElectionKeepLease bool

	// GracefulShutdownTimeout bounds the shutdown that follows the
	// cancellation of Start's context (or a failure): runnables still
	// running after it are abandoned and Start returns an error wrapping
	// ErrShutdownTimeout. Default 0: 30 s; a negative value waits without
	// limit.
	GracefulShutdownTimeout time.Duration
}

func (o *Options) setDefaults() {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Cache.Logger == nil {
		o.Cache.Logger = o.Logger
	}
	if o.Webhook.Logger == nil {
		o.Webhook.Logger = o.Logger.With("component", "webhook")
	}
	if o.Registerer == nil && o.Gatherer == nil {
		reg := prometheus.NewRegistry()
		o.Registerer, o.Gatherer = reg, reg
	} else if o.Gatherer == nil {
		if g, ok := o.Registerer.(prometheus.Gatherer); ok {
			o.Gatherer = g
		}
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.RenewDeadline == 0 {
		o.RenewDeadline = DefaultRenewDeadline
	}
	if o.RetryPeriod == 0 {
		o.RetryPeriod = DefaultRetryPeriod
	}
	if o.GracefulShutdownTimeout == 0 {
		o.GracefulShutdownTimeout = DefaultGracefulShutdownTimeout
	}
	o.setMetricsDefaults()
}

func (o *Options) validate() error {
	var errs []error
	if o.Registerer == nil {
		errs = append(errs, errors.New("Gatherer is set but Registerer is not: set both"))
	}
	if o.Gatherer == nil {
		errs = append(errs, errors.New("Registerer is not a prometheus.Gatherer: set Gatherer too"))
	}
	if o.LeaderElection && o.LeaderElectionID == "" {
		errs = append(errs, errors.New("LeaderElectionID is required with LeaderElection"))
	}
	for _, a := range []struct{ name, addr string }{
		{"MetricsBindAddress", o.MetricsBindAddress},
		{"HealthProbeBindAddress", o.HealthProbeBindAddress},
		{"PprofBindAddress", o.PprofBindAddress},
		{"LiveViewBindAddress", o.LiveViewBindAddress},
	} {
		if disabled(a.addr) {
			continue
		}
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", a.name, a.addr, err))
		}
	}
	errs = append(errs, o.validateMetrics()...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("manager: invalid options: %w", err)
	}
	return nil
}

// disabled reports whether a bind address turns its server off.
func disabled(addr string) bool { return addr == "" || addr == "0" }
