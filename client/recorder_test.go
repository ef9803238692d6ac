package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/internal/testutil"
)

// startRecorder runs r until the test ends.
func startRecorder(t *testing.T, r *Recorder) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// eventsAbout lists, from the server, the Events whose involved object is
// name in ns (namespace of the events).
func eventsAbout(t *testing.T, ctx context.Context, c *Client, ns, name string) []corev1.Event {
	t.Helper()
	var l corev1.EventList
	if err := c.Uncached().List(ctx, &l, InNamespace(ns), func(o *ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("involvedObject.name", name)
	}); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// Events are written as client-go's recorder writes them, and a repeat
// counts on the existing Event instead of making a new one.
func TestRecorder(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		ns := e.Namespace
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
		if err := e.c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		cluster := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}} // cluster-scoped, kind from the scheme
		r, err := NewRecorder(e.c, "widget-controller", RecorderOptions{Host: "node-1"})
		if err != nil {
			t.Fatal(err)
		}
		// Recorded before Start: kept until it runs.
		r.Event(cm, corev1.EventTypeNormal, "Synced", "synced web")
		startRecorder(t, r)
		r.Eventf(cm, corev1.EventTypeNormal, "Synced", "synced %s", "web")    // a repeat
		r.Eventf(cm, corev1.EventTypeWarning, "Failed", "failed: %v", "boom") // another event
		r.Event(cluster, corev1.EventTypeNormal, "Seen", "namespace seen")

		var got []corev1.Event
		testutil.Eventually(t, "the events written", func() error {
			got = eventsAbout(t, ctx, e.c, ns, "web")
			if len(got) != 2 {
				return fmt.Errorf("%d events about web", len(got))
			}
			for _, ev := range got {
				if ev.Reason == "Synced" && ev.Count != 2 {
					return fmt.Errorf("Synced counted %d", ev.Count)
				}
			}
			return nil
		})
		for _, ev := range got {
			o := ev.InvolvedObject
			if o.Kind != "ConfigMap" || o.APIVersion != "v1" || o.Namespace != ns || o.Name != "web" || o.UID != cm.UID || o.ResourceVersion != cm.ResourceVersion {
				t.Errorf("involvedObject %+v", o)
			}
			if ev.Source != (corev1.EventSource{Component: "widget-controller", Host: "node-1"}) || ev.ReportingController != "widget-controller" || ev.ReportingInstance != "node-1" {
				t.Errorf("source %+v, reporting %q/%q", ev.Source, ev.ReportingController, ev.ReportingInstance)
			}
			if !strings.HasPrefix(ev.Name, "web.") || ev.FirstTimestamp.IsZero() || ev.LastTimestamp.Before(&ev.FirstTimestamp) {
				t.Errorf("name %q, first %v, last %v", ev.Name, ev.FirstTimestamp, ev.LastTimestamp)
			}
			switch ev.Reason {
			case "Synced":
				if ev.Type != corev1.EventTypeNormal || ev.Message != "synced web" || ev.Count != 2 {
					t.Errorf("Synced: %s %q count %d", ev.Type, ev.Message, ev.Count)
				}
			case "Failed":
				if ev.Type != corev1.EventTypeWarning || ev.Message != "failed: boom" || ev.Count != 1 {
					t.Errorf("Failed: %s %q count %d", ev.Type, ev.Message, ev.Count)
				}
			default:
				t.Errorf("unexpected event %q", ev.Reason)
			}
		}
		// A cluster-scoped object's events go to the default namespace.
		testutil.Eventually(t, "the namespace's event", func() error {
			evs := eventsAbout(t, ctx, e.c, metav1.NamespaceDefault, ns)
			if len(evs) != 1 || evs[0].InvolvedObject.Kind != "Namespace" || evs[0].InvolvedObject.Namespace != "" {
				return fmt.Errorf("events about the namespace: %+v", evs)
			}
			return nil
		})
		// The Event of a repeat was deleted meanwhile: written anew.
		for _, ev := range got {
			if ev.Reason == "Failed" {
				if err := e.c.Delete(ctx, &ev); err != nil {
					t.Fatal(err)
				}
			}
		}
		r.Event(cm, corev1.EventTypeWarning, "Failed", "failed: boom")
		testutil.Eventually(t, "the deleted event written anew", func() error {
			for _, ev := range eventsAbout(t, ctx, e.c, ns, "web") {
				if ev.Reason == "Failed" {
					return nil
				}
			}
			return fmt.Errorf("no Failed event")
		})
	})
}

