package apiserver

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"kloop.dev/kloop/apiserver/storage"
	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/workqueue"
)

// Options configure a [Server]. The zero value works: a server on a random
// port of 127.0.0.1, plain HTTP, with a random bearer token.
type Options struct {
	// Addr is the address to listen on. Default "127.0.0.1:0" (a free port).
	Addr string
	// Token is the bearer token of the administrator, kloop-admin, in
	// system:masters: allowed everything (Users adds other users). Default:
	// 32 random bytes, hex-encoded.
	Token string
	// TLS serves HTTPS with a self-signed certificate made by New for
	// 127.0.0.1, ::1 and localhost. Default false (plain HTTP, which
	// RESTConfig clients use with the token; a kubeconfig needs TLS, because
	// kubectl sends tokens only over TLS).
	TLS bool
	// HistoryEvents bounds the watch history kept per resource, in events.
	// Default 10,000 (kube-apiserver's watch cache keeps 100 to 102,400
	// per resource, sized by the events' age).
	HistoryEvents int
	// HistoryAge bounds the age of the watch history. Default 5 minutes,
	// as kube-apiserver's --etcd-compaction-interval.
	HistoryAge time.Duration
	// HistoryBytes bounds the memory of the watch history of all resources
	// together (an event costs its object's JSON and a watch frame of it;
	// storage.Store.HistoryBytes says exactly what counts): past it the
	// oldest events are evicted, whatever their resource, and watches and
	// lists from before the oldest retained revision get 410 Gone, as
	// after an etcd compaction. Default 128 MiB (storage.DefaultHistoryBytes).
	// kube-apiserver has no byte bound on its watch cache; etcd's database,
	// history included, is bounded by --quota-backend-bytes (2 GiB), past
	// which writes fail.
	HistoryBytes int64
	// BookmarkInterval is how often a watch that asked for bookmarks gets one
	// when no event flows. Default 1 minute, as kube-apiserver.
	BookmarkInterval time.Duration
	// WatchTimeout is the length of a watch that gives no timeoutSeconds.
	// Default 30 minutes.
	WatchTimeout time.Duration
	// MaxRequestBytes bounds request bodies; bigger ones get 413. Default
	// 3 MiB, as kube-apiserver.
	MaxRequestBytes int64

	// RequestTimeout bounds a request that is not long-running (every
	// request but watches and pods' log, exec, attach and portforward):
	// its body must be read and its response written within it, from the
	// moment its headers are read. A body that does not arrive in time
	// gets kube-apiserver's 504 Timeout; a client that does not read its
	// response loses the connection. A request's timeout query parameter
	// shortens it, as in kube-apiserver. Default 60 seconds, as
	// kube-apiserver's --request-timeout.
	RequestTimeout time.Duration
	// ReadHeaderTimeout bounds the TLS handshake and the reading of a
	// request's headers (a client that sends them slowly is disconnected).
	// Default 10 seconds (kube-apiserver: 32 s, not configurable).
	ReadHeaderTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its next
	// request. Default 90 seconds, as kube-apiserver (and client-go's
	// transport).
	IdleTimeout time.Duration
	// MaxConnections bounds the connections open at once, counted from
	// their acceptance to their close (TLS handshakes, idle keep-alive
	// connections and the connections of watches included). Past it the
	// connection idle the longest is closed to make room; when none is
	// idle the new connection is refused (closed at once). Default 4096, or
	// half the process's open-file limit when that is lower, so that
	// connections never exhaust the process's file descriptors.
	// kube-apiserver has no such bound.
	MaxConnections int
	// MaxRequestsInFlight bounds the read-only requests (GET and HEAD but
	// watches) served at once; past it requests get 429 with Retry-After:
	// 1, as kube-apiserver's --max-requests-inflight (whose exemption of
	// system:masters the embedded server does not make: all its clients
	// are). Default 400, as kube-apiserver.
	MaxRequestsInFlight int
	// MaxMutatingRequestsInFlight bounds the other requests (creates,
	// updates, patches, deletes, reviews) served at once, in the same way.
	// Default 200, as kube-apiserver's --max-mutating-requests-inflight.
	MaxMutatingRequestsInFlight int
	// MaxWatches bounds the long-running requests served at once — watches,
	// and pods' log, exec, attach and portforward — which the two bounds
	// above leave out, as kube-apiserver does; past it they get 429 with
	// Retry-After: 1 too. Default 4096 (kube-apiserver has no such bound).
	MaxWatches int
	// Now is the clock for timestamps. Default time.Now.
	Now func() time.Time
	// Logger receives request errors and lifecycle logs. Default discards.
	Logger *slog.Logger
	// LogRequests logs every request to Logger once it is answered, as
	// kube-apiserver's httplog does: verb, URI, user, response code,
	// latency, user agent, source address. Default false.
	LogRequests bool
	// CRDPaths are files and directories of CustomResourceDefinitions
	// (ReadCRDs: YAML or JSON, as envtest's CRDDirectoryPaths) that New
	// creates, each established, before it returns; a CRD that does not
	// read, or that the server refuses (unknown fields included), fails New
	// with an error naming its file, document and field. Default: none.
	CRDPaths []string

	// DataDir, when set, keeps the server's state in this directory
	// (created if missing) across restarts, as etcd keeps kube-apiserver's:
	// the objects, the resourceVersion counter and the watch history (so a
	// client resuming a watch from a resourceVersion of before the restart
	// gets the events after it, or 410 Gone where the history no longer
	// reaches), and the credentials that make kubeconfigs and tokens stay
	// valid: the administrator's token when Token is empty, the
	// ServiceAccount token signing key, and with TLS the serving
	// certificate. Every write is on disk (fdatasync) before it is
	// acknowledged. One server at a time may have the directory open (an
	// flock: Linux, macOS and the BSDs); Close (or the end of Serve)
	// releases it. Users are not kept: they are configuration. See
	// "Persistence" in README.md. Default "": everything lives in memory.
	DataDir string
	// snapshotBytes is storage.Options.SnapshotBytes (tests make it small).
	// Default 64 MiB.
	snapshotBytes int64
	// DisableControllers turns off what the server runs beside its API
	// while it serves, as kube-controller-manager runs it beside
	// kube-apiserver: the default ServiceAccount and the kube-root-ca.crt
	// ConfigMap of every namespace, made asynchronously as kube's
	// controllers make them, and the garbage collector. Default false
	// (they run).
	DisableControllers bool
	// GarbageCollector configures the garbage collector, which follows
	// ownerReferences as kube-controller-manager's does. The zero value
	// runs it (while the server serves, unless DisableControllers).
	GarbageCollector GarbageCollectorOptions

	// decodedMutation, when set, turns on the check of the rule that the
	// entries of the decoded-object cache (decoded.go) are shared and never
	// written: each entry is deep-copied when it is put and compared with
	// its copy after every write; each mutation found is reported to
	// decodedMutation. The package's tests set it (export_test.go: every
	// test server checks). Default nil: nothing is checked or copied.
	decodedMutation func(error)

	// Users maps bearer tokens to the users they authenticate, besides
	// Token's (kloop-admin, in system:masters, which may do anything).
	// Each is also in system:authenticated; what it may do is what RBAC
	// gives it: the Roles, ClusterRoles and bindings stored in the server,
	// kube-apiserver's default ones included (cluster-admin, admin, edit,
	// view, system:discovery, ...). ReadTokenFile reads them from a file in
	// kube-apiserver's --token-auth-file format; Server.AddUser adds more
	// later. Default none.
	Users map[string]UserInfo
}

