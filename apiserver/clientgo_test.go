package apiserver_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"kloop.dev/kloop/apiserver"
	"kloop.dev/kloop/apiserver/apiservertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// forEachTarget is apiservertest.ForEachTarget with the embedded server
// checking its decoded-object cache (apiserver.CheckDecodedCache), as
// every server of these tests does: tests start servers through it,
// startTarget, onTargets or embedded.
func forEachTarget(t *testing.T, opts apiservertest.Options, f func(t *testing.T, env *apiservertest.Env)) {
	t.Helper()
	apiservertest.ForEachTarget(t, apiserver.CheckDecodedCache(t, opts), f)
}

// startTarget is apiservertest.Start with the decoded-cache check on.
func startTarget(t *testing.T, target apiservertest.Target, opts apiservertest.Options) *apiservertest.Env {
	t.Helper()
	return apiservertest.Start(t, target, apiserver.CheckDecodedCache(t, opts))
}

// onTargets runs f on every target (forEachTarget) with a clientset for
// it; opts apply to the embedded server only.
func onTargets(t *testing.T, opts apiservertest.Options, f func(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface)) {
	t.Helper()
	forEachTarget(t, opts, func(t *testing.T, env *apiservertest.Env) {
		f(t, env, clientset(t, env))
	})
}

func clientset(t *testing.T, env *apiservertest.Env) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// embedded starts an embedded server alone, for tests of its own knobs.
func embedded(t *testing.T, opts apiservertest.Options) (*apiservertest.Env, kubernetes.Interface) {
	t.Helper()
	env := startTarget(t, apiservertest.Embedded, opts)
	return env, clientset(t, env)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls f until it returns nil, failing the test with f's last
// error after the timeout. The real server does some things asynchronously
// that the embedded one does at once (CRDs established and served, CR
// cleanup after a CRD's deletion): Kubernetes promises them only eventually.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not true after %v: %v", what, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestConfigMapCRUDAndConflicts(t *testing.T) {
	onTargets(t, apiservertest.Options{}, testConfigMapCRUDAndConflicts)
}

func testConfigMapCRUDAndConflicts(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface) {
	ctx := ctxT(t)
	ns := env.Namespace
	cms := cs.CoreV1().ConfigMaps(ns)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"x": "1"}}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.UID == "" || cm.ResourceVersion == "" || cm.CreationTimestamp.IsZero() {
		t.Fatalf("metadata not set: %+v", cm.ObjectMeta)
	}
	got, err := cms.Get(ctx, "a", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" || got.ResourceVersion != cm.ResourceVersion {
		t.Fatalf("get: %v %+v", err, got)
	}
	stale := got.DeepCopy()
	got.Data["k"] = "w"
	upd, err := cms.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil || upd.ResourceVersion == got.ResourceVersion {
		t.Fatalf("update: %v %+v", err, upd)
	}
	// A no-op update writes nothing.
	same, err := cms.Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil || same.ResourceVersion != upd.ResourceVersion {
		t.Fatalf("no-op update: %v, rv %s -> %s", err, upd.ResourceVersion, same.ResourceVersion)
	}
	stale.Data["k"] = "z"
	if _, err := cms.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: %v", err)
	}
	// Without a resourceVersion the update is unconditional.
	stale.ResourceVersion = ""
	if u, err := cms.Update(ctx, stale, metav1.UpdateOptions{}); err != nil || u.Data["k"] != "z" {
		t.Fatalf("unconditional update: %v", err)
	}
	for _, tc := range []struct {
		name  string
		cm    *corev1.ConfigMap
		ns    string
		check func(error) bool
	}{
		{"exists", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, ns, apierrors.IsAlreadyExists},
		{"missing namespace", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, ns + "-nope", apierrors.IsNotFound},
		{"bad name", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name"}}, ns, apierrors.IsInvalid},
		{"no name", &corev1.ConfigMap{}, ns, apierrors.IsInvalid},
		{"bad key", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Data: map[string]string{"a b": ""}}, ns, apierrors.IsInvalid},
		{"bad label", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{"-x": "y"}}}, ns, apierrors.IsInvalid},
		{"namespace mismatch", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "kube-system"}}, ns, apierrors.IsBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cs.CoreV1().ConfigMaps(tc.ns).Create(ctx, tc.cm, metav1.CreateOptions{})
			if !tc.check(err) {
				t.Fatalf("got %v", err)
			}
		})
	}
	gen, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-"}}, metav1.CreateOptions{})
	if err != nil || len(gen.Name) != len("gen-")+5 {
		t.Fatalf("generateName: %v %q", err, gen.Name)
	}
	list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "x=1"})
	if err != nil || len(list.Items) != 1 || list.ResourceVersion == "" {
		t.Fatalf("list: %v %+v", err, list)
	}
	// Delete preconditions.
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("other"))}}); !apierrors.IsConflict(err) {
		t.Fatalf("delete with wrong uid: %v", err)
	}
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr.To("1")}}); !apierrors.IsConflict(err) {
		t.Fatalf("delete with stale rv: %v", err)
	}
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: %v", err)
	}
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("second delete: %v", err)
	}
}

func testDeployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
}

func TestGenerationStatusAndScale(t *testing.T) {
	onTargets(t, apiservertest.Options{}, testGenerationStatusAndScale)
}

func testGenerationStatusAndScale(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface) {
	ctx := ctxT(t)
	deps := cs.AppsV1().Deployments(env.Namespace)
	d, err := deps.Create(ctx, testDeployment("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Generation != 1 || d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Fatalf("after create: generation %d replicas %v", d.Generation, d.Spec.Replicas)
	}
	// Metadata changes do not bump generation; spec changes do; status is ignored.
	d.Labels = map[string]string{"l": "1"}
	d.Status.Replicas = 7
	d, err = deps.Update(ctx, d, metav1.UpdateOptions{})
	if err != nil || d.Generation != 1 || d.Status.Replicas != 0 {
		t.Fatalf("metadata update: %v generation %d status %d", err, d.Generation, d.Status.Replicas)
	}
	d.Spec.Replicas = ptr.To[int32](3)
	d, err = deps.Update(ctx, d, metav1.UpdateOptions{})
	if err != nil || d.Generation != 2 {
		t.Fatalf("spec update: %v generation %d", err, d.Generation)
	}
	// The status subresource changes only the status, and not the generation.
	d.Status.Replicas, d.Status.ReadyReplicas, d.Status.ObservedGeneration = 3, 2, 2
	d.Spec.Replicas = ptr.To[int32](9)
	d, err = deps.UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil || d.Status.ReadyReplicas != 2 || *d.Spec.Replicas != 3 || d.Generation != 2 {
		t.Fatalf("status update: %v %+v", err, d)
	}
	// Scale.
	sc, err := deps.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil || sc.Spec.Replicas != 3 || sc.Status.Replicas != 3 || sc.Status.Selector != "app=web" {
		t.Fatalf("get scale: %v %+v", err, sc)
	}
	sc.Spec.Replicas = 5
	stale := sc.DeepCopy()
	if sc, err = deps.UpdateScale(ctx, "web", sc, metav1.UpdateOptions{}); err != nil || sc.Spec.Replicas != 5 {
		t.Fatalf("update scale: %v %+v", err, sc)
	}
	if _, err := deps.UpdateScale(ctx, "web", stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale scale: %v", err)
	}
	if _, err = deps.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":6}}`), metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatal(err)
	}
	d, _ = deps.Get(ctx, "web", metav1.GetOptions{})
	if *d.Spec.Replicas != 6 || d.Generation != 4 {
		t.Fatalf("after scale: replicas %d generation %d", *d.Spec.Replicas, d.Generation)
	}
	// Strategic merge patch merges containers by name.
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox"}]}}}}`
	d, err = deps.Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil || len(d.Spec.Template.Spec.Containers) != 2 {
		t.Fatalf("strategic merge patch: %v %+v", err, d.Spec.Template.Spec.Containers)
	}
	d, err = deps.Patch(ctx, "web", types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:2"}]`), metav1.PatchOptions{})
	if err != nil || d.Spec.Template.Spec.Containers[0].Image != "nginx:2" {
		t.Fatalf("json patch: %v", err)
	}
	if _, err := deps.Patch(ctx, "web", types.JSONPatchType, []byte(`[{"op":"test","path":"/spec/replicas","value":99}]`), metav1.PatchOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("failing json patch: %v", err)
	}
	// Invalid selector.
	bad := testDeployment("bad")
	bad.Spec.Template.Labels = map[string]string{"app": "other"}
	if _, err := deps.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("selector mismatch: %v", err)
	}
}

