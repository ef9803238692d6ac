package client

import (
	"context"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/informer"
)

// BenchmarkCachedGet: a Get served from the informer cache (a deep copy of
// a small ConfigMap), the read a reconcile does first.
func BenchmarkCachedGet(b *testing.B) {
	ctx := b.Context()
	c := cachedClient(b)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bench"}, Data: map[string]string{"k": "v"}}
	if err := c.Create(ctx, cm); err != nil {
		b.Fatal(err)
	}
	key := ObjectKey{Namespace: "default", Name: "bench"}
	var got corev1.ConfigMap
	for c.Get(ctx, key, &got) != nil {
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Get(ctx, key, &got); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCachedGetParallel: cached Gets of several kinds (two API groups)
// from parallel goroutines, as the workers of several controllers do. The
// mapper serves cached mappings without a lock, so the rate scales with
// GOMAXPROCS (-cpu 1,2,4).
func BenchmarkCachedGetParallel(b *testing.B) {
	ctx := b.Context()
	c := cachedClient(b)
	meta := metav1.ObjectMeta{Namespace: "default", Name: "bench"}
	objs := []Object{
		&corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": "v"}},
		&corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"k": []byte("v")}},
		&corev1.ServiceAccount{ObjectMeta: meta},
		&corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
		&coordinationv1.Lease{ObjectMeta: meta},
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
	key := ObjectKey{Namespace: "default", Name: "bench"}
	for _, o := range objs {
		for c.Get(ctx, key, o.DeepCopyObject().(Object)) != nil {
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		into := make([]Object, len(objs))
		for i, o := range objs {
			into[i] = o.DeepCopyObject().(Object)
		}
		for i := 0; pb.Next(); i++ {
			if err := c.Get(ctx, key, into[i%len(into)]); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// cachedClient returns a client that reads from the informers of a factory
// started on a new embedded server; both stop when b ends.
func cachedClient(b *testing.B) *Client {
	srv := apiservertest.NewServer(b, apiservertest.Options{})
	f, err := informer.NewFactory(srv.Config(), informer.FactoryOptions{})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- f.Start(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
	c, err := New(srv.Config(), Options{Factory: f})
	if err != nil {
		b.Fatal(err)
	}
	return c
}