// GarbageCollectorOptions configure the server's garbage collector. The zero
// value runs it with eight workers per queue and no metrics.
type GarbageCollectorOptions struct {
	// Disabled turns the collector off: ownerReferences are stored, not
	// followed, and deletions add no orphan or foregroundDeletion
	// finalizer whatever their propagationPolicy, as kube-apiserver's
	// with --enable-garbage-collector=false. Default false.
	Disabled bool
	// Workers is the number of workers of each of its queues (attempts to
	// delete, attempts to orphan). Default 8.
	Workers int
	// Metrics reads the collector's counters (GarbageCollectorStats) from
	// the start of Serve. Default: none (Server.GarbageCollectorStats
	// reads them too).
	Metrics GarbageCollectorMetricsProvider
	// QueueMetrics reads the statistics of its work queues, named as
	// kube's: garbage_collector_graph_changes,
	// garbage_collector_attempt_to_delete and
	// garbage_collector_attempt_to_orphan (kloop.dev/kloop/metrics'
	// Workqueue gives them as workqueue_* metrics). Default: none.
	QueueMetrics workqueue.MetricsProvider
	// ControllerMetrics reads the statistics of its two controllers,
	// garbage_collector_attempt_to_delete and
	// garbage_collector_attempt_to_orphan. Default: none.
	ControllerMetrics controller.MetricsProvider
}

