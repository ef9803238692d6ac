package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"kloop.dev/kloop/apiserver/internal/garbagecollector"
	"kloop.dev/kloop/apiserver/internal/inproc"
	"kloop.dev/kloop/apiserver/storage"
)

// Server is the embedded API server. Create it with [New], run it with
// [Server.Start] or [Server.Serve]; once [Server.Ready] is closed,
// [Server.URL], [Server.RESTConfig] and [Server.WriteKubeconfig] describe
// how to reach it.
type Server struct {
	opts    Options
	store   *storage.Store
	reg     *registry
	cert    *tls.Certificate // nil without TLS
	caPEM   []byte           // the self-signed certificate, PEM
	handler http.Handler
	// protobuf decodes request bodies sent as protobuf.
	protobuf protobufDecoder
	openapi  *openAPI
	saTokens *saTokens // signs and verifies ServiceAccount tokens (satoken.go)
	// builtinTypes is the field managers' schema of the built-in kinds,
	// parsed at the first write that records managers (managedfields.go).
	builtinTypesOnce sync.Once
	builtinTypes     managedfields.TypeConverter
	// apiextTypes is the schema of CustomResourceDefinition, likewise.
	apiextTypesOnce sync.Once
	apiextTypes     managedfields.TypeConverter
	apiextTypesErr  error
	// subFM are the field managers of subresources whose object is a kind
	// of its own (subresourceFieldManager), by kind and subresource.
	subFMMu sync.Mutex // guards subFM
	subFM   map[string]*managedfields.FieldManager
	crdMu   sync.Mutex // serializes syncCRD, so the registry follows the store's order
	ips     *ipAllocator
	// decoded caches the decoded form of recently written objects for
	// their next update.
	decoded *decodedCache

	// interceptor, when set, serves authenticated requests (intercept.go).
	interceptor atomic.Pointer[Interceptor]

	inflight  atomic.Int64 // requests being served
	conns     *connLimiter // set by Serve before ready is closed
	limits    *inflightLimits
	ready     chan struct{} // closed once the server accepts connections
	readyOnce sync.Once

	mu      sync.Mutex // guards url and serving
	url     string     // set before ready is closed
	serving bool       // Serve was called

	// emptying holds the namespaces whose content deleteNamespaceContent
	// is deleting (namespace name → true).
	emptying sync.Map

	gcMu sync.Mutex                  // guards gc
	gc   *garbagecollector.Collector // the running garbage collector, if any

	// Who may do what (authn.go, authz.go, impersonate.go, rbac.go).
	users users     // bearer tokens
	rbac  rbacState // the RBAC objects' policy
	imp   impersonation

	// hooks are the HTTP clients of the webhooks the server calls
	// (webhookcall.go); admission the admission webhooks of the stored
	// configurations (admission.go).
	hooks     webhookClients
	admission admissionHooks
}

// New returns a server holding the built-in kinds and the namespaces every
// cluster has (default, kube-system, kube-public, kube-node-lease). It does
// not listen yet.
//
// With Options.DataDir it holds what the directory holds (see DataDir); a
// directory that another server has open, that is damaged or that a newer
// kloop wrote is an error. Close releases it.
func New(opts Options) (_ *Server, err error) {
	opts.setDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	st, err := storage.New(storage.Options{HistoryEvents: opts.HistoryEvents, HistoryAge: opts.HistoryAge, HistoryBytes: opts.HistoryBytes, Now: opts.Now, Logger: opts.Logger,
		Dir: opts.storeDir(), SnapshotBytes: opts.snapshotBytes})
	if err != nil {
		return nil, fmt.Errorf("apiserver: %w", err)
	}
	defer func() {
		if err != nil {
			_ = st.Close()
		}
	}()
	s := &Server{opts: opts, store: st, reg: newRegistry(), ready: make(chan struct{}), ips: newIPAllocator(), decoded: newDecodedCache(opts.decodedMutation)}
	if err := s.credentials(); err != nil { // the token, the ServiceAccount key, the serving certificate
		return nil, err
	}
	s.limits = newInflightLimits(opts.MaxRequestsInFlight, opts.MaxMutatingRequestsInFlight, opts.MaxWatches)
	if err := s.initAuth(); err != nil {
		return nil, err
	}
	s.reg.add(builtinKinds()...)
	s.reg.add(reviewKinds()...)
	if s.openapi, err = newOpenAPI(); err != nil {
		return nil, fmt.Errorf("apiserver: %w", err)
	}
	if err := s.restore(); err != nil { // what a data directory holds
		return nil, err
	}
	if err := s.createSystemNamespaces(); err != nil {
		return nil, err
	}
	if err := s.createKubernetesService(); err != nil {
		return nil, err
	}
	if err := s.createSystemPriorityClasses(); err != nil {
		return nil, err
	}
	if err := s.bootstrapRBAC(); err != nil {
		return nil, err
	}
	if len(opts.CRDPaths) > 0 {
		if err := s.installCRDs(opts.CRDPaths); err != nil {
			return nil, err
		}
	}
	s.resumeDeletions()
	s.handler = http.HandlerFunc(s.serveHTTP)
	return s, nil
}

