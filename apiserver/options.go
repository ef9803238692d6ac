package apiserver

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"
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
	// HistoryEvents bounds the watch history kept per resource. Default 10,000.
	HistoryEvents int
	// HistoryAge bounds the age of the watch history. Default 5 minutes.
	HistoryAge time.Duration
	// BookmarkInterval is how often a watch that asked for bookmarks gets one
	// when no event flows. Default 1 minute, as kube-apiserver.
	BookmarkInterval time.Duration
	// WatchTimeout is the length of a watch that gives no timeoutSeconds.
	// Default 30 minutes.
	WatchTimeout time.Duration
	// MaxRequestBytes bounds request bodies; bigger ones get 413. Default
	// 3 MiB, as kube-apiserver.
	MaxRequestBytes int64
	// Now is the clock for timestamps. Default time.Now.
	Now func() time.Time
	// Logger receives request errors and lifecycle logs. Default discards.
	Logger *slog.Logger

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
	if o.BookmarkInterval == 0 {
		o.BookmarkInterval = time.Minute
	}
	if o.WatchTimeout == 0 {
		o.WatchTimeout = 30 * time.Minute
	}
	if o.MaxRequestBytes == 0 {
		o.MaxRequestBytes = 3 << 20
	}
	if o.Now == nil {
		o.Now = time.Now
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
	if o.HistoryAge < 0 || o.BookmarkInterval < 0 || o.WatchTimeout < 0 {
		return fmt.Errorf("apiserver: HistoryAge, BookmarkInterval and WatchTimeout must not be negative")
	}
	if o.MaxRequestBytes < 1 {
		return fmt.Errorf("apiserver: MaxRequestBytes must be positive, got %d", o.MaxRequestBytes)
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