// GarbageCollectorMetricsProvider exposes the garbage collector's counters,
// pull style as workqueue.MetricsProvider: Register is called once, when
// the server starts serving, with the name "garbage_collector" and a
// reader of the counters, which may be called from any goroutine at any
// time. An error fails Serve.
type GarbageCollectorMetricsProvider interface {
	Register(name string, read func(*GarbageCollectorStats)) error
}

// GarbageCollectorStats are the garbage collector's counters.
type GarbageCollectorStats struct {
	// DeletionsAttempted counts the deletes it sent, DeletionsDone those
	// that succeeded or found the object gone, DeletionsFailed the others
	// (retried with backoff).
	DeletionsAttempted, DeletionsDone, DeletionsFailed uint64
	// Orphaned counts the dependents whose reference to an owner deleted
	// with the orphan policy it removed; FinalizersRemoved the orphan and
	// foregroundDeletion finalizers it removed from owners.
	Orphaned, FinalizersRemoved uint64
	// GraphNodes is the size of its owner graph (objects, and owners named
	// but not seen); Monitors the number of resources it watches.
	GraphNodes, Monitors int
	// ResourceSyncErrors counts the discovery reads that failed.
	ResourceSyncErrors uint64
}

func (o *Options) setDefaults() {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.HistoryEvents == 0 {
		o.HistoryEvents = 10_000
	}
	if o.HistoryAge == 0 {
		o.HistoryAge = 5 * time.Minute
	}
	if o.HistoryBytes == 0 {
		o.HistoryBytes = storage.DefaultHistoryBytes
	}
	if o.BookmarkInterval == 0 {
		o.BookmarkInterval = time.Minute
	}
	if o.WatchTimeout == 0 {
		o.WatchTimeout = 30 * time.Minute
	}
	if o.MaxRequestBytes == 0 {
		o.MaxRequestBytes = 3 << 20
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 60 * time.Second
	}
	if o.ReadHeaderTimeout == 0 {
		o.ReadHeaderTimeout = 10 * time.Second
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = 90 * time.Second
	}
	if o.MaxConnections == 0 {
		o.MaxConnections = defaultMaxConnections()
	}
	if o.MaxRequestsInFlight == 0 {
		o.MaxRequestsInFlight = 400
	}
	if o.MaxMutatingRequestsInFlight == 0 {
		o.MaxMutatingRequestsInFlight = 200
	}
	if o.MaxWatches == 0 {
		o.MaxWatches = 4096
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.GarbageCollector.Workers == 0 {
		o.GarbageCollector.Workers = 8
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

func (o *Options) validate() error {
	if _, _, err := net.SplitHostPort(o.Addr); err != nil {
		return fmt.Errorf("apiserver: Addr %q: %w", o.Addr, err)
	}
	if o.HistoryEvents < 1 {
		return fmt.Errorf("apiserver: HistoryEvents must be positive, got %d", o.HistoryEvents)
	}
	if o.HistoryBytes < 1 {
		return fmt.Errorf("apiserver: HistoryBytes must be positive, got %d", o.HistoryBytes)
	}
	if o.HistoryAge < 0 || o.BookmarkInterval < 0 || o.WatchTimeout < 0 {
		return fmt.Errorf("apiserver: HistoryAge, BookmarkInterval and WatchTimeout must not be negative")
	}
	if o.GarbageCollector.Workers < 0 {
		return fmt.Errorf("apiserver: GarbageCollector.Workers must not be negative, got %d", o.GarbageCollector.Workers)
	}
	if o.MaxRequestBytes < 1 {
		return fmt.Errorf("apiserver: MaxRequestBytes must be positive, got %d", o.MaxRequestBytes)
	}
	for _, n := range []struct {
		name string
		n    int
	}{{"MaxConnections", o.MaxConnections}, {"MaxRequestsInFlight", o.MaxRequestsInFlight}, {"MaxMutatingRequestsInFlight", o.MaxMutatingRequestsInFlight}, {"MaxWatches", o.MaxWatches}} {
		if n.n < 1 {
			return fmt.Errorf("apiserver: %s must be positive, got %d", n.name, n.n)
		}
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"RequestTimeout", o.RequestTimeout}, {"ReadHeaderTimeout", o.ReadHeaderTimeout}, {"IdleTimeout", o.IdleTimeout}} {
		if d.d < 0 {
			return fmt.Errorf("apiserver: %s must not be negative, got %s", d.name, d.d)
		}
	}
	for token, u := range o.Users {
		if err := checkUser(token, u); err != nil {
			return err
		}
		if token == o.Token {
			return fmt.Errorf("apiserver: user %q has the token of Options.Token", u.Name)
		}
	}
	return nil
}
