package client_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/informer"
)

// Writes go to the API server; reads come from the informer cache, which
// follows a moment later.
func Example() {
	srv, err := apiservertest.New(apiservertest.Options{})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := srv.RESTConfig()

	factory, err := informer.NewFactory(cfg, informer.FactoryOptions{})
	if err != nil {
		panic(err)
	}
	fctx, stopFactory := context.WithCancel(ctx)
	factoryDone := make(chan error)
	go func() { factoryDone <- factory.Start(fctx) }()
	c, err := client.New(cfg, client.Options{Factory: factory})
	if err != nil {
		panic(err)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}, Data: map[string]string{"color": "blue"}}
	if err := c.Create(ctx, cm); err != nil {
		panic(err)
	}
	again := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}}
	err = c.Create(ctx, again) // AlreadyExists: fine for a deterministic name
	fmt.Println("created:", cm.UID != "", "again:", client.IgnoreAlreadyExists(err))

	// The first cached read starts the ConfigMap informer and waits for it.
	var got corev1.ConfigMap
	err = c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "settings"}, &got)
	fmt.Println("cached get:", got.Data["color"], err)

	err = c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "missing"}, &got)
	fmt.Println("missing:", client.IgnoreNotFound(err))

	stopFactory()
	fmt.Println("factory stopped:", <-factoryDone)
	cancel()
	fmt.Println("server stopped:", srv.Close())
	// Output:
	// created: true again: <nil>
	// cached get: blue <nil>
	// missing: <nil>
	// factory stopped: <nil>
	// server stopped: <nil>
}
