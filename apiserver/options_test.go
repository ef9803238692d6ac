package apiserver_test

import (
	"strings"
	"testing"
	"time"

	"kloop.dev/kloop/apiserver"
)

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts apiserver.Options
		err  string
	}{
		{"zero value", apiserver.Options{}, ""},
		{"tls", apiserver.Options{TLS: true, Token: "x"}, ""},
		{"bad addr", apiserver.Options{Addr: "nope"}, "Addr"},
		{"negative history", apiserver.Options{HistoryEvents: -1}, "HistoryEvents"},
		{"negative history bytes", apiserver.Options{HistoryBytes: -1}, "HistoryBytes must be positive"},
		{"negative age", apiserver.Options{HistoryAge: -time.Second}, "must not be negative"},
		{"negative bookmarks", apiserver.Options{BookmarkInterval: -time.Second}, "must not be negative"},
		{"negative body limit", apiserver.Options{MaxRequestBytes: -1}, "MaxRequestBytes"},
		{"negative request timeout", apiserver.Options{RequestTimeout: -time.Second}, "RequestTimeout must not be negative"},
		{"negative header timeout", apiserver.Options{ReadHeaderTimeout: -time.Second}, "ReadHeaderTimeout must not be negative"},
		{"negative idle timeout", apiserver.Options{IdleTimeout: -time.Second}, "IdleTimeout must not be negative"},
		{"negative connection bound", apiserver.Options{MaxConnections: -1}, "MaxConnections must be positive"},
		{"negative read bound", apiserver.Options{MaxRequestsInFlight: -1}, "MaxRequestsInFlight must be positive"},
		{"negative write bound", apiserver.Options{MaxMutatingRequestsInFlight: -1}, "MaxMutatingRequestsInFlight must be positive"},
		{"negative watch bound", apiserver.Options{MaxWatches: -1}, "MaxWatches must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := apiserver.New(tc.opts)
			if tc.err == "" {
				if err != nil || srv == nil {
					t.Fatalf("New: %v", err)
				}
				if srv.Token() == "" || srv.URL() != "" || srv.RESTConfig() != nil {
					t.Fatalf("before serving: token %q url %q", srv.Token(), srv.URL())
				}
				if _, err := srv.Kubeconfig(); err == nil {
					t.Fatal("a kubeconfig before serving")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("New: %v, want an error about %s", err, tc.err)
			}
		})
	}
}