// What cannot be an event is dropped and logged; the spam filter and the
// buffer drop what is beyond them; the options are checked.
func TestRecorderDrops(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		ns := e.Namespace
		var logs testutil.SyncBuffer
		r, err := NewRecorder(e.c, "spammer", RecorderOptions{Burst: 3, Refill: time.Hour, Buffer: 2,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hot"}}
		var nilCM *corev1.ConfigMap
		for _, tc := range []struct {
			obj       *corev1.ConfigMap
			typ, why  string
			wantInLog string
		}{
			{cm, "Info", "Bad", `event type \"Info\"`},
			{cm, corev1.EventTypeNormal, "", "without a reason"},
			{nilCM, corev1.EventTypeNormal, "Nil", "nil object"},
			{&corev1.ConfigMap{}, corev1.EventTypeNormal, "NoName", "without a name"},
		} {
			r.Event(tc.obj, tc.typ, tc.why, "m")
			if !strings.Contains(logs.String(), tc.wantInLog) {
				t.Errorf("recording %q: log %q lacks %q", tc.why, logs.String(), tc.wantInLog)
			}
		}
		// Before Start: the buffer holds 2, the third is dropped.
		for i := range 3 {
			r.Eventf(cm, corev1.EventTypeNormal, "Burst", "before start %d", i)
		}
		if !strings.Contains(logs.String(), "buffer full") {
			t.Errorf("log %q lacks the full buffer", logs.String())
		}
		startRecorder(t, r)
		// The spam filter has no token left (burst 3: the two buffered
		// and the one the full buffer dropped took them): all filtered.
		for i := range 5 {
			r.Eventf(cm, corev1.EventTypeNormal, "Burst", "after start %d", i)
		}
		testutil.Eventually(t, "the events that passed", func() error {
			if n := len(eventsAbout(t, ctx, e.c, ns, "hot")); n != 2 {
				return fmt.Errorf("%d events", n)
			}
			return nil
		})
		time.Sleep(200 * time.Millisecond) // nothing more comes
		if n := len(eventsAbout(t, ctx, e.c, ns, "hot")); n != 2 {
			t.Errorf("%d events about hot, want 2 (buffer 2, then the spam filter)", n)
		}
		if err := r.Start(ctx); err == nil || !strings.Contains(err.Error(), "running already") {
			t.Errorf("a second Start: %v", err)
		}
	})
}

