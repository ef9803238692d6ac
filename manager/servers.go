package manager

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// server is one bound HTTP server of the manager.
type server struct {
	name string
	l    net.Listener
	srv  *http.Server
	done func() // called once the server stopped; nil: nothing to release
}

// listen binds every enabled server; on error it closes those already bound.
func (m *Manager) listen() ([]server, error) {
	type spec struct {
		name, addr string
		handler    func() http.Handler
		bound      *net.Addr
	}
	specs := []spec{
		{"metrics", m.opts.MetricsBindAddress, m.metricsHandler, &m.metricsAddr},
		{"health probe", m.opts.HealthProbeBindAddress, m.probeHandler, &m.probeAddr},
		{"pprof", m.opts.PprofBindAddress, pprofHandler, &m.pprofAddr},
		{"live view", m.opts.LiveViewBindAddress, m.liveViewHandler, &m.liveViewAddr},
	}
	var servers []server
	sec, err := m.secureMetrics()
	if err != nil {
		return nil, fmt.Errorf("manager: metrics server: %w", err)
	}
	for _, s := range specs {
		if disabled(s.addr) {
			continue
		}
		l, err := net.Listen("tcp", s.addr)
		if err != nil {
			for _, b := range servers {
				_ = b.l.Close()
			}
			sec.release()
			return nil, fmt.Errorf("manager: %s server: %w", s.name, err)
		}
		handler, done := s.handler(), func() {}
		if s.bound == &m.metricsAddr {
			l, handler, done = sec.listener(l), sec.handler(handler), sec.release
		}
		m.mu.Lock()
		*s.bound = l.Addr()
		m.mu.Unlock()
		m.log.Info("serving", "server", s.name, "addr", l.Addr().String())
		srv := &http.Server{
			Handler:           handler,
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          slog.NewLogLogger(m.log.Handler(), slog.LevelWarn),
		}
		if s.bound == &m.liveViewAddr {
			// The live view's event streams never go idle: Shutdown
			// ends them through their requests' context.
			ctx, cancel := context.WithCancel(context.Background())
			srv.BaseContext = func(net.Listener) context.Context { return ctx }
			srv.RegisterOnShutdown(cancel)
			done = cancel
		}
		servers = append(servers, server{name: s.name, l: l, srv: srv, done: done})
	}
	return servers, nil
}

func (m *Manager) metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.opts.Gatherer, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(m.log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	}))
	return mux
}

func (m *Manager) probeHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/healthz", m.healthz)
	mux.Handle("/healthz/", m.healthz)
	mux.Handle("/readyz", m.readyz)
	mux.Handle("/readyz/", m.readyz)
	return mux
}

func (m *Manager) liveViewHandler() http.Handler { return m.liveView }

func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
