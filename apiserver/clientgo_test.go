package apiserver_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// TestProtobufClient: a client that sends protobuf and prefers it in
// answers (as kube-controller-manager does) works on both servers (every
// verb and kind: TestProtobufTypedClients).
func TestProtobufClient(t *testing.T) {
	forEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		cfg := env.Config()
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t)
		cms := cs.CoreV1().ConfigMaps(env.Namespace)
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pb", Labels: map[string]string{"a": "b"}}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
		if err != nil || cm.Data["k"] != "v" || cm.UID == "" {
			t.Fatalf("create: %v %+v", err, cm)
		}
		w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		cm.Data["k"] = "w"
		if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil || cm.Data["k"] != "w" {
			t.Fatalf("update: %v", err)
		}
		if l, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "a=b"}); err != nil || len(l.Items) != 1 || l.Items[0].Data["k"] != "w" {
			t.Fatalf("list: %v %+v", err, l)
		}
		if err := cms.Delete(ctx, "pb", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}}); err != nil {
			t.Fatal(err)
		}
		var got []string
		for len(got) < 2 {
			ev := <-w.ResultChan()
			o, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				t.Fatalf("watch: %v %+v", ev.Type, ev.Object)
			}
			got = append(got, string(ev.Type)+":"+o.Data["k"])
		}
		if fmt.Sprint(got) != "[MODIFIED:w DELETED:w]" {
			t.Fatalf("watch events %v", got)
		}
	})
}

func TestSharedInformer(t *testing.T) {
	onTargets(t, apiservertest.Options{}, testSharedInformer)
}

func testSharedInformer(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface) {
	ctx, cancel := context.WithCancel(ctxT(t))
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(env.Namespace))
	inf := factory.Core().V1().ConfigMaps().Informer()
	var mu sync.Mutex
	state := map[string]string{}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			cm := obj.(*corev1.ConfigMap)
			mu.Lock()
			state[cm.Name] = cm.Data["v"]
			mu.Unlock()
		},
		UpdateFunc: func(_, obj any) {
			cm := obj.(*corev1.ConfigMap)
			mu.Lock()
			state[cm.Name] = cm.Data["v"]
			mu.Unlock()
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			mu.Lock()
			delete(state, obj.(*corev1.ConfigMap).Name)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	cms := cs.CoreV1().ConfigMaps(env.Namespace)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}, Data: map[string]string{"v": "0"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	cm, _ := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
	cm.Data["v"] = "2"
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "before", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		got := fmt.Sprint(state)
		mu.Unlock()
		if got == "map[after:2 kube-root-ca.crt:]" { // the namespace's own ConfigMap has no v
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("informer state %s", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if keys := inf.GetStore().ListKeys(); !slices.Equal(slices.Sorted(slices.Values(keys)), []string{env.Namespace + "/after", env.Namespace + "/kube-root-ca.crt"}) {
		t.Fatalf("store keys %v", keys)
	}
}
