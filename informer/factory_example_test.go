package informer_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/informer"
)

// Two controllers ask the factory for ConfigMaps in "default": they share
// one informer (one watch, one cache). A handler that only enqueues keys
// hears of a change after the cache has it.
func ExampleFactory() {
	srv, err := apiservertest.New(apiservertest.Options{})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cfg := srv.RESTConfig()

	f, err := informer.NewFactory(cfg, informer.FactoryOptions{})
	if err != nil {
		panic(err)
	}
	// The example's ConfigMaps of default (which also holds the cluster's
	// kube-root-ca.crt).
	scope := informer.Scope{Namespace: "default", LabelSelector: "example=factory"}
	first, _ := informer.InformerFor[*corev1.ConfigMap](f, scope)
	second, _ := informer.InformerFor[*corev1.ConfigMap](f, scope)
	fmt.Println("informers:", f.NumInformers())

	keys := make(chan string, 10)
	enqueue := func(cm *corev1.ConfigMap) { keys <- cm.Namespace + "/" + cm.Name }
	reg, _ := first.AddHandler(informer.HandlerFuncs[*corev1.ConfigMap]{
		AddFunc:    func(cm *corev1.ConfigMap, _ bool) { enqueue(cm) },
		UpdateFunc: func(_, cm *corev1.ConfigMap) { enqueue(cm) },
		DeleteFunc: func(d informer.Deleted[*corev1.ConfigMap]) { keys <- d.Key },
	}, informer.HandlerOptions{})

	fctx, stop := context.WithCancel(ctx)
	factoryDone := make(chan error)
	go func() { factoryDone <- f.Start(fctx) }()
	if err := f.WaitForCacheSync(ctx); err != nil {
		panic(err)
	}
	for !reg.HasSynced() { // a controller waits so before starting workers
		time.Sleep(time.Millisecond)
	}

	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		panic(err)
	}
	_, err = cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Labels: map[string]string{"example": "factory"}}, Data: map[string]string{"color": "blue"}}, metav1.CreateOptions{})
	if err != nil {
		panic(err)
	}
	key := <-keys
	cm, _ := second.GetByKey(key) // the other caller's view: the same cache
	fmt.Println("enqueued:", key, "cached color:", cm.Data["color"])

	stop()
	fmt.Println("factory:", <-factoryDone)
	cancel()
	fmt.Println("server:", srv.Close())
	// Output:
	// informers: 1
	// enqueued: default/settings cached color: blue
	// factory: <nil>
	// server: <nil>
}
