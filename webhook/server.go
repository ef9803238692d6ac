package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"kloop.dev/kloop/internal/certreload"
	"kloop.dev/kloop/internal/selfsigned"
	"kloop.dev/kloop/webhook/conversion"
)

// Defaults of Options.
const (
	DefaultBindAddress = ":9443"
	DefaultCertName    = "tls.crt"
	DefaultKeyName     = "tls.key"
	// DefaultShutdownTimeout bounds how long Start waits, once its
	// context is cancelled, for the requests in flight.
	DefaultShutdownTimeout = 30 * time.Second
)

// Options configure a Server. The zero value works: ":9443" with a
// self-signed certificate.
type Options struct {
	// BindAddress is the address the server listens on, such as ":9443"
	// or "127.0.0.1:0" (a free port: read it back with Addr). Default
	// ":9443", controller-runtime's port.
	BindAddress string
	// CertDir is the directory of the serving certificate (CertName) and
	// key (KeyName), both PEM, such as a mounted Secret of cert-manager.
	// They are read at Start (missing or invalid files fail Start) and
	// again at the first TLS handshake after either file changes, so that
	// a rotated certificate is served without a restart (a pair that does
	// not load keeps the previous one serving). Default "": a self-signed
	// certificate for localhost, 127.0.0.1 and ::1, made at Start, for
	// development and tests (CABundle returns it for the webhook
	// configurations' caBundle).
	CertDir string
	// CertName is the certificate's file name in CertDir. Default "tls.crt".
	CertName string
	// KeyName is the key's file name in CertDir. Default "tls.key".
	KeyName string
	// TLSOptions change the server's tls.Config (minimum TLS 1.2, HTTP/2
	// and HTTP/1.1 offered) in order, such as kubebuilder's option that
	// turns HTTP/2 off; one that sets GetCertificate or Certificates
	// replaces CertDir and the self-signed certificate. Default none.
	TLSOptions []func(*tls.Config)
	// Logger receives the server's logs. Default: slog.Default().
	Logger *slog.Logger
	// Metrics receives the statistics of each registered path. Default:
	// none (the manager sets kloop.dev/kloop/metrics's Webhook).
	Metrics MetricsProvider
	// ShutdownTimeout bounds the wait for requests in flight once Start's
	// context is cancelled. Default 30 s.
	ShutdownTimeout time.Duration
}

func (o *Options) setDefaults() {
	if o.BindAddress == "" {
		o.BindAddress = DefaultBindAddress
	}
	if o.CertDir != "" {
		if o.CertName == "" {
			o.CertName = DefaultCertName
		}
		if o.KeyName == "" {
			o.KeyName = DefaultKeyName
		}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
}

func (o *Options) validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(o.BindAddress); err != nil {
		errs = append(errs, fmt.Errorf("BindAddress %q: %w", o.BindAddress, err))
	}
	if o.CertDir == "" && (o.CertName != "" || o.KeyName != "") {
		errs = append(errs, errors.New("CertName and KeyName require CertDir"))
	}
	for i, f := range o.TLSOptions {
		if f == nil {
			errs = append(errs, fmt.Errorf("TLSOptions[%d] is nil", i))
		}
	}
	if o.ShutdownTimeout < 0 {
		errs = append(errs, fmt.Errorf("ShutdownTimeout %v is negative", o.ShutdownTimeout))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("webhook: invalid options: %w", err)
	}
	return nil
}

// Server serves webhooks over TLS on a port of its own: the admission
// webhooks (kloop.dev/kloop/webhook/admission) and the conversion webhook
// (kloop.dev/kloop/webhook/conversion) of a process, each at its path. It
// is a manager Runnable that runs on every replica (NeedLeaderElection is
// false): the API server calls whichever replica its Service picks.
type Server struct {
	opts Options

	started chan struct{} // closed once Start has bound the listener

	mu sync.Mutex // guards the fields below
	// paths are the registered handlers, by path.
	paths map[string]http.Handler
	mux   *http.ServeMux
	// addr and caBundle are set by Start once bound.
	addr     net.Addr
	caBundle []byte
	running  bool
}

// New returns a Server; it starts nothing.
func New(opts Options) (*Server, error) {
	opts.setDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &Server{opts: opts, started: make(chan struct{}), paths: map[string]http.Handler{}, mux: http.NewServeMux()}, nil
}

var validPath = regexp.MustCompile(`^(/[a-zA-Z0-9_.-]+)+$`)

