package client

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/rctx"
	"kloop.dev/kloop/internal/testutil"
)

// lagging returns a started factory whose watches lag the server by d, and
// a client over it with opts.
func lagging(t *testing.T, ae *apiservertest.Env, d time.Duration, opts Options) *Client {
	t.Helper()
	f, err := informer.NewFactory(ae.Config(), informer.FactoryOptions{HTTPClient: ae.HTTPClient(testutil.DelayWatches(d)),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	opts.Factory = f
	opts.Logger = slog.New(slog.DiscardHandler)
	c, err := New(ae.Config(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// statsProvider counts what the client reports.
type statsProvider struct {
	mu     sync.Mutex // guards counts
	counts readStats
}

// readStats are the counts of a statsProvider.
type readStats struct{ ReadWaits, StaleReads int }

func (p *statsProvider) ReadWaited(_ time.Duration, stale bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts.ReadWaits++
	if stale {
		p.counts.StaleReads++
	}
}

// get returns a copy of the counts.
func (p *statsProvider) get() readStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts
}

// TestReadYourOwnWrites: with watches 500 ms behind the server, a cached
// read right after the client's own create, update, status update, patch
// or delete sees it; with the client's opt-out it does not.
func TestReadYourOwnWrites(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		for _, on := range []bool{true, false} {
			name := "on"
			if !on {
				name = "off"
			}
			t.Run(name, func(t *testing.T) {
				ctx := timeout(t)
				m := &statsProvider{}
				c := lagging(t, ae, 500*time.Millisecond, Options{DisableReadYourOwnWrites: !on, Metrics: m})
				ns := ae.Namespace
				var l corev1.ConfigMapList
				if err := c.List(ctx, &l, InNamespace(ns)); err != nil { // the informer, synced
					t.Fatal(err)
				}
				before := len(l.Items) // the namespace's kube-root-ca.crt

				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "ryow-" + name + "-"}, Data: map[string]string{"v": "1"}}
				if err := c.Create(ctx, cm); err != nil {
					t.Fatal(err)
				}
				key := KeyOf(cm)
				var got corev1.ConfigMap
				err := c.Get(ctx, key, &got)
				if on && err != nil || !on && !apierrors.IsNotFound(err) {
					t.Fatalf("Get after Create: %v (read-your-own-writes %v)", err, on)
				}
				if err := c.List(ctx, &l, InNamespace(ns)); err != nil {
					t.Fatal(err)
				}
				if found := len(l.Items) == before+1; found != on {
					t.Fatalf("List after Create: %d items, %d before it (read-your-own-writes %v)", len(l.Items), before, on)
				}
				if !on {
					return
				}
				cm.Data["v"] = "2"
				if err := c.Update(ctx, cm); err != nil {
					t.Fatal(err)
				}
				if err := c.Get(ctx, key, &got); err != nil || got.Data["v"] != "2" || got.ResourceVersion != cm.ResourceVersion {
					t.Fatalf("Get after Update: %v, v=%q rv %s; want v=2 rv %s", err, got.Data["v"], got.ResourceVersion, cm.ResourceVersion)
				}
				if err := c.Patch(ctx, cm, RawPatch("application/merge-patch+json", []byte(`{"data":{"v":"3"}}`))); err != nil {
					t.Fatal(err)
				}
				if err := c.Get(ctx, key, &got); err != nil || got.Data["v"] != "3" {
					t.Fatalf("Get after Patch: %v, v=%q", err, got.Data["v"])
				}
				if err := c.Delete(ctx, cm); err != nil {
					t.Fatal(err)
				}
				if err := c.Get(ctx, key, &got); !apierrors.IsNotFound(err) {
					t.Fatalf("Get after Delete: %v, want NotFound", err)
				}
				if err := c.List(ctx, &l, InNamespace(ns)); err != nil || len(l.Items) != before {
					t.Fatalf("List after Delete: %v, %d items", err, len(l.Items))
				}
				if s := m.get(); s.ReadWaits == 0 || s.StaleReads != 0 {
					t.Fatalf("stats %+v: want waits and no stale read", s)
				}
			})
		}
	})
}

// TestReadYourOwnWritesTimeout: a cache that lags more than the timeout is
// read as it is once the timeout passed, counted as a stale read; a read in
// a reconcile whose controller opted out does not wait at all.
func TestReadYourOwnWritesTimeout(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		m := &statsProvider{}
		c := lagging(t, ae, 3*time.Second, Options{ReadYourOwnWritesTimeout: 200 * time.Millisecond, Metrics: m})
		var l corev1.ConfigMapList
		if err := c.List(ctx, &l, InNamespace(ae.Namespace)); err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ae.Namespace, Name: "slow"}}
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		optedOut := &rctx.Scope{Context: ctx, NoReadWait: true}
		start := time.Now()
		if err := c.Get(optedOut, KeyOf(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Fatalf("Get in an opted-out reconcile: %v, want NotFound at once", err)
		}
		if d := time.Since(start); d > 150*time.Millisecond {
			t.Fatalf("an opted-out read waited %s", d)
		}
		if err := c.Get(ctx, KeyOf(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Fatalf("Get past the timeout: %v, want NotFound (the stale cache)", err)
		}
		if d := time.Since(start); d < 150*time.Millisecond {
			t.Fatalf("the read waited %s, not the timeout", d)
		}
		if s := m.get(); s.StaleReads != 1 || s.ReadWaits != 1 {
			t.Fatalf("stats %+v: want one wait, stale", s)
		}
		// Past its deadline, the write is forgotten: reads no longer wait.
		start = time.Now()
		if err := c.List(ctx, &l, InNamespace(ae.Namespace)); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 150*time.Millisecond {
			t.Fatalf("a read after the deadline waited %s", d)
		}
	})
}