func TestFinalizerDeletion(t *testing.T) {
	onTargets(t, apiservertest.Options{}, testFinalizerDeletion)
}

func testFinalizerDeletion(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface) {
	ctx := ctxT(t)
	cms := cs.CoreV1().ConfigMaps(env.Namespace)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "f", Finalizers: []string{"example.com/block"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "f", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cm, err := cms.Get(ctx, "f", metav1.GetOptions{})
	// ConfigMaps have no graceful deletion: the grace period is 0.
	if err != nil || cm.DeletionTimestamp == nil || cm.DeletionGracePeriodSeconds == nil || *cm.DeletionGracePeriodSeconds != 0 {
		t.Fatalf("after delete: %v %+v", err, cm)
	}
	// Deleting again changes nothing.
	if err := cms.Delete(ctx, "f", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again, _ := cms.Get(ctx, "f", metav1.GetOptions{})
	if again.ResourceVersion != cm.ResourceVersion {
		t.Fatalf("second delete wrote: %s -> %s", cm.ResourceVersion, again.ResourceVersion)
	}
	// No new finalizer once deleting.
	cm.Finalizers = append(cm.Finalizers, "example.com/other")
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("adding a finalizer while deleting: %v", err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := cms.Patch(ctx, "f", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "f", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("object should be gone: %v", err)
	}
	var types []watch.EventType
	for ev := range w.ResultChan() {
		types = append(types, ev.Type)
		if ev.Type == watch.Deleted {
			break
		}
	}
	// As kube-apiserver, emptying the finalizers of a deleting object deletes
	// it in the same write: watchers see only DELETED.
	if fmt.Sprint(types) != "[DELETED]" {
		t.Fatalf("events %v", types)
	}
}

func TestNamespaceTermination(t *testing.T) {
	onTargets(t, apiservertest.Options{}, testNamespaceTermination)
}

// The test deletes its own namespace: namespaces are cluster-scoped, and the
// real server is shared by every test of the binary.
func testNamespaceTermination(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface) {
	ctx := ctxT(t)
	name := env.Namespace
	namespaces := cs.CoreV1().Namespaces()
	cms := cs.CoreV1().ConfigMaps(name)
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "plain"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/x"}}},
	} {
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := namespaces.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err := namespaces.Get(ctx, name, metav1.GetOptions{})
	if err != nil || ns.Status.Phase != corev1.NamespaceTerminating || ns.DeletionTimestamp == nil {
		t.Fatalf("namespace: %v %+v", err, ns.Status)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("create in terminating namespace: %v", err)
	}
	// Updating the terminating namespace keeps it while content remains.
	if _, err := namespaces.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := namespaces.Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Fatalf("terminating namespace with content was deleted: %v", err)
	}
	// Emptying and removing the namespace is the namespace controller's work
	// (kube-controller-manager): the embedded server does it inline, the real
	// server of these tests is a bare control plane without it.
	if env.Embedded == nil {
		return
	}
	if _, err := cms.Get(ctx, "plain", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("content not deleted: %v", err)
	}
	if _, err := cms.Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":[]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := namespaces.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace should be gone: %v", err)
	}
}

// TestWatchNoGapsUnderConcurrentWriters starts watches from various
// revisions while writers update objects, and checks each watcher sees every
// change after its start exactly once, in order.
func TestWatchNoGapsUnderConcurrentWriters(t *testing.T) {
	onTargets(t, apiservertest.Options{}, testWatchNoGapsUnderConcurrentWriters)
}