// Register serves h at path (such as "/validate-example-com-v1-widget"),
// counted in the server's metrics. A path is registered once; paths may be
// added before or after Start.
func (s *Server) Register(path string, h http.Handler) error {
	if !validPath.MatchString(path) {
		return fmt.Errorf("webhook: path %q must be /-separated segments of letters, digits, '-', '_' and '.'", path)
	}
	if h == nil {
		return fmt.Errorf("webhook: Register(%q) with a nil handler", path)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.paths[path]; ok {
		return fmt.Errorf("webhook: a handler is already registered at %q", path)
	}
	_, isConversion := h.(*conversion.Webhook)
	in := newInstrumented(h, isConversion)
	if s.opts.Metrics != nil {
		if err := s.opts.Metrics.Register(path, in.read); err != nil {
			return fmt.Errorf("webhook: metrics of %q: %w", path, err)
		}
	}
	s.paths[path] = h
	s.mux.Handle(path, in)
	s.opts.Logger.Info("webhook server: registered", "path", path)
	return nil
}

// Handler returns what is registered at path, nil if nothing.
func (s *Server) Handler(path string) http.Handler {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paths[path]
}

// NeedLeaderElection implements the manager's LeaderElectionRunnable: the
// server runs on every replica.
func (s *Server) NeedLeaderElection() bool { return false }

// String names the server in the manager's errors.
func (s *Server) String() string { return "webhook server" }

// Started returns a channel closed once Start has bound its listener:
// Addr and CABundle are known then.
func (s *Server) Started() <-chan struct{} { return s.started }

// Addr returns the address the server listens on, nil before Start.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// CABundle returns the PEM of the self-signed certificate the server made
// at Start (for a webhook configuration's clientConfig.caBundle), nil
// before Start or when the certificate comes from CertDir or TLSOptions
// (whose CA you have).
func (s *Server) CABundle() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caBundle
}

// URL returns the https URL of path on the bound address, with the host
// 127.0.0.1 when the server listens on every address; "" before Start.
func (s *Server) URL(path string) string {
	addr := s.Addr()
	if addr == nil {
		return ""
	}
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "https://" + net.JoinHostPort(host, port) + path
}

// tlsConfig returns the server's TLS configuration and, for a self-signed
// certificate, its PEM.
func (s *Server) tlsConfig() (*tls.Config, []byte, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	for _, f := range s.opts.TLSOptions {
		f(cfg)
	}
	if cfg.GetCertificate != nil || len(cfg.Certificates) > 0 {
		return cfg, nil, nil
	}
	if dir := s.opts.CertDir; dir != "" {
		r, err := certreload.New(filepath.Join(dir, s.opts.CertName), filepath.Join(dir, s.opts.KeyName), "webhook server", s.opts.Logger)
		if err != nil {
			return nil, nil, fmt.Errorf("certificate: %w", err)
		}
		cfg.GetCertificate = r.GetCertificate
		return cfg, nil, nil
	}
	now := time.Now()
	cert, caPEM, err := selfsigned.New(now, fmt.Sprintf("kloop-webhook@%d", now.Unix()))
	if err != nil {
		return nil, nil, fmt.Errorf("self-signed certificate: %w", err)
	}
	s.opts.Logger.Info("webhook server: serving a self-signed certificate (set CertDir in production)")
	cfg.Certificates = []tls.Certificate{cert}
	return cfg, caPEM, nil
}

// Start binds the listener and serves until ctx is cancelled, then waits
// for the requests in flight (ShutdownTimeout at most) and returns nil. It
// returns an error if the certificate does not load or the address cannot
// be bound. A Server starts once.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return errors.New("webhook: Start called more than once")
	}
	s.running = true
	s.mu.Unlock()
	cfg, caPEM, err := s.tlsConfig()
	if err != nil {
		return fmt.Errorf("webhook server: %w", err)
	}
	l, err := net.Listen("tcp", s.opts.BindAddress)
	if err != nil {
		return fmt.Errorf("webhook server: %w", err)
	}
	s.mu.Lock()
	s.addr, s.caBundle = l.Addr(), caPEM
	s.mu.Unlock()
	srv := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	s.opts.Logger.Info("webhook server: serving", "addr", l.Addr().String())
	close(s.started)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(tls.NewListener(l, cfg)) }()
	select {
	case err := <-served:
		return fmt.Errorf("webhook server: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	<-served
	return nil
}

// ReadyCheck reports whether the server answers TLS handshakes: an error
// before Start or when a handshake with it fails. The manager serves it as
// the "webhook" readiness check, as controller-runtime's StartedChecker.
func (s *Server) ReadyCheck(r *http.Request) error {
	addr := s.Addr()
	if addr == nil {
		return errors.New("webhook server not started yet")
	}
	d := &tls.Dialer{
		NetDialer: &net.Dialer{Timeout: 10 * time.Second},
		Config:    &tls.Config{InsecureSkipVerify: true}, // only that it answers
	}
	target := addr.String()
	if u := s.URL(""); u != "" {
		target = u[len("https://"):]
	}
	c, err := d.DialContext(r.Context(), "tcp", target)
	if err != nil {
		return fmt.Errorf("webhook server not reachable: %w", err)
	}
	return c.Close()
}
