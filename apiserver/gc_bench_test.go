package apiserver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"kloop.dev/kloop/apiserver"
	"kloop.dev/kloop/apiserver/apiservertest"
)

// BenchmarkGarbageCollection measures how long the garbage collector takes
// to collect 10,000 dependents of one owner (ConfigMaps owning
// ConfigMaps): from the owner's DELETE to the last dependent gone, after a
// Background delete and after a Foreground one (the dependents block the
// owner; it goes last). One collection per iteration; the 10,000 creates
// before it are not timed, and the collector is given a moment to see them
// all. Side by side on the embedded server and on the real kube-apiserver
// with kube-controller-manager (its client rate limit raised to 1,000 qps
// by apiservertest, 20 workers). cpu-s/collection is this process's CPU
// time during the collection: on the embedded target the server's and the
// collector's, on the real one only the polling's.
//
//	KLOOP_REAL_K8S_DIR=$(bash hack/realk8s.sh) go test -run '^$' -bench BenchmarkGarbageCollection -benchtime 1x ./apiserver/
func BenchmarkGarbageCollection(b *testing.B) {
	const dependents = 10_000
	for _, target := range apiservertest.Targets() {
		b.Run(string(target), func(b *testing.B) {
			env := apiservertest.Start(b, target, apiservertest.Options{})
			cfg := env.Config()
			cfg.QPS = -1
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				b.Fatal(err)
			}
			for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground} {
				b.Run(string(policy), func(b *testing.B) {
					for i := range b.N {
						b.StopTimer()
						ctx := context.Background()
						ns := fmt.Sprintf("%s-%s-%d", env.Namespace[:min(len(env.Namespace), 40)], strings.ToLower(string(policy)), i)
						ns = ns[:min(len(ns), 63)]
						if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
							b.Fatal(err)
						}
						owner, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
						if err != nil {
							b.Fatal(err)
						}
						block := true
						ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID, BlockOwnerDeletion: &block}
						var wg sync.WaitGroup
						errs := make(chan error, 8)
						for w := range 8 {
							wg.Go(func() {
								for j := w; j < dependents; j += 8 {
									cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("dep-%05d", j), Labels: map[string]string{"gc": "dep"},
										OwnerReferences: []metav1.OwnerReference{ref}}}
									if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
										errs <- err
										return
									}
								}
							})
						}
						wg.Wait()
						close(errs)
						if err := <-errs; err != nil {
							b.Fatal(err)
						}
						time.Sleep(3 * time.Second) // the collector sees them all
						l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "gc=dep", Limit: 1})
						if err != nil {
							b.Fatal(err)
						}
						// A watch from now counts the dependents' deletions.
						wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
						w, err := cs.CoreV1().ConfigMaps(ns).Watch(wctx, metav1.ListOptions{LabelSelector: "gc=dep", ResourceVersion: l.ResourceVersion})
						if err != nil {
							b.Fatal(err)
						}
						p := policy
						b.StartTimer()
						start, cpu0 := time.Now(), processCPU()
						if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: &p}); err != nil {
							b.Fatal(err)
						}
						for n := 0; n < dependents; {
							ev, ok := <-w.ResultChan()
							if !ok {
								b.Fatalf("the watch ended after %d deletions", n)
							}
							if ev.Type == "DELETED" {
								n++
							}
						}
						w.Stop()
						cancel()
						if policy == metav1.DeletePropagationForeground {
							// The owner goes after them.
							for {
								if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "owner", metav1.GetOptions{}); apierrors.IsNotFound(err) {
									break
								}
								time.Sleep(time.Millisecond)
							}
						}
						b.StopTimer()
						// The process's CPU (server, collector and this
						// loop's polls) tells the work from the wait on a
						// machine shared with other loads.
						b.ReportMetric(float64(processCPU()-cpu0)/1e9, "cpu-s/collection")
						b.ReportMetric(time.Since(start).Seconds(), "s/collection")
						b.ReportMetric(dependents/time.Since(start).Seconds(), "dependents/s")
						_ = cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
					}
				})
			}
		})
	}
}

// BenchmarkControllersOverhead measures what the server's controllers (the
// garbage collector's metadata watch of every resource above all) add to
// each write: PUTs of a small ConfigMap through the handler in process, on
// a serving server with its controllers and without
// (Options.DisableControllers), side by side. cpu-ns/op is the process's
// CPU per PUT, the controllers' included; the run ends once the collector
// has caught up (its graph changes drained).
//
//	go test -run '^$' -bench BenchmarkControllersOverhead -benchtime 20000x ./apiserver/
func BenchmarkControllersOverhead(b *testing.B) {
	for _, tc := range []struct {
		name string
		off  bool
	}{{"controllers", false}, {"no-controllers", true}} {
		b.Run(tc.name, func(b *testing.B) {
			srv, err := apiserver.New(apiserver.Options{Token: "t", DisableControllers: tc.off})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- srv.Start(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					b.Error(err)
				}
			}()
			<-srv.Ready()
			h := srv.Handler()
			do := func(method, path, body string, want int) {
				req := httptest.NewRequest(method, path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer t")
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != want {
					b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
				}
			}
			body := func(seq int) string {
				return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p","namespace":"default"},"data":{"seq":"` + fmt.Sprint(seq) + `"}}`
			}
			do("POST", "/api/v1/namespaces/default/configmaps", body(-1), http.StatusCreated)
			time.Sleep(200 * time.Millisecond) // the controllers' first lists
			cpu0 := processCPU()
			seq := 0
			for b.Loop() {
				do("PUT", "/api/v1/namespaces/default/configmaps/p", body(seq), http.StatusOK)
				seq++
			}
			time.Sleep(100 * time.Millisecond) // the watches drained (a bounded wait, not timed)
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