func testWatchNoGapsUnderConcurrentWriters(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface) {
	ctx := ctxT(t)
	cms := cs.CoreV1().ConfigMaps(env.Namespace)
	const writers, perWriter, watchers = 4, 60, 4
	start, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	written := map[string]bool{} // resourceVersions written
	for i := range writers {
		wg.Go(func() {
			name := fmt.Sprintf("w%d", i)
			cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{}}, metav1.CreateOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			written[cm.ResourceVersion] = true
			mu.Unlock()
			for j := range perWriter {
				if cm.Data == nil {
					cm.Data = map[string]string{}
				}
				cm.Data["n"] = strconv.Itoa(j)
				if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				written[cm.ResourceVersion] = true
				mu.Unlock()
			}
		})
	}
	total := writers * (perWriter + 1)
	results := make([][]string, watchers)
	var wwg sync.WaitGroup
	for i := range watchers {
		wwg.Go(func() {
			w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: start.ResourceVersion})
			if err != nil {
				t.Error(err)
				return
			}
			defer w.Stop()
			for ev := range w.ResultChan() {
				cm, ok := ev.Object.(*corev1.ConfigMap)
				if !ok {
					t.Errorf("unexpected event %v %T", ev.Type, ev.Object)
					return
				}
				results[i] = append(results[i], cm.ResourceVersion)
				if len(results[i]) == total {
					return
				}
			}
		})
	}
	wg.Wait()
	wwg.Wait()
	for i, revs := range results {
		if len(revs) != total {
			t.Fatalf("watcher %d saw %d events, want %d", i, len(revs), total)
		}
		seen := map[string]bool{}
		prev := int64(0)
		for _, rv := range revs {
			n, _ := strconv.ParseInt(rv, 10, 64)
			if n <= prev || seen[rv] || !written[rv] {
				t.Fatalf("watcher %d: revision %s out of order, duplicated or unknown", i, rv)
			}
			seen[rv], prev = true, n
		}
	}
}

func TestWatchListAndSelectors(t *testing.T) {
	onTargets(t, apiservertest.Options{}, testWatchListAndSelectors)
}

func testWatchListAndSelectors(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface) {
	ctx := ctxT(t)
	cms := cs.CoreV1().ConfigMaps(env.Namespace)
	for _, n := range []string{"a", "b"} {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Watch-list: the current state as ADDED, then a bookmark ending it.
	w, err := cms.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for ev := range w.ResultChan() {
		cm := ev.Object.(*corev1.ConfigMap)
		got = append(got, string(ev.Type)+":"+cm.Name)
		if ev.Type == watch.Bookmark {
			if cm.Annotations[metav1.InitialEventsAnnotationKey] != "true" || cm.ResourceVersion == "" {
				t.Fatalf("initial-events-end bookmark: %+v", cm.ObjectMeta)
			}
			break
		}
	}
	w.Stop()
	if fmt.Sprint(got) != "[ADDED:a ADDED:b BOOKMARK:]" {
		t.Fatalf("watch-list events %v", got)
	}
	// A selector on a watch: objects entering and leaving it are ADDED and DELETED.
	cur, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sel, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: cur.ResourceVersion, LabelSelector: "team=a"})
	if err != nil {
		t.Fatal(err)
	}
	defer sel.Stop()
	for _, labels := range []string{`{"team":"a"}`, `{"team":"a","x":"y"}`, `{"team":"b"}`} {
		if _, err := cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"labels":`+labels+`}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var seen []watch.EventType
	for len(seen) < 3 {
		ev := <-sel.ResultChan()
		if ev.Type != watch.Bookmark {
			seen = append(seen, ev.Type)
		}
	}
	if fmt.Sprint(seen) != "[ADDED MODIFIED DELETED]" {
		t.Fatalf("selector watch: %v", seen)
	}
	// Invalid combinations.
	if _, err := cms.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true)}); !apierrors.IsInvalid(err) {
		t.Fatalf("sendInitialEvents without NotOlderThan: %v", err)
	}
}