func TestNewRecorderErrors(t *testing.T) {
	c := &Client{}
	for _, tc := range []struct {
		name      string
		c         *Client
		component string
		opts      RecorderOptions
		want      string
	}{
		{"no client", nil, "x", RecorderOptions{}, "needs a Client"},
		{"no component", c, "", RecorderOptions{}, "component name"},
		{"negative buffer", c, "x", RecorderOptions{Buffer: -1}, "Buffer -1"},
		{"negative burst", c, "x", RecorderOptions{Burst: -1}, "Burst -1"},
		{"negative refill", c, "x", RecorderOptions{Refill: -time.Second}, "Refill -1s"},
	} {
		if _, err := NewRecorder(tc.c, tc.component, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// An event the server refuses with an error status is not retried, so it
// never holds up the events recorded after it: an Event too large for etcd
// (a 500 from kube-apiserver, which etcd's 2 MiB request limit makes
// permanent) is dropped, and the next event is written at once. client-go's
// recorder retries no status at all; the statuses that say "later" (429,
// 503, 504, ServerTimeout) are retried.
func TestRecorderDoesNotRetryRefusals(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{apierrors.NewInternalError(errors.New("etcdserver: request is too large")), false},
		{&apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500, Message: "rpc error: code = ResourceExhausted"}}, false},
		{apierrors.NewBadRequest("bad"), false},
		{apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "e", errors.New("terminating")), false},
		{apierrors.NewTooManyRequests("later", 1), true},
		{apierrors.NewServiceUnavailable("later"), true},
		{apierrors.NewServerTimeout(schema.GroupResource{Resource: "events"}, "create", 1), true},
		{apierrors.NewTimeoutError("later", 1), true},
		{errors.New("connection refused"), true},
		{context.Canceled, false},
	} {
		if got := retriable(tc.err); got != tc.want {
			t.Errorf("retriable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		var logs testutil.SyncBuffer
		r, err := NewRecorder(e.c, "verbose", RecorderOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		startRecorder(t, r)
		big := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: "big"}}
		small := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: "small"}}
		r.Event(big, corev1.EventTypeWarning, "Dump", strings.Repeat("x", 2<<20+1<<19)) // 2.5 MiB
		r.Event(small, corev1.EventTypeNormal, "After", "after the big one")
		testutil.Eventually(t, "the event after the big one", func() error {
			if n := len(eventsAbout(t, ctx, e.c, e.Namespace, "small")); n != 1 {
				return fmt.Errorf("%d events about small", n)
			}
			return nil
		})
		// The real server refuses the big event (too large for etcd), and the
		// recorder gives it up at its first try: retries, 5-15 s apart, would
		// have held the small one back past Eventually's bound. The embedded
		// server, without etcd's limit, stores it.
		if len(eventsAbout(t, ctx, e.c, e.Namespace, "big")) == 0 {
			if out := logs.String(); !strings.Contains(out, "reason=Dump tries=1 ") {
				t.Fatalf("the big event was neither written nor given up at its first try; logs:\n%s", out)
			}
		}
	})
}

// The spam filter forgets the objects that were quiet longest, as client-go's
// LRU cache does, not the ones it met first: an object in a hot loop stays
// filtered however many other objects record events meanwhile.
func TestRecorderSpamFilterKeepsHotObjects(t *testing.T) {
	r, err := NewRecorder(&Client{}, "hot-loop", RecorderOptions{Burst: 1, Refill: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	event := func(name string) *corev1.Event {
		return &corev1.Event{Source: corev1.EventSource{Component: "hot-loop"},
			InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: "ns", Name: name}}
	}
	hot := event("hot")
	if !r.allow(hot) {
		t.Fatal("the first event of hot was filtered")
	}
	for i := range 2 * recorderCacheSize {
		if !r.allow(event(fmt.Sprintf("quiet-%d", i))) {
			t.Fatalf("the first event of quiet-%d was filtered", i)
		}
		if r.allow(hot) {
			t.Fatalf("hot passed the filter again after %d other objects", i+1)
		}
	}
}

// From the tenth distinct message of similar events (same object, type and
// reason) on, the events are written as one Event, "(combined from similar
// events): <last message>", counted — client-go's EventAggregator.
func TestRecorderAggregatesSimilarEvents(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		ns := e.Namespace
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "varied"}}
		if err := e.c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		r, err := NewRecorder(e.c, "aggregator", RecorderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 12 {
			r.Eventf(cm, corev1.EventTypeWarning, "SyncFailed", "attempt %d failed", i)
		}
		r.Event(cm, corev1.EventTypeNormal, "Synced", "synced") // another reason: its own Event
		startRecorder(t, r)
		var combined *corev1.Event
		testutil.Eventually(t, "the events, nine plain and one combined of three", func() error {
			evs := eventsAbout(t, ctx, e.c, ns, "varied")
			plain := 0
			combined = nil
			for i := range evs {
				switch {
				case strings.HasPrefix(evs[i].Message, "(combined from similar events): "):
					combined = &evs[i]
				case evs[i].Reason == "SyncFailed":
					plain++
				}
			}
			if plain != 9 || combined == nil || combined.Count != 3 || len(evs) != 11 {
				return fmt.Errorf("%d events: %d plain, combined %v", len(evs), plain, combined)
			}
			return nil
		})
		if combined.Message != "(combined from similar events): attempt 11 failed" || combined.Type != corev1.EventTypeWarning {
			t.Errorf("combined event: %s %q", combined.Type, combined.Message)
		}
	})
}
