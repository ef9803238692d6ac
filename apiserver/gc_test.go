package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"kloop.dev/kloop/apiserver"
	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/workqueue"
)

// The garbage collector, on both servers: kube-controller-manager's beside
// the real kube-apiserver, the embedded server's own. The differential
// suite compares the same cases request by request (transcripts gc-*).

// chain makes a Deployment d, a ReplicaSet rs it controls and a Pod p rs
// controls, by hand (no controller makes them here), with
// blockOwnerDeletion on both references, and waits a moment so that the
// collector has seen them before a test deletes the owner (a collector
// that has not seen a dependent decides without it, on either server).
func chain(t *testing.T, cs kubernetes.Interface, ns string, podFinalizers ...string) (*appsv1.Deployment, *appsv1.ReplicaSet, *corev1.Pod) {
	t.Helper()
	ctx := ctxT(t)
	yes := true
	labels := map[string]string{"app": "d"}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	d, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Labels: labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "d", UID: d.UID, Controller: &yes, BlockOwnerDeletion: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: labels, Finalizers: podFinalizers,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: rs.UID, Controller: &yes, BlockOwnerDeletion: &yes}}},
		Spec: tmpl.Spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	return d, rs, p
}

// gone waits until get answers NotFound.
func gone(t *testing.T, what string, get func() error) {
	t.Helper()
	testutil.Eventually(t, what+" deleted", func() error {
		if err := get(); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get: %v", err)
		}
		return nil
	})
}

func TestGarbageCollectionPropagation(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		cs, err := kubernetes.NewForConfig(env.Config())
		if err != nil {
			t.Fatal(err)
		}
		ns := env.Namespace
		getD := func() error {
			_, err := cs.AppsV1().Deployments(ns).Get(context.Background(), "d", metav1.GetOptions{})
			return err
		}
		getRS := func() error {
			_, err := cs.AppsV1().ReplicaSets(ns).Get(context.Background(), "rs", metav1.GetOptions{})
			return err
		}
		getP := func() error {
			_, err := cs.CoreV1().Pods(ns).Get(context.Background(), "p", metav1.GetOptions{})
			return err
		}
		ctx := ctxT(t)

		t.Run("background", func(t *testing.T) {
			chain(t, cs, ns)
			if err := cs.AppsV1().Deployments(ns).Delete(ctx, "d", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := getD(); !apierrors.IsNotFound(err) {
				t.Fatalf("the owner is still there after a background delete: %v", err)
			}
			gone(t, "the ReplicaSet", getRS)
			gone(t, "the Pod", getP)
		})

		t.Run("foreground", func(t *testing.T) {
			chain(t, cs, ns, "example.com/hold")
			fg := metav1.DeletePropagationForeground
			if err := cs.AppsV1().Deployments(ns).Delete(ctx, "d", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
				t.Fatal(err)
			}
			// Each owner waits, with its foregroundDeletion finalizer, for
			// the dependents that block it; the held pod holds them all.
			testutil.Eventually(t, "the ReplicaSet deleted in the foreground", func() error {
				rs, err := cs.AppsV1().ReplicaSets(ns).Get(ctx, "rs", metav1.GetOptions{})
				if err != nil || rs.DeletionTimestamp == nil || !slicesHas(rs.Finalizers, metav1.FinalizerDeleteDependents) {
					return fmt.Errorf("%v %+v", err, rs.ObjectMeta)
				}
				return nil
			})
			testutil.Eventually(t, "the Pod being deleted", func() error {
				p, err := cs.CoreV1().Pods(ns).Get(ctx, "p", metav1.GetOptions{})
				if err != nil || p.DeletionTimestamp == nil {
					return fmt.Errorf("%v", err)
				}
				return nil
			})
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, "d", metav1.GetOptions{})
			if err != nil || d.DeletionTimestamp == nil || !slicesHas(d.Finalizers, metav1.FinalizerDeleteDependents) {
				t.Fatalf("the owner while its dependents go: %v %+v", err, d.ObjectMeta)
			}
			if _, err := cs.CoreV1().Pods(ns).Patch(ctx, "p", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			gone(t, "the Deployment", getD)
			for _, get := range []func() error{getRS, getP} {
				if err := get(); !apierrors.IsNotFound(err) {
					t.Fatalf("a dependent outlived its foreground-deleted owner: %v", err)
				}
			}
		})

		t.Run("orphan", func(t *testing.T) {
			chain(t, cs, ns)
			orphan := metav1.DeletePropagationOrphan
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, "d", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := cs.AppsV1().Deployments(ns).Delete(ctx, "d", metav1.DeleteOptions{PropagationPolicy: &orphan, Preconditions: &metav1.Preconditions{UID: &d.UID}}); err != nil {
				t.Fatal(err)
			}
			gone(t, "the Deployment", getD)
			rs, err := cs.AppsV1().ReplicaSets(ns).Get(ctx, "rs", metav1.GetOptions{})
			if err != nil || len(rs.OwnerReferences) != 0 {
				t.Fatalf("the orphaned ReplicaSet: %v, owners %+v", err, rs.OwnerReferences)
			}
			p, err := cs.CoreV1().Pods(ns).Get(ctx, "p", metav1.GetOptions{})
			if err != nil || len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != rs.UID {
				t.Fatalf("the Pod keeps its owner: %v %+v", err, p.OwnerReferences)
			}
			// The orphan stays orphaned.
			time.Sleep(200 * time.Millisecond)
			if err := getRS(); err != nil {
				t.Fatalf("the orphaned ReplicaSet was collected: %v", err)
			}
			if err := cs.AppsV1().ReplicaSets(ns).Delete(ctx, "rs", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			gone(t, "the Pod of the deleted ReplicaSet", getP)
		})
	})
}