// Periodic bookmarks carry the current revision, moved by writes elsewhere.
// Embedded only: it needs the embedded server's BookmarkInterval (the real
// server sends them about once a minute).
func TestWatchPeriodicBookmarks(t *testing.T) {
	env, cs := embedded(t, apiservertest.Options{BookmarkInterval: 50 * time.Millisecond})
	ctx := ctxT(t)
	cms := cs.CoreV1().ConfigMaps(env.Namespace)
	cur, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: cur.ResourceVersion, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	s, err := cs.CoreV1().Secrets(env.Namespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w.ResultChan()
	if bm, ok := ev.Object.(*corev1.ConfigMap); ev.Type != watch.Bookmark || !ok || bm.ResourceVersion != s.ResourceVersion {
		t.Fatalf("bookmark: %v %+v, want revision %s", ev.Type, ev.Object, s.ResourceVersion)
	}
}

// A watch from a revision the history window no longer holds gets 410
// Expired; the client relists and watches on. Embedded only: it needs the
// embedded server's HistoryEvents (TestWatchGoneAfterCompaction is the same
// protocol on both servers).
func TestWatchExpiredThenRelist(t *testing.T) {
	env, cs := embedded(t, apiservertest.Options{HistoryEvents: 5})
	ctx := ctxT(t)
	cms := cs.CoreV1().ConfigMaps(env.Namespace)
	first, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Data: map[string]string{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm := first
	for i := range 10 {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data["i"] = strconv.Itoa(i)
		if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w.ResultChan()
	w.Stop()
	st, ok := ev.Object.(*metav1.Status)
	if ev.Type != watch.Error || !ok || st.Code != 410 || st.Reason != metav1.StatusReasonExpired {
		t.Fatalf("expected 410 Expired error event, got %v %+v", ev.Type, ev.Object)
	}
	// Relist and watch from the list's revision.
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Data["i"] != "9" {
		t.Fatalf("relist: %v", err)
	}
	w, err = cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := cms.Delete(ctx, "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := <-w.ResultChan(); ev.Type != watch.Deleted {
		t.Fatalf("after relist: %v", ev.Type)
	}
}

// TestWatchGoneAfterCompaction: after a compaction a watch from an older
// revision gets 410 Expired, an exact list at it too, the client relists and
// watches on from the list's revision; a revision from the future is "too
// large". Events, because kube-apiserver has no watch cache for them (a
// cached kind's watch outlives etcd's compaction there).
func TestWatchGoneAfterCompaction(t *testing.T) {
	onTargets(t, apiservertest.Options{}, testWatchGoneAfterCompaction)
}

func testWatchGoneAfterCompaction(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface) {
	ctx := ctxT(t)
	events := cs.CoreV1().Events(env.Namespace)
	event := func(name, msg string) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: env.Namespace, Name: "p"},
			Reason:         "Test", Message: msg, Type: corev1.EventTypeNormal,
		}
	}
	first, err := events.Create(ctx, event("x", "0"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev := first
	for i := range 3 {
		ev.Message = strconv.Itoa(i + 1)
		if ev, err = events.Update(ctx, ev, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := events.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	got := <-w.ResultChan()
	w.Stop()
	st, ok := got.Object.(*metav1.Status)
	if got.Type != watch.Error || !ok || st.Code != 410 || st.Reason != metav1.StatusReasonExpired {
		t.Fatalf("expected 410 Expired error event, got %v %+v", got.Type, got.Object)
	}
	if _, err := events.List(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact}); !apierrors.IsResourceExpired(err) {
		t.Fatalf("exact list at a compacted revision: %v", err)
	}
	// Relist and watch from the list's revision.
	list, err := events.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Message != "3" {
		t.Fatalf("relist: %v %+v", err, list)
	}
	w, err = events.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := events.Delete(ctx, "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := <-w.ResultChan(); got.Type != watch.Deleted {
		t.Fatalf("after relist: %v %+v", got.Type, got.Object)
	}
	// A future revision is "too large": far enough ahead that no other test
	// reaches it meanwhile (revisions are shared on the real server).
	n, _ := strconv.ParseInt(list.ResourceVersion, 10, 64)
	_, err = events.List(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(n+1_000_000, 10), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		t.Fatalf("too large: %v", err)
	}
}

func TestListPaginationAndSelectors(t *testing.T) {
	onTargets(t, apiservertest.Options{}, testListPaginationAndSelectors)
}

func testListPaginationAndSelectors(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface) {
	ctx := ctxT(t)
	pods := cs.CoreV1().Pods(env.Namespace)
	for i := range 7 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Labels: map[string]string{"i": strconv.Itoa(i % 2)}},
			Spec: corev1.PodSpec{NodeName: fmt.Sprintf("node%d", i%3), Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	opts := metav1.ListOptions{Limit: 3}
	pages := 0
	for {
		l, err := pods.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, p := range l.Items {
			names = append(names, p.Name)
		}
		if l.Continue == "" {
			break
		}
		if l.RemainingItemCount == nil || *l.RemainingItemCount != int64(7-len(names)) {
			t.Fatalf("remainingItemCount %v after %d", l.RemainingItemCount, len(names))
		}
		// Writes between pages do not show in later pages.
		if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("z%d", pages)}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		opts.Continue = l.Continue
	}
	if pages != 3 || fmt.Sprint(names) != "[p0 p1 p2 p3 p4 p5 p6]" {
		t.Fatalf("pages %d names %v", pages, names)
	}
	for _, tc := range []struct {
		label, field string
		want         string
	}{
		{"i=1", "", "[p1 p3 p5]"},
		{"i in (0)", "spec.nodeName=node0", "[p0 p6]"},
		{"", "spec.nodeName!=node0,metadata.name!=p1", "[p2 p4 p5 z1 z2]"},
		{"!i", "status.phase=Pending", "[z1 z2]"},
	} {
		l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: tc.label, FieldSelector: tc.field})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range l.Items {
			got = append(got, p.Name)
		}
		sort.Strings(got)
		if fmt.Sprint(got) != tc.want {
			t.Errorf("label %q field %q: %v, want %s", tc.label, tc.field, got, tc.want)
		}
	}
	if _, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.unknown=x"}); !apierrors.IsBadRequest(err) {
		t.Fatalf("unknown field: %v", err)
	}
	if _, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "a in ("}); !apierrors.IsBadRequest(err) {
		t.Fatalf("bad label selector: %v", err)
	}
	// Delete a collection by selector. Pods bound to a node are deleted
	// gracefully (TestPodGracefulDeletion): a zero grace period deletes them
	// at once.
	now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	if err := pods.DeleteCollection(ctx, now, metav1.ListOptions{LabelSelector: "i=1"}); err != nil {
		t.Fatal(err)
	}
	if l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "i=1"}); err != nil || len(l.Items) != 0 {
		t.Fatalf("after deletecollection: %v %d", err, len(l.Items))
	}
	// All namespaces (on the real server other tests' pods are there too).
	all, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mine := 0
	for _, p := range all.Items {
		if p.Namespace == env.Namespace {
			mine++
		}
	}
	if mine != 6 {
		t.Fatalf("all namespaces: %d of this namespace's pods, want 6", mine)
	}
	// Exact resourceVersion lists the past.
	l, err := pods.List(ctx, metav1.ListOptions{ResourceVersion: all.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil || len(l.Items) != 6 {
		t.Fatalf("exact list: %v %d", err, len(l.Items))
	}
	if err := pods.Delete(ctx, "p0", now); err != nil {
		t.Fatal(err)
	}
	past, err := pods.List(ctx, metav1.ListOptions{ResourceVersion: all.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil || len(past.Items) != len(l.Items) || past.ResourceVersion != all.ResourceVersion {
		t.Fatalf("exact list: %v %d", err, len(past.Items))
	}
}

// Pods bound to a node are deleted gracefully: deletionTimestamp and
// deletionGracePeriodSeconds (the pod's terminationGracePeriodSeconds,
// default 30) are set and the pod stays until the kubelet (or a client with
// gracePeriodSeconds=0) finishes the deletion; a shorter grace period
// shortens it, a longer one changes nothing. Unbound pods go at once.
// Watchers see each marking as MODIFIED, then DELETED.
func TestPodGracefulDeletion(t *testing.T) {
	onTargets(t, apiservertest.Options{}, testPodGracefulDeletion)
}

func testPodGracefulDeletion(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface) {
	ctx := ctxT(t)
	pods := cs.CoreV1().Pods(env.Namespace)
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	}
	var rv string
	for _, p := range []*corev1.Pod{pod("bound", "node0"), pod("unbound", "")} {
		created, err := pods.Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rv = created.ResourceVersion
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := pods.Delete(ctx, "unbound", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "unbound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("unbound pod after delete: %v", err)
	}
	grace := func(seconds *int64, want int64) *corev1.Pod {
		t.Helper()
		if err := pods.Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: seconds}); err != nil {
			t.Fatal(err)
		}
		p, err := pods.Get(ctx, "bound", metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp == nil || p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != want {
			t.Fatalf("bound pod after delete with grace period %v: %v %+v, want grace period %d", seconds, err, p.ObjectMeta, want)
		}
		return p
	}
	first := grace(nil, 30)
	shorter := grace(ptr.To[int64](10), 10)
	if !shorter.DeletionTimestamp.Before(first.DeletionTimestamp) {
		t.Fatalf("a shorter grace period did not bring the deletion forward: %v, then %v", first.DeletionTimestamp, shorter.DeletionTimestamp)
	}
	if longer := grace(ptr.To[int64](60), 10); longer.ResourceVersion != shorter.ResourceVersion {
		t.Fatalf("a longer grace period wrote: %s -> %s", shorter.ResourceVersion, longer.ResourceVersion)
	}
	if err := pods.Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "bound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("bound pod after delete with grace period 0: %v", err)
	}
	var events []string
	for len(events) < 6 {
		ev := <-w.ResultChan()
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			t.Fatalf("watch: %v %+v", ev.Type, ev.Object)
		}
		events = append(events, string(ev.Type)+":"+p.Name)
	}
	// The grace periods 30, 10 and 0 each mark the pod; 60 wrote nothing.
	if want := "[MODIFIED:unbound DELETED:unbound MODIFIED:bound MODIFIED:bound MODIFIED:bound DELETED:bound]"; fmt.Sprint(events) != want {
		t.Fatalf("watch events %v, want %s", events, want)
	}
}

