package cache

import (
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestConcurrentUse hammers one Indexer from writers, readers, Replace and
// AddIndexers at once (run with -race), then checks the structure and that
// every reader saw consistent data.
func TestConcurrentUse(t *testing.T) {
	ix, err := New(Options[*corev1.Pod]{Indexers: map[string]IndexFunc[*corev1.Pod]{"app": byApp}})
	if err != nil {
		t.Fatal(err)
	}
	const writers, perWriter = 4, 300
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range writers {
		wg.Go(func() {
			ns := fmt.Sprintf("ns%d", w)
			for i := range perWriter {
				name := fmt.Sprintf("p%d", i%50)
				app := []string{"app=web", "app=db", "tier=x"}[i%3]
				var err error
				switch i % 4 {
				case 0, 1:
					err = ix.Add(pod(ns, name, fmt.Sprint(i), app))
				case 2:
					_, _, err = ix.Swap(pod(ns, name, fmt.Sprint(i), app))
				case 3:
					err = ix.Delete(pod(ns, name, ""))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 20 {
			if err := ix.Replace([]*corev1.Pod{pod("r", fmt.Sprint(i), "1", "app=web")}, fmt.Sprint(i)); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Go(func() {
		if err := ix.AddIndexers(map[string]IndexFunc[*corev1.Pod]{"label": byLabel}); err != nil {
			errs <- err
		}
	})
	for range 2 {
		wg.Go(func() {
			for range 300 {
				for _, p := range ix.List() {
					if p == nil || p.Name == "" {
						errs <- fmt.Errorf("List returned a bad object %v", p)
						return
					}
				}
				objs, err := ix.ByIndex("app", "web")
				if err != nil {
					errs <- err
					return
				}
				for _, p := range objs {
					if p.Labels["app"] != "web" {
						errs <- fmt.Errorf("ByIndex(app, web) returned %s with labels %v", Key(p), p.Labels)
						return
					}
				}
				ns0, err := ix.ByIndex(NamespaceIndex, "ns0")
				if err != nil {
					errs <- err
					return
				}
				for _, p := range ns0 {
					if p.Namespace != "ns0" {
						errs <- fmt.Errorf("ByIndex(namespace, ns0) returned %s", Key(p))
						return
					}
				}
				ix.Get("ns1", "p3")
				ix.ListKeys()
				ix.Len()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	checkInvariants(t, ix)
}