func slicesHas(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// References kube treats as invalid: an owner in another namespace is no
// owner (the dependent goes, with a Warning event naming the reference); a
// reference whose kind does not match the object with its uid names an
// absent object, while a correct reference to the same owner keeps its
// dependent; a cluster-scoped owner keeps a namespaced dependent.
func TestGarbageCollectionInvalidReferences(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		cs, err := kubernetes.NewForConfig(env.Config())
		if err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t)
		ns := env.Namespace
		other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "o-" + ns[max(0, len(ns)-40):]}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, other, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), other.Name, metav1.DeleteOptions{}) })
		owner, err := cs.CoreV1().ConfigMaps(other.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cr, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "owner-" + ns}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.RbacV1().ClusterRoles().Delete(context.Background(), cr.Name, metav1.DeleteOptions{}) })
		time.Sleep(300 * time.Millisecond) // the collector sees the owners first
		mk := func(name string, ref metav1.OwnerReference) {
			t.Helper()
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{ref}}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		mk("elsewhere", metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID})
		mk("cluster-owned", metav1.OwnerReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: cr.Name, UID: cr.UID})
		mk("wrong-kind", metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cr.Name, UID: cr.UID})
		get := func(name string) func() error {
			return func() error {
				_, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
				return err
			}
		}
		gone(t, "the dependent of an owner in another namespace", get("elsewhere"))
		gone(t, "the dependent naming its cluster-scoped owner with the wrong kind", get("wrong-kind"))
		testutil.Eventually(t, "the OwnerRefInvalidNamespace event", func() error {
			evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=elsewhere,reason=OwnerRefInvalidNamespace"})
			if err != nil {
				return err
			}
			want := fmt.Sprintf("ownerRef [v1/ConfigMap, namespace: %s, name: owner, uid: %s] does not exist in namespace %q", ns, owner.UID, ns)
			for _, e := range evs.Items {
				if e.Type == corev1.EventTypeWarning && e.Message == want && e.Source.Component == "garbage-collector-controller" {
					return nil
				}
			}
			return fmt.Errorf("events %+v, want the message %q", evs.Items, want)
		})
		if err := get("cluster-owned")(); err != nil {
			t.Fatalf("the dependent of an existing cluster-scoped owner: %v", err)
		}
		if _, err := cs.CoreV1().ConfigMaps(other.Name).Get(ctx, "owner", metav1.GetOptions{}); err != nil {
			t.Fatalf("the owner in the other namespace: %v", err)
		}
		if err := cs.RbacV1().ClusterRoles().Delete(ctx, cr.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		gone(t, "the dependent of the deleted cluster-scoped owner", get("cluster-owned"))
	})
}

