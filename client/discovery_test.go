package client

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/informer"
)

// hangingTransport passes requests on to next, except those for path,
// which block until their context ends: seen gets a value when one
// arrives, ended when it ends.
type hangingTransport struct {
	next        http.RoundTripper
	path        string
	seen, ended chan struct{}
}

func (h *hangingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path != h.path {
		return h.next.RoundTrip(req)
	}
	h.seen <- struct{}{}
	<-req.Context().Done()
	h.ended <- struct{}{}
	return nil, req.Context().Err()
}

// TestDiscoveryHangSparesCachedReads is issue 16's case: while the
// discovery request for kind B (b.example/v1) hangs, cached Gets and Lists
// of kind A (ConfigMaps) are answered at once — the mapper serves cached
// mappings without a lock. B's Get returns its ctx's error when that ends,
// and the discovery request, which nobody waits for any more, ends too.
func TestDiscoveryHangSparesCachedReads(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		ht := &hangingTransport{next: e.http.Transport, path: "/apis/b.example/v1", seen: make(chan struct{}, 1), ended: make(chan struct{}, 1)}
		f, err := informer.NewFactory(e.cfg, informer.FactoryOptions{HTTPClient: &http.Client{Transport: ht}})
		if err != nil {
			t.Fatal(err)
		}
		fctx, stop := context.WithCancel(context.Background())
		fdone := make(chan error, 1)
		go func() { fdone <- f.Start(fctx) }()
		defer func() { stop(); <-fdone }()
		c, err := New(e.cfg, Options{Factory: f})
		if err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: "a"}, Data: map[string]string{"k": "v"}}
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		key := KeyOf(cm)
		if err := c.Get(ctx, key, &corev1.ConfigMap{}); err != nil { // starts and syncs A's informer
			t.Fatal(err)
		}

		ctxB, cancelB := context.WithCancel(ctx)
		defer cancelB()
		doneB := make(chan error, 1)
		go func() {
			w := &unstructured.Unstructured{}
			w.SetAPIVersion("b.example/v1")
			w.SetKind("Widget")
			doneB <- c.Get(ctxB, ObjectKey{Namespace: e.Namespace, Name: "w"}, w)
		}()
		select {
		case <-ht.seen:
		case <-ctx.Done():
			t.Fatal("B's discovery request was never sent")
		}

		doneA := make(chan error, 1)
		go func() {
			for range 100 {
				var got corev1.ConfigMap
				if err := c.Get(ctx, key, &got); err != nil {
					doneA <- err
					return
				}
				var list corev1.ConfigMapList
				if err := c.List(ctx, &list, InNamespace(e.Namespace), MatchingFields(map[string]string{"metadata.name": key.Name})); err != nil || len(list.Items) != 1 {
					doneA <- errors.Join(err, errors.New("cached List of kind A: want 1 item"))
					return
				}
			}
			doneA <- nil
		}()
		select {
		case err := <-doneA:
			if err != nil {
				t.Fatalf("cached reads of kind A: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("cached reads of kind A still waiting after 5 s while B's discovery hangs")
		}
		select {
		case err := <-doneB:
			t.Fatalf("B's Get returned while its discovery hangs: %v", err)
		default:
		}

		cancelB()
		select {
		case err := <-doneB:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("B's Get after its ctx was cancelled: %v, want ctx's error", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("B's Get still waiting 5 s after its ctx was cancelled")
		}
		select {
		case <-ht.ended:
		case <-time.After(5 * time.Second):
			t.Fatal("B's discovery request still running 5 s after its only waiter left")
		}
	})
}
