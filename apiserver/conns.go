package apiserver

import (
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// connLimiter is a listener that bounds the connections open at once
// (Options.MaxConnections). Past the bound it makes room by closing the
// connection idle the longest (a keep-alive connection between requests: its
// client reconnects at its next request, as it would after IdleTimeout), as
// nginx reuses keep-alive connections when it runs out; when every
// connection is busy it refuses the new one, closing it at once: the client
// sees its connection reset rather than a connection that hangs in the
// listen backlog until something frees. Connections are counted from their
// acceptance to their close, TLS handshakes and hijacked connections
// included, so the bound holds the server's file descriptors too.
type connLimiter struct {
	net.Listener
	max    int
	logger *slog.Logger

	mu sync.Mutex // guards open and idle
	// open counts the accepted connections not yet closed; never above max.
	open int
	// idle holds the connections between two requests (http.Server's
	// StateIdle), with the time they became idle.
	idle map[*limitedConn]time.Time

	refused  atomic.Int64 // connections refused since the last warning
	lastWarn atomic.Int64 // time of the last warning, Unix nanoseconds
}

func newConnLimiter(ln net.Listener, max int, logger *slog.Logger) *connLimiter {
	return &connLimiter{Listener: ln, max: max, logger: logger, idle: map[*limitedConn]time.Time{}}
}

// Accept returns the next connection admitted; the ones refused are closed.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.admit() {
			return &limitedConn{Conn: c, l: l}, nil
		}
		_ = c.Close()
		l.warnRefused()
	}
}

// admit takes a slot for a new connection, closing the connection idle the
// longest if that is what it takes; false when every connection is busy.
func (l *connLimiter) admit() bool {
	for {
		l.mu.Lock()
		if l.open < l.max {
			l.open++
			l.mu.Unlock()
			return true
		}
		var victim *limitedConn
		var since time.Time
		for c, t := range l.idle {
			if victim == nil || t.Before(since) {
				victim, since = c, t
			}
		}
		if victim != nil {
			delete(l.idle, victim)
		}
		l.mu.Unlock()
		if victim == nil {
			return false
		}
		// The raw connection, not its TLS layer: tls.Conn.Close may wait
		// to send its close alert. Close frees the slot before it returns.
		_ = victim.Close()
	}
}

// warnRefused logs, at most every 10 seconds, how many connections were
// refused.
func (l *connLimiter) warnRefused() {
	n := l.refused.Add(1)
	now := time.Now().UnixNano()
	last := l.lastWarn.Load()
	if now-last < int64(10*time.Second) || !l.lastWarn.CompareAndSwap(last, now) {
		return
	}
	l.refused.Add(-n)
	l.logger.Warn("apiserver: refusing connections: every connection is busy (Options.MaxConnections)", "max", l.max, "refused", n)
}

// connState is the http.Server's ConnState hook: it keeps the set of idle
// connections.
func (l *connLimiter) connState(c net.Conn, state http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if state == http.StateIdle && !lc.closed.Load() {
		l.idle[lc] = time.Now()
	} else {
		delete(l.idle, lc)
	}
}

// openConns returns the number of connections open.
func (l *connLimiter) openConns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// limitedConn is a connection counted by its connLimiter until it is closed.
type limitedConn struct {
	net.Conn
	l      *connLimiter
	closed atomic.Bool
}

func (c *limitedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.l.mu.Lock()
		c.l.open--
		delete(c.l.idle, c)
		c.l.mu.Unlock()
	}
	return c.Conn.Close()
}

// defaultMaxConnections is Options.MaxConnections' default: 4096, or half
// the process's open-file limit when that is lower, leaving the other half
// to the process's files and, in a test binary, to the clients' ends of the
// connections.
func defaultMaxConnections() int {
	const bound = 4096
	if n, ok := openFileLimit(); ok && n/2 < bound {
		return int(max(n/2, 1))
	}
	return bound
}