// Compact discards the watch history up to the current revision, as an etcd
// compaction does: watches and lists from an older resourceVersion get 410
// Gone (Expired) from then on. Tests use it to force a relist.
func (s *Server) Compact() { s.store.Compact(s.store.Revision()) }

// Token returns the administrator's bearer token (kloop-admin, in
// system:masters).
func (s *Server) Token() string { return s.opts.Token }

// CAData returns the PEM certificate clients must trust with TLS, or nil.
func (s *Server) CAData() []byte { return s.caPEM }

// Ready is closed once the server accepts connections.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// URL returns the server's base URL, such as http://127.0.0.1:40123; empty
// before Ready is closed.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Handler returns the server's HTTP handler (authentication included), to
// serve it on a listener of your own or call it in process.
func (s *Server) Handler() http.Handler { return s.handler }

// RESTConfig returns a client configuration for the server; nil before Ready
// is closed. The caller may modify it.
func (s *Server) RESTConfig() *rest.Config {
	u := s.URL()
	if u == "" {
		return nil
	}
	return &rest.Config{
		Host:            u,
		BearerToken:     s.opts.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.caPEM},
		QPS:             -1, // no client-side rate limit against an in-process server
	}
}

// Kubeconfig returns a kubeconfig file for the server, with a cluster, user and
// context named "kloop"; kubectl uses it as is. It needs Options.TLS:
// clientcmd (so kubectl) sends credentials only over TLS.
func (s *Server) Kubeconfig() ([]byte, error) {
	u := s.URL()
	if u == "" {
		return nil, errors.New("apiserver: the server is not ready")
	}
	if s.cert == nil {
		return nil, errors.New("apiserver: a kubeconfig needs TLS (Options.TLS): kubectl and client-go's kubeconfig loader send the bearer token only over TLS")
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kloop"] = &clientcmdapi.Cluster{Server: u, CertificateAuthorityData: s.caPEM}
	cfg.AuthInfos["kloop"] = &clientcmdapi.AuthInfo{Token: s.opts.Token}
	cfg.Contexts["kloop"] = &clientcmdapi.Context{Cluster: "kloop", AuthInfo: "kloop", Namespace: "default"}
	cfg.CurrentContext = "kloop"
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("apiserver: kubeconfig: %w", err)
	}
	return b, nil
}

// WriteKubeconfig writes [Server.Kubeconfig] to path, readable by the owner only.
func (s *Server) WriteKubeconfig(path string) error {
	b, err := s.Kubeconfig()
	if err != nil {
		return err
	}
	if err := writeFileAtomic(path, b, 0o600); err != nil {
		return fmt.Errorf("apiserver: write kubeconfig %w", err)
	}
	return nil
}

// Start listens on Options.Addr and serves until ctx is cancelled.
func (s *Server) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("apiserver: listen: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx is cancelled, then closes ln, ends the open
// watches, waits (at most 5 s) for the requests in flight and closes the
// server (Close). A server serves once.
func (s *Server) Serve(ctx context.Context, ln net.Listener) (err error) {
	s.mu.Lock()
	if s.serving {
		s.mu.Unlock()
		_ = ln.Close()
		return errors.New("apiserver: the server is already serving")
	}
	s.serving = true
	defer func() {
		if cerr := s.Close(); err == nil {
			err = cerr
		}
	}()
	conns := newConnLimiter(ln, s.opts.MaxConnections, s.opts.Logger)
	s.conns, ln = conns, conns
	scheme := "http"
	if s.cert != nil {
		scheme = "https"
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*s.cert}, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12})
	}
	s.url = scheme + "://" + clientAddr(ln.Addr())
	s.mu.Unlock()
	s.pointKubernetesService(ln.Addr())

	reqCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()
	srv := &http.Server{
		Handler: s.handler,
		// Deadlines for bodies and responses are set per request
		// (setDeadlines): a server-wide ReadTimeout or WriteTimeout would
		// cut watches.
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return reqCtx },
		ConnState:         conns.connState,
		// client-go multiplexes every request of a config, watches
		// included, over one HTTP/2 connection: allow as many streams as
		// kube-apiserver does (--http2-max-streams-per-connection).
		HTTP2:    &http.HTTP2Config{MaxConcurrentStreams: 1000},
		ErrorLog: slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelDebug), // e.g. TLS handshake errors
	}
	var ctrls *controllerSet
	if !s.opts.DisableControllers {
		var err error
		if ctrls, err = s.startControllers(ctx); err != nil {
			_ = ln.Close()
			return err
		}
		defer ctrls.stop()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.readyOnce.Do(func() { close(s.ready) })
	s.opts.Logger.Info("apiserver serving", "url", s.url)

	select {
	case err := <-errc:
		return fmt.Errorf("apiserver: serve: %w", err)
	case <-ctx.Done():
	}
	if ctrls != nil {
		ctrls.stop() // their requests are in process: they end with them
	}
	// Stop accepting, end the watches (their contexts derive from
	// reqCtx), let the other requests finish (at most 5 s), then close the
	// connections. http.Server.Shutdown would also wait a second per HTTP/2
	// connection for its GOAWAY.
	cancelRequests()
	_ = ln.Close()
	<-errc
	srv.SetKeepAlivesEnabled(false)
	s.waitInflight(5 * time.Second)
	if err := srv.Close(); err != nil {
		return fmt.Errorf("apiserver: close: %w", err)
	}
	s.waitInflight(time.Minute) // handlers return once their connection is closed
	s.hooks.closeIdle()
	return nil
}

