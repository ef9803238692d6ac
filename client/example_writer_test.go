package client_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/client"
)

// fakeWriter records writes instead of sending them: a unit test's
// stand-in for *client.Client where code takes a client.Writer. Embedding
// the interface leaves the methods a test does not need unimplemented.
type fakeWriter struct {
	client.Writer
	created []string
	deleted []string
}

func (f *fakeWriter) Create(_ context.Context, obj client.Object, _ ...client.WriteOption) error {
	f.created = append(f.created, client.KeyOf(obj).String())
	return nil
}

func (f *fakeWriter) DeleteAllOf(_ context.Context, _ client.Object, opts ...client.DeleteAllOfOption) error {
	f.deleted = append(f.deleted, fmt.Sprintf("%d options", len(opts)))
	return nil
}

// resetConfig is code under test: it takes a client.Writer, so the real
// client and a fake both do.
func resetConfig(ctx context.Context, w client.Writer, ns string) error {
	if err := w.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns),
		client.MatchingLabels(map[string]string{"app": "web"}), client.DryRun()); err != nil {
		return err
	}
	return w.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})
}

// A fake Writer stands in for the client in a unit test.
func ExampleWriter() {
	var _ client.Writer = (*client.Client)(nil) // what production passes
	f := &fakeWriter{}
	if err := resetConfig(context.Background(), f, "prod"); err != nil {
		fmt.Println(err)
	}
	fmt.Println("deleted:", f.deleted)
	fmt.Println("created:", f.created)
	// Output:
	// deleted: [3 options]
	// created: [prod/web]
}
