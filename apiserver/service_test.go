package apiserver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"kloop.dev/kloop/apiserver/apiservertest"
)

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
