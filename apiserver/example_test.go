package apiserver_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"kloop.dev/kloop/apiserver"
)

// Start a server, talk to it with client-go, stop it.
func Example() {
	srv, err := apiserver.New(apiserver.Options{})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- srv.Start(ctx) }()
	<-srv.Ready()

	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		panic(err)
	}
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hello"}, Data: map[string]string{"greeting": "hi"}}, metav1.CreateOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(cm.Name, cm.Data["greeting"], cm.Generation)

	cancel()
	fmt.Println("stopped:", <-done)
	// Output:
	// hello hi 0
	// stopped: <nil>
}
