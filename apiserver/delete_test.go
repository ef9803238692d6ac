package apiserver_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"kloop.dev/kloop/apiserver/apiservertest"
)

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
