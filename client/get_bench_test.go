package client

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/informer"
)

// BenchmarkCachedGet: a Get served from the informer cache (a deep copy of
// a small ConfigMap), the read a reconcile does first.
func BenchmarkCachedGet(b *testing.B) {
	srv := apiservertest.NewServer(b, apiservertest.Options{})
	ctx := b.Context()
	f, err := informer.NewFactory(srv.Config(), informer.FactoryOptions{})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	fctx, cancel := context.WithCancel(ctx)
	go func() { done <- f.Start(fctx) }()
	defer func() { cancel(); <-done }()
	c, err := New(srv.Config(), Options{Factory: f})
	if err != nil {
		b.Fatal(err)
	}
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