// TestProtobufClient: a client that sends protobuf and prefers it in
// answers (as kube-controller-manager does) works on both servers; the
// embedded one answers in JSON, which such a client accepts.
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
		if got == "map[after:2]" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("informer state %s", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if keys := inf.GetStore().ListKeys(); fmt.Sprint(keys) != "["+env.Namespace+"/after]" {
		t.Fatalf("store keys %v", keys)
	}
}

func TestEventsBothAPIs(t *testing.T) {
	onTargets(t, apiservertest.Options{}, testEventsBothAPIs)
}

func testEventsBothAPIs(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface) {
	ctx := ctxT(t)
	ns := env.Namespace
	ev := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "e1"}, EventTime: metav1.NowMicro(), ReportingController: "kloop.dev/test", ReportingInstance: "i",
		Action: "Sync", Reason: "Synced", Note: "all good", Type: "Normal",
		Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "p"},
	}
	if _, err := cs.EventsV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	core, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=p,reason=Synced"})
	if err != nil || len(core.Items) != 1 || core.Items[0].Message != "all good" || core.Items[0].InvolvedObject.Kind != "Pod" {
		t.Fatalf("core view: %v %+v", err, core)
	}
	v1list, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=p,reportingController=kloop.dev/test"})
	if err != nil || len(v1list.Items) != 1 {
		t.Fatalf("events.k8s.io field selector: %v %+v", err, v1list)
	}
	back, err := cs.EventsV1().Events(ns).Get(ctx, "e1", metav1.GetOptions{})
	if err != nil || back.Note != "all good" || back.Regarding.Name != "p" {
		t.Fatalf("events.k8s.io view: %v %+v", err, back)
	}
}