// The embedded collector follows CRDs as they come (kube-controller-manager
// reads discovery every 30 s, so the real target is left out): a custom
// resource owns, and is owned, as soon as its CRD is established; orphaning
// a custom resource's dependents takes a JSON merge patch.
func TestGarbageCollectionCustomResources(t *testing.T) {
	env, cs := embedded(t, apiservertest.Options{})
	ctx := ctxT(t)
	crd := &unstructured.Unstructured{}
	if err := crd.UnmarshalJSON([]byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"owners.gc.kloop.dev"},
 "spec":{"group":"gc.kloop.dev","names":{"plural":"owners","singular":"owner","kind":"Owner","listKind":"OwnerList"},"scope":"Namespaced",
  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`)); err != nil {
		t.Fatal(err)
	}
	if err := apiservertest.InstallCRDs(ctx, env.Config(), crd); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	owners := dyn.Resource(schema.GroupVersionResource{Group: "gc.kloop.dev", Version: "v1", Resource: "owners"}).Namespace(env.Namespace)
	mkOwner := func(name string) *unstructured.Unstructured {
		t.Helper()
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gc.kloop.dev/v1", "kind": "Owner", "metadata": map[string]any{"name": name}}}
		o, err := owners.Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	a, b := mkOwner("a"), mkOwner("b")
	// b is owned by a; a ConfigMap is owned by b.
	b.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "gc.kloop.dev/v1", Kind: "Owner", Name: "a", UID: a.GetUID()}})
	if _, err := owners.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(env.Namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "gc.kloop.dev/v1", Kind: "Owner", Name: "b", UID: b.GetUID()}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	orphan := metav1.DeletePropagationOrphan
	if err := owners.Delete(ctx, "a", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	gone(t, "the orphaning owner", func() error { _, err := owners.Get(context.Background(), "a", metav1.GetOptions{}); return err })
	got, err := owners.Get(ctx, "b", metav1.GetOptions{})
	if err != nil || len(got.GetOwnerReferences()) != 0 {
		t.Fatalf("the orphaned custom resource: %v %v", err, got)
	}
	if err := owners.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone(t, "the custom resource's dependent", func() error {
		_, err := cs.CoreV1().ConfigMaps(env.Namespace).Get(context.Background(), "dep", metav1.GetOptions{})
		return err
	})
	// The counters follow each request's answer.
	testutil.Eventually(t, "the collector's counters", func() error {
		if st := env.Embedded.GarbageCollectorStats(); st.Orphaned < 1 || st.DeletionsDone < 1 || st.FinalizersRemoved < 1 || st.Monitors == 0 {
			return fmt.Errorf("stats %+v", st)
		}
		return nil
	})
}

// Without a collector (Options.GarbageCollector.Disabled), as kube-apiserver
// with --enable-garbage-collector=false: a Foreground or Orphan delete adds
// no finalizer, the owner goes at once and its dependents stay.
func TestGarbageCollectorDisabled(t *testing.T) {
	env, cs := embedded(t, apiservertest.Options{GarbageCollector: apiserver.GarbageCollectorOptions{Disabled: true}})
	ctx := ctxT(t)
	owner, err := cs.CoreV1().ConfigMaps(env.Namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(env.Namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fg := metav1.DeletePropagationForeground
	if err := cs.CoreV1().ConfigMaps(env.Namespace).Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(env.Namespace).Get(ctx, "owner", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("owner: %v, want it deleted at once", err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := cs.CoreV1().ConfigMaps(env.Namespace).Get(ctx, "dep", metav1.GetOptions{}); err != nil {
		t.Fatalf("the dependent without a collector: %v", err)
	}
	if st := env.Embedded.GarbageCollectorStats(); st != (apiserver.GarbageCollectorStats{}) {
		t.Fatalf("stats of a collector that does not run: %+v", st)
	}
}

// kubectl delete --cascade on a Deployment → ReplicaSet → Pod chain:
// foreground waits for the chain, orphan leaves the ReplicaSet without its
// owner, background (the default) lets the collector follow.
func TestKubectlDeleteCascade(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		k := newKubectl(t, env)
		cs, err := kubernetes.NewForConfig(env.Config())
		if err != nil {
			t.Fatal(err)
		}
		ns := env.Namespace
		chain(t, cs, ns)
		if out := k.run("", "delete", "deployment", "d", "--cascade=foreground"); !strings.Contains(out, `deployment.apps "d" deleted`) {
			t.Fatalf("kubectl delete --cascade=foreground: %q", out)
		}
		// kubectl waited for the owner, which waited for its chain.
		if out := k.run("", "get", "deployments,replicasets,pods", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Fatalf("after a foreground delete: %q", out)
		}

		chain(t, cs, ns)
		if out := k.run("", "delete", "deployment", "d", "--cascade=orphan"); !strings.Contains(out, `deployment.apps "d" deleted`) {
			t.Fatalf("kubectl delete --cascade=orphan: %q", out)
		}
		if out := k.run("", "get", "replicasets", "rs", "-o", "jsonpath={.metadata.ownerReferences}"); strings.TrimSpace(out) != "" {
			t.Fatalf("the orphaned ReplicaSet's owners: %q", out)
		}
		if out := k.run("", "delete", "replicaset", "rs", "--cascade=background"); !strings.Contains(out, `replicaset.apps "rs" deleted`) {
			t.Fatalf("kubectl delete --cascade=background: %q", out)
		}
		gone(t, "the Pod", func() error {
			_, err := cs.CoreV1().Pods(ns).Get(context.Background(), "p", metav1.GetOptions{})
			return err
		})
	})
}

// The collector's counters, queues and controllers reach the metrics
// providers of Options.GarbageCollector.
func TestGarbageCollectorMetrics(t *testing.T) {
	counters := &testutil.Provider[apiserver.GarbageCollectorStats]{}
	queues := &testutil.Provider[workqueue.Stats]{}
	controllers := &testutil.Provider[controller.Stats]{}
	env, cs := embedded(t, apiservertest.Options{GarbageCollector: apiserver.GarbageCollectorOptions{
		Metrics: counters, QueueMetrics: queues, ControllerMetrics: controllers, Workers: 2}})
	ctx := ctxT(t)
	owner, err := cs.CoreV1().ConfigMaps(env.Namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(env.Namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := cs.CoreV1().ConfigMaps(env.Namespace).Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone(t, "the dependent", func() error {
		_, err := cs.CoreV1().ConfigMaps(env.Namespace).Get(ctx, "dep", metav1.GetOptions{})
		return err
	})
	testutil.Eventually(t, "the counters", func() error {
		st, ok := counters.Read("garbage_collector")
		if !ok || st.DeletionsAttempted < 1 || st.DeletionsDone < 1 || st.GraphNodes == 0 || st.Monitors == 0 {
			return fmt.Errorf("%v %+v", ok, st)
		}
		return nil
	})
	for _, name := range []string{"garbage_collector_graph_changes", "garbage_collector_attempt_to_delete", "garbage_collector_attempt_to_orphan"} {
		if _, ok := queues.Read(name); !ok {
			t.Errorf("queue %s not registered (%v)", name, queues.Names())
		}
	}
	if st, ok := controllers.Read("garbage_collector_attempt_to_delete"); !ok || st.Success == 0 || st.MaxConcurrentReconciles != 2 {
		t.Errorf("attempt-to-delete controller: %v %+v", ok, st)
	}
	if _, ok := controllers.Read("garbage_collector_attempt_to_orphan"); !ok {
		t.Errorf("attempt-to-orphan controller not registered (%v)", controllers.Names())
	}
}

// A collector that starts finds the dependents whose owners vanished while
// none ran (after a restart, as a new server over a store kept on disk
// would): it collects them from its first lists.
func TestGarbageCollectionOfWhatWasLeft(t *testing.T) {
	srv, err := apiserver.New(apiserver.Options{Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	// No controller runs before Serve: the owner goes, its dependent stays.
	do := func(method, path, body string, want int) string {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer t")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != want {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	const cms = "/api/v1/namespaces/default/configmaps"
	var owner corev1.ConfigMap
	if err := json.Unmarshal([]byte(do(http.MethodPost, cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"owner"}}`, http.StatusCreated)), &owner); err != nil {
		t.Fatal(err)
	}
	do(http.MethodPost, cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"left","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":"`+string(owner.UID)+`"}]}}`, http.StatusCreated)
	do(http.MethodDelete, cms+"/owner", `{"apiVersion":"v1","kind":"DeleteOptions","propagationPolicy":"Foreground"}`, http.StatusOK)
	do(http.MethodGet, cms+"/owner", "", http.StatusNotFound) // no collector, no finalizer: gone at once
	do(http.MethodGet, cms+"/left", "", http.StatusOK)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()
	<-srv.Ready()
	testutil.Eventually(t, "the dependent left behind collected", func() bool {
		req := httptest.NewRequest(http.MethodGet, cms+"/left", nil)
		req.Header.Set("Authorization", "Bearer t")
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		return rec.Code == http.StatusNotFound
	})
}
