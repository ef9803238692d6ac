package informer_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testutil"
)

// TestInformerStats: a factory's snapshot counts each informer's events and
// cached objects.
func TestInformerStats(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		f, err := informer.NewFactory(env.Config(), informer.FactoryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		inf, err := f.ForObject(&corev1.ConfigMap{}, informer.Scope{Namespace: env.Namespace, FieldSelector: "metadata.name!=kube-root-ca.crt"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- f.Start(ctx) }()
		defer func() { cancel(); <-done }()
		if err := inf.WaitForCacheSync(ctx); err != nil {
			t.Fatal(err)
		}
		cl, err := kubernetes.NewForConfig(env.Config())
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: fmt.Sprintf("s%d", i)}}
			if _, err := cl.CoreV1().ConfigMaps(env.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		testutil.Eventually(t, "three events and three objects in the snapshot", func() bool {
			st := f.InformerStats()
			return len(st) == 1 && st[0].Kind == "ConfigMap" && st[0].Events >= 3 && st[0].Cached == 3 && st[0].Queued >= 0
		})
	})
}
