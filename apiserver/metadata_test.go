package apiserver_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// TestMetadataClient: client-go's metadata client and a metadata informer
// (GET, LIST and WATCH with as=PartialObjectMetadata[List]) read metadata
// only, on both servers.
func TestMetadataClient(t *testing.T) {
	forEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		ctx := ctxT(t)
		cs, err := kubernetes.NewForConfig(env.Config())
		if err != nil {
			t.Fatal(err)
		}
		mc, err := metadata.NewForConfig(env.Config())
		if err != nil {
			t.Fatal(err)
		}
		cms := cs.CoreV1().ConfigMaps(env.Namespace)
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"k": "v"}}, Data: map[string]string{"big": "data"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
		got, err := mc.Resource(gvr).Namespace(env.Namespace).Get(ctx, "a", metav1.GetOptions{})
		if err != nil || got.Labels["k"] != "v" || got.Name != "a" {
			t.Fatalf("get: %v %+v", err, got)
		}
		list, err := mc.Resource(gvr).Namespace(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "k=v"})
		if err != nil || len(list.Items) != 1 || list.Items[0].Name != "a" {
			t.Fatalf("list: %v %+v", err, list)
		}

		factory := metadatainformer.NewFilteredSharedInformerFactory(mc, 0, env.Namespace, nil)
		inf := factory.ForResource(gvr).Informer()
		updates := make(chan *metav1.PartialObjectMetadata, 10)
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
			if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
				updates <- m
			}
		}}); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		defer func() { close(stop); factory.Shutdown() }()
		factory.Start(stop)
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatal("metadata informer did not sync")
		}
		cm, err := cms.Get(ctx, "a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Labels["k"] = "w"
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-updates:
			if m.Labels["k"] != "w" || m.Name != "a" {
				t.Fatalf("watched %+v", m)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no update through the metadata watch")
		}
	})
}