// clientAddr is the address clients dial for a listener: the loopback
// address when it listens on all addresses.
func clientAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	return net.JoinHostPort("127.0.0.1", fmt.Sprint(tcp.Port))
}

// waitInflight waits, at most d, for the requests being served to end.
func (s *Server) waitInflight(d time.Duration) {
	deadline := time.Now().Add(d)
	for s.inflight.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	if n := s.inflight.Load(); n > 0 {
		s.opts.Logger.Warn("apiserver: requests still running at shutdown", "count", n)
	}
}

// serveHTTP bounds the request's time, authenticates, admits (the in-flight
// bounds), bounds the body and routes. Nothing reads the body before the request is authenticated and
// admitted: a request refused on its headers is answered at once, however
// much body it declares (closeConnection).
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if !inproc.IsInProcess(r) { // the server's controllers stop before it waits for requests
		s.inflight.Add(1)
		defer s.inflight.Add(-1)
	}
	defer func() {
		if v := recover(); v != nil && v != http.ErrAbortHandler {
			s.opts.Logger.Error("apiserver: panic serving request", "method", r.Method, "path", r.URL.Path, "panic", v)
			writeError(w, fmt.Errorf("internal error: %v", v), schema.GroupResource{}, "")
		}
	}()
	rc := http.NewResponseController(w)
	class := classify(r)
	var timeout time.Duration
	if class != longRunning {
		var err error
		if timeout, err = s.requestTimeout(r); err != nil {
			setDeadlines(rc, class, start.Add(s.opts.RequestTimeout))
			if r.ContentLength != 0 {
				closeConnection(w, r, rc)
			}
			writeError(w, err, schema.GroupResource{}, "")
			return
		}
	}
	setDeadlines(rc, class, start.Add(timeout))
	id := s.authenticate(r)
	if s.opts.LogRequests {
		lw := &loggedResponse{ResponseWriter: w}
		w = lw
		defer s.logRequest(r, id, lw, start)
	}
	w = s.negotiating(w, r) // answers in the encoding r accepts (negotiate.go)
	if s.intercept(w, r, id, class) {
		return
	}
	s.serveAuthenticated(w, r, id, class, rc)
}

// serveAuthenticated authorizes, admits (the in-flight bounds), bounds the
// body and routes a request authenticated as id (nil: not authenticated).
func (s *Server) serveAuthenticated(w http.ResponseWriter, r *http.Request, id *identity, class requestClass, rc *http.ResponseController) {
	ar, err := s.authorize(r, id)
	if err != nil {
		// A refused request's body is never read: a 401 keeps no
		// connection (who sent it may hold many), a 403 with a body to
		// come neither.
		if apierrors.IsUnauthorized(err) || r.ContentLength != 0 {
			closeConnection(w, r, rc)
		}
		writeError(w, err, schema.GroupResource{}, "")
		return
	}
	r = ar
	// The server's own controllers (in process) are not counted: the
	// bounds are there for the clients a network brings.
	if !inproc.IsInProcess(r) {
		if !s.limits.acquire(class) {
			if r.ContentLength != 0 {
				closeConnection(w, r, rc)
			}
			tooManyRequests(w)
			return
		}
		defer s.limits.release(class)
	}
	if r.ContentLength > s.opts.MaxRequestBytes {
		closeConnection(w, r, rc)
		writeStatus(w, &apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", s.opts.MaxRequestBytes)).ErrStatus)
		return
	}
	if r.ContentLength != 0 {
		r.Body = &timeoutBody{ReadCloser: http.MaxBytesReader(w, r.Body, s.opts.MaxRequestBytes), rc: rc}
	}
	s.routes(w, r)
}
