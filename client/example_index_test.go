package client_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/informer"
)

// A field index lets a cached List select on a field the cache does not know
// by itself, as controller-runtime's FieldIndexer.
func ExampleClient_IndexField() {
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

	err = c.IndexField(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	})
	fmt.Println("indexed:", err)
	for i, node := range []string{"node-a", "node-b", "node-a"} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("web-%d", i)},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
		}
		if err := c.Create(ctx, pod); err != nil {
			panic(err)
		}
	}
	var pods corev1.PodList
	for len(pods.Items) != 2 { // the cache follows the writes a moment later
		if err := c.List(ctx, &pods, client.MatchingFields(map[string]string{"spec.nodeName": "node-a"})); err != nil {
			panic(err)
		}
		time.Sleep(time.Millisecond)
	}
	fmt.Println("on node-a:", pods.Items[0].Name, pods.Items[1].Name)

	stopFactory()
	fmt.Println("factory stopped:", <-factoryDone)
	cancel()
	fmt.Println("server stopped:", srv.Close())
	// Output:
	// indexed: <nil>
	// on node-a: web-0 web-2
	// factory stopped: <nil>
	// server stopped: <nil>
}

// A Recorder writes Kubernetes Events about objects (kubectl describe shows
// them); a repeat counts on the existing Event.
func ExampleRecorder() {
	srv, err := apiservertest.New(apiservertest.Options{})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := client.New(srv.RESTConfig(), client.Options{}) // uncached: reads go to the server
	if err != nil {
		panic(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}}
	if err := c.Create(ctx, cm); err != nil {
		panic(err)
	}

	rec, err := client.NewRecorder(c, "settings-controller", client.RecorderOptions{})
	if err != nil {
		panic(err)
	}
	rctx, stopRecorder := context.WithCancel(ctx)
	recDone := make(chan error)
	go func() { recDone <- rec.Start(rctx) }()
	rec.Event(cm, corev1.EventTypeNormal, "Synced", "settings applied")
	rec.Event(cm, corev1.EventTypeNormal, "Synced", "settings applied")
	var events corev1.EventList
	for len(events.Items) != 1 || events.Items[0].Count != 2 { // written in the background
		if err := c.List(ctx, &events, client.InNamespace("default")); err != nil {
			panic(err)
		}
		time.Sleep(time.Millisecond)
	}
	ev := events.Items[0]
	fmt.Printf("%s %s %s/%s %q x%d from %s\n", ev.Type, ev.Reason, ev.InvolvedObject.Kind, ev.InvolvedObject.Name,
		ev.Message, ev.Count, ev.Source.Component)

	stopRecorder()
	fmt.Println("recorder stopped:", <-recDone)
	cancel()
	fmt.Println("server stopped:", srv.Close())
	// Output:
	// Normal Synced ConfigMap/settings "settings applied" x2 from settings-controller
	// recorder stopped: <nil>
	// server stopped: <nil>
}
