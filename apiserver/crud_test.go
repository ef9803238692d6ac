package apiserver_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"kloop.dev/kloop/apiserver/apiservertest"
)

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
