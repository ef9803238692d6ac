package leaderelection

import (
	"bytes"
	"log/slog"
	"math"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/client-go/rest"

	"kloop.dev/kloop/internal/testutil"
)

func TestOptionsDefaults(t *testing.T) {
	cfg := &rest.Config{Host: "http://127.0.0.1:1"}
	a, err := New(cfg, Options{Name: "election"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(cfg, Options{Name: "election"})
	if err != nil {
		t.Fatal(err)
	}
	o := a.opts
	host, _ := os.Hostname()
	if o.LeaseDuration != 15*time.Second || o.RenewDeadline != 10*time.Second || o.RetryPeriod != 2*time.Second ||
		!*o.ReleaseOnCancel || o.Clock == nil || o.Logger == nil {
		t.Errorf("defaults = %+v", o)
	}
	if _, err := os.Stat(serviceAccountNamespace); err != nil && o.Namespace != "default" {
		t.Errorf("Namespace = %q outside a cluster, want default", o.Namespace)
	}
	if !strings.HasPrefix(a.Identity(), host+"_") || len(a.Identity()) != len(host)+1+16 {
		t.Errorf("Identity = %q, want %s_ and 16 hex digits", a.Identity(), host)
	}
	if a.Identity() == b.Identity() {
		t.Errorf("two electors on one host share the identity %q", a.Identity())
	}
	if st := a.Status(); st.Leading || st.Holder != "" || st.Name != "election" || st.Identity != a.Identity() {
		t.Errorf("Status before Run = %+v", st)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want string // in the error; "" for valid
	}{
		{"zero value but the name", Options{Name: "x"}, ""},
		{"no name", Options{}, "Name (the election ID) is required"},
		{"bad name", Options{Name: "Not_A_Name"}, `Name "Not_A_Name"`},
		{"bad namespace", Options{Name: "x", Namespace: "a.b"}, `Namespace "a.b"`},
		{"lease not longer than renew deadline", Options{Name: "x", LeaseDuration: 10 * time.Second}, "LeaseDuration 10s must be greater than RenewDeadline 10s"},
		{"renew deadline within jittered retry", Options{Name: "x", RenewDeadline: 2 * time.Second}, "RenewDeadline 2s must be greater than RetryPeriod 2s × JitterFactor 1.2"},
		{"jitter bound exact", Options{Name: "x", RenewDeadline: 2400 * time.Millisecond}, "must be greater than RetryPeriod"},
		{"jitter bound just met", Options{Name: "x", RenewDeadline: 2401 * time.Millisecond}, ""},
		{"fractional lease", Options{Name: "x", LeaseDuration: 15500 * time.Millisecond}, "whole number of seconds"},
		{"lease beyond leaseDurationSeconds (int32)", Options{Name: "x", LeaseDuration: (math.MaxInt32 + 1) * time.Second}, "at most 2147483647s"},
		{"longest lease", Options{Name: "x", LeaseDuration: math.MaxInt32 * time.Second}, ""},
		{"sub-second lease", Options{Name: "x", LeaseDuration: 500 * time.Millisecond, RenewDeadline: 400 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}, "at least 1s"},
		{"negative renew deadline", Options{Name: "x", RenewDeadline: -time.Second}, "RenewDeadline -1s must be greater than zero"},
		{"negative retry", Options{Name: "x", RetryPeriod: -time.Second}, "RetryPeriod -1s must be greater than zero"},
		{"short but valid", Options{Name: "x", LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Identity = "me"
			_, err := New(&rest.Config{Host: "http://127.0.0.1:1"}, tc.opts)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("New: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("New error = %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := New(nil, Options{Name: "x"}); err == nil {
		t.Error("New accepted a nil *rest.Config")
	}
}

// The metrics provider receives, under the election name, a reader of
// Status that follows leadership (leader_election_master_status).
func TestMetricsProvider(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(t)
		cfg, _ := inProcess(srv)
		var p testutil.Provider[Status]
		e := newElector(t, cfg, "me", Options{Name: "election", Metrics: &p})
		if names := p.Names(); len(names) != 1 || names[0] != "election" {
			t.Fatalf("registered %q", names)
		}
		st := p.Only()
		if st.Leading || st.Identity != "me" {
			t.Errorf("before Run: %+v", st)
		}
		l := startLeader(t, e)
		<-l.started
		st = p.Only()
		if !st.Leading || st.Holder != "me" || st.Acquisitions != 1 || st != e.Status() {
			t.Errorf("leading: read %+v, Status %+v", st, e.Status())
		}
		l.cancel()
		if err := l.wait(); err != nil {
			t.Fatal(err)
		}
		st = p.Only()
		if st.Leading || st.Holder != "" {
			t.Errorf("after release: %+v", st)
		}
	})
}

// The elector logs its transitions with the lease and its identity.
func TestLogging(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(t)
		cfg, faults := inProcess(srv)
		var buf bytes.Buffer // written by the handler under its own lock; read after Run returned
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
		l := startLeader(t, newElector(t, cfg, "me", Options{Logger: log}))
		<-l.started
		faults.set(serverError)
		if err := l.wait(); err == nil {
			t.Fatal("Run survived failing renewals")
		}
		got := buf.String()
		for _, want := range []string{
			`level=INFO msg="attempting to acquire leader lease" lease=default/kloop-election identity=me`,
			`level=INFO msg="acquired leader lease" lease=default/kloop-election identity=me`,
			`level=WARN msg="failed to renew leader lease" lease=default/kloop-election identity=me err="reading lease: injected failure" deadline_in=6s`,
			`level=INFO msg="lost leader lease" lease=default/kloop-election identity=me err="leaderelection: leadership lost: default/kloop-election: not renewed within the renew deadline 10s: reading lease: injected failure"`,
		} {
			if !strings.Contains(got, want) {
				t.Errorf("log lacks %s\nlog:\n%s", want, got)
			}
		}
	})
}
