package client

import (
	"fmt"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testutil"
)

// A cached List never claims a resourceVersion its items are not complete
// at: while the informer lags the watch (its goroutine busy), an object
// created at or before the list's resourceVersion must be in the list.
func TestCachedListResourceVersion(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		c := e.c
		ns := e.Namespace
		cm := func(name string) *corev1.ConfigMap {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		}
		var l corev1.ConfigMapList
		if err := c.List(ctx, &l, InNamespace(ns)); err != nil { // starts the informer
			t.Fatal(err)
		}
		inf, err := informer.InformerFor[*corev1.ConfigMap](e.factory, informer.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		// An inline handler that holds the informer's goroutine on "held".
		held, release := make(chan struct{}), make(chan struct{})
		released := false
		reg, err := inf.AddHandler(informer.HandlerFuncs[*corev1.ConfigMap]{AddFunc: func(o *corev1.ConfigMap, _ bool) {
			if o.Namespace == ns && o.Name == "held" {
				close(held)
				<-release
			}
		}}, informer.HandlerOptions{Inline: true})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = inf.RemoveHandler(reg) }()
		defer func() { // before RemoveHandler: it waits for the informer
			if !released {
				close(release)
			}
		}()
		if err := c.Create(ctx, cm("held")); err != nil {
			t.Fatal(err)
		}
		select {
		case <-held:
		case <-ctx.Done():
			t.Fatal("the handler never saw the object")
		}
		late := cm("late")
		if err := c.Create(ctx, late); err != nil {
			t.Fatal(err)
		}
		lateRV, _ := strconv.ParseUint(late.ResourceVersion, 10, 64)
		// Give the watch time to bring "late" to the (held) informer.
		testutil.Eventually(t, "the watch reaching late", func() error {
			rv, _ := strconv.ParseUint(inf.LastSyncResourceVersion(), 10, 64)
			if rv < lateRV {
				return fmt.Errorf("reflector at %d, late at %d", rv, lateRV)
			}
			return nil
		})
		for _, tc := range []struct {
			name string
			opts []ListOption
		}{{"namespace", []ListOption{InNamespace(ns)}}, {"all", nil}} {
			t.Run(tc.name, func(t *testing.T) {
				var l corev1.ConfigMapList
				if err := c.List(ctx, &l, tc.opts...); err != nil {
					t.Fatal(err)
				}
				has := false
				for _, it := range l.Items {
					has = has || it.Namespace == ns && it.Name == "late"
				}
				rv, err := strconv.ParseUint(l.ResourceVersion, 10, 64)
				if l.ResourceVersion != "" && err == nil && rv >= lateRV && !has {
					t.Fatalf("the cached list claims resourceVersion %s without %q created at %d", l.ResourceVersion, "late", lateRV)
				}
			})
		}
		close(release)
		released = true
		testutil.Eventually(t, "late cached", func() error {
			return c.Get(ctx, KeyOf(late), &corev1.ConfigMap{})
		})
	})
}