func TestDiscovery(t *testing.T) {
	onTargets(t, apiservertest.Options{}, testDiscovery)
}

func testDiscovery(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface) {
	groups, resources, err := cs.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	// The embedded server serves a subset of kube-apiserver's groups, in
	// kube-apiserver's order (by group priority).
	var names []string
	for _, g := range groups {
		if slices.Contains([]string{"", "apps", "events.k8s.io", "coordination.k8s.io", "apiextensions.k8s.io"}, g.Name) {
			names = append(names, g.Name)
		}
	}
	if fmt.Sprint(names) != "[ apps events.k8s.io apiextensions.k8s.io coordination.k8s.io]" {
		t.Fatalf("groups %v", names)
	}
	found := map[string]bool{}
	for _, rl := range resources {
		for _, r := range rl.APIResources {
			found[rl.GroupVersion+"/"+r.Name] = true
		}
	}
	for _, want := range []string{"v1/pods", "v1/pods/status", "apps/v1/deployments/scale", "coordination.k8s.io/v1/leases", "apiextensions.k8s.io/v1/customresourcedefinitions"} {
		if !found[want] {
			t.Errorf("discovery misses %s", want)
		}
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil || v.Major != "1" {
		t.Fatalf("version: %v %+v", err, v)
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/healthz").DoRaw(context.Background())
	if err != nil || string(raw) != "ok" {
		t.Fatalf("healthz: %v %s", err, raw)
	}
}

// TestManyWatchesOneClient opens more watches over one client (one HTTP/2
// connection) than Go's default stream limit of 250.
func TestManyWatchesOneClient(t *testing.T) {
	onTargets(t, apiservertest.Options{}, testManyWatchesOneClient)
}

func testManyWatchesOneClient(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface) {
	ctx := ctxT(t)
	cms := cs.CoreV1().ConfigMaps(env.Namespace)
	l, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	watches := make([]watch.Interface, 0, n)
	defer func() {
		for _, w := range watches {
			w.Stop()
		}
	}()
	for range n {
		w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		watches = append(watches, w)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "all"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, w := range watches {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Added {
				t.Fatalf("watch %d: %v", i, ev.Type)
			}
		case <-ctx.Done():
			t.Fatalf("watch %d got nothing", i)
		}
	}
}

func TestServiceClusterIPs(t *testing.T) {
	onTargets(t, apiservertest.Options{}, testServiceClusterIPs)
}

func testServiceClusterIPs(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface) {
	ctx := ctxT(t)
	svcs := cs.CoreV1().Services(env.Namespace)
	svc := func(name, ip string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: []corev1.ServicePort{{Port: 80}}}}
	}
	a, err := svcs.Create(ctx, svc("a", ""), metav1.CreateOptions{})
	if err != nil || a.Spec.ClusterIP == "" || a.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Fatalf("create: %v %+v", err, a.Spec)
	}
	if _, err := svcs.Create(ctx, svc("b", a.Spec.ClusterIP), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("taken IP: %v", err)
	}
	if _, err := svcs.Create(ctx, svc("c", "192.168.0.1"), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("IP out of range: %v", err)
	}
	if h, err := svcs.Create(ctx, svc("headless", "None"), metav1.CreateOptions{}); err != nil || h.Spec.ClusterIP != "None" {
		t.Fatalf("headless: %v", err)
	}
	// Updates keep the IP; changing it is refused.
	a.Spec.ClusterIP, a.Spec.ClusterIPs = "", nil
	a.Labels = map[string]string{"x": "y"}
	if u, err := svcs.Update(ctx, a, metav1.UpdateOptions{}); err != nil || u.Spec.ClusterIP == "" {
		t.Fatalf("update without clusterIP: %v", err)
	}
	if _, err := svcs.Patch(ctx, "a", types.MergePatchType, []byte(`{"spec":{"clusterIP":"10.96.0.99"}}`), metav1.PatchOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("changing clusterIP: %v", err)
	}
	// A deleted Service releases its IP.
	ip := a.Spec.ClusterIP
	if ip == "" {
		got, _ := svcs.Get(ctx, "a", metav1.GetOptions{})
		ip = got.Spec.ClusterIP
	}
	if err := svcs.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, svc("d", ip), metav1.CreateOptions{}); err != nil {
		t.Fatalf("reuse of a released IP: %v", err)
	}
}
