package client_test

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/client"
)

// Server-side apply with a typed apply configuration: the configuration
// names only the fields its manager owns; another manager setting one of
// them to another value is a conflict until it forces.
func ExampleClient_Apply() {
	srv, err := apiservertest.New(apiservertest.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	ctx := context.Background()
	c, err := client.New(srv.RESTConfig(), client.Options{FieldOwner: "settings-controller"})
	if err != nil {
		panic(err)
	}

	cfg := corev1ac.ConfigMap("settings", "default").WithData(map[string]string{"color": "blue"})
	if err := c.Apply(ctx, cfg); err != nil {
		panic(err)
	}
	// The configuration holds the server's answer now.
	fmt.Println("applied:", cfg.Data["color"], "uid set:", cfg.UID != nil)

	other := corev1ac.ConfigMap("settings", "default").WithData(map[string]string{"color": "red"})
	err = c.Apply(ctx, other, client.FieldOwner("someone-else"))
	fmt.Println("conflict:", apierrors.IsConflict(err))
	if err := c.Apply(ctx, other, client.FieldOwner("someone-else"), client.ForceOwnership()); err != nil {
		panic(err)
	}
	fmt.Println("forced:", other.Data["color"])
	// Output:
	// applied: blue uid set: true
	// conflict: true
	// forced: red
}
