package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/apiserver"
	"kloop.dev/kloop/cache"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/reflector"
	"kloop.dev/kloop/workqueue"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "rawloop:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The embedded API server, in this process.
	srv, err := apiserver.New(apiserver.Options{})
	if err != nil {
		return err
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Start(ctx) }()
	defer func() { cancel(); <-srvDone }()
	select {
	case <-srv.Ready():
	case err := <-srvDone:
		return fmt.Errorf("api server: %w", err)
	}
	cfg := srv.RESTConfig()

	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	for _, name := range []string{"alpha", "beta"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Data: map[string]string{"k": "v"}}
		if err := c.Create(ctx, cm); err != nil {
			return err
		}
	}

	// Informer: list+watch of the ConfigMaps of default into a cache, handlers
	// after the cache.
	lw, err := reflector.NewRESTListerWatcher[*corev1.ConfigMap](cfg, corev1.SchemeGroupVersion.WithResource("configmaps"), "default", reflector.RESTOptions[*corev1.ConfigMap]{})
	if err != nil {
		return err
	}
	inf, err := informer.New[*corev1.ConfigMap](lw, informer.Options[*corev1.ConfigMap]{})
	if err != nil {
		return err
	}
	queue, err := workqueue.New(workqueue.Options[string]{Name: "configmaps"})
	if err != nil {
		return err
	}
	enqueue := func(obj *corev1.ConfigMap) { queue.Add(cache.Key(obj)) }
	if _, err := inf.AddHandler(informer.HandlerFuncs[*corev1.ConfigMap]{
		AddFunc:    func(obj *corev1.ConfigMap, _ bool) { enqueue(obj) },
		UpdateFunc: func(_, obj *corev1.ConfigMap) { enqueue(obj) },
		DeleteFunc: func(d informer.Deleted[*corev1.ConfigMap]) { queue.Add(d.Key) },
	}, informer.HandlerOptions{}); err != nil {
		return err
	}
	infDone := make(chan error, 1)
	go func() { infDone <- inf.Run(ctx) }()
	if err := inf.WaitForCacheSync(ctx); err != nil {
		return err
	}

	// One worker: the seeds' loop, with our reconcile.
	stamped := map[string]bool{}
	reconcile := func(key string) error {
		ns, name, err := cache.SplitKey(key)
		if err != nil {
			return err
		}
		cm, ok := inf.Get(ns, name) // the cache: never mutate it
		if !ok {
			return nil // deleted: nothing to do
		}
		if cm.Labels["kloop.dev/seen"] == "true" {
			return nil // level-triggered: already as it should be
		}
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"kloop.dev/seen":"true"}}}`))
		if err := c.Patch(ctx, cm.DeepCopy(), patch); err != nil {
			return client.IgnoreNotFound(err)
		}
		stamped[key] = true
		return nil
	}
	workerDone := make(chan struct{})
	go func() {
		defer close(workerDone)
		for {
			key, shutdown := queue.Get()
			if shutdown {
				return
			}
			if err := reconcile(key); err != nil {
				queue.AddRateLimited(key) // retry with backoff
			} else {
				queue.Forget(key)
			}
			queue.Done(key)
		}
	}()

	// A third ConfigMap appears while the controller runs.
	if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gamma"}}); err != nil {
		return err
	}

	// Wait until the cache shows every ConfigMap stamped.
	deadline := time.Now().Add(10 * time.Second)
	for !allStamped(inf.List()) {
		if time.Now().After(deadline) {
			return errors.New("timed out waiting for the labels")
		}
		time.Sleep(5 * time.Millisecond)
	}
	queue.ShutDownWithDrain()
	<-workerDone
	cancel()
	if err := <-infDone; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}

	var lines []string
	for _, cm := range inf.List() {
		if cm.Namespace == "default" {
			lines = append(lines, fmt.Sprintf("%s/%s kloop.dev/seen=%s", cm.Namespace, cm.Name, cm.Labels["kloop.dev/seen"]))
		}
	}
	sort.Strings(lines)
	fmt.Fprintln(out, strings.Join(lines, "\n"))
	fmt.Fprintf(out, "patched %d ConfigMaps\n", len(stamped))
	return nil
}

func allStamped(cms []*corev1.ConfigMap) bool {
	n := 0
	for _, cm := range cms {
		if cm.Namespace != "default" {
			continue
		}
		if cm.Labels["kloop.dev/seen"] != "true" {
			return false
		}
		n++
	}
	return n == 4 // alpha, beta, gamma, and the kube-root-ca.crt every namespace has
}
