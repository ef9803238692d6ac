package apiserver_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// TestKindsProtobufClient: client-go's typed clients, sending protobuf
// as controllers do, create, update, scale and watch the table's kinds on
// both servers, with kube's defaults in what they read back.
func TestKindsProtobufClient(t *testing.T) {
	forEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		cfg := env.Config()
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(ctxT(t))
		defer cancel()
		ns := env.Namespace

		// An informer on StatefulSets, as a controller keeps one.
		factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
		inf := factory.Apps().V1().StatefulSets().Informer()
		factory.Start(ctx.Done())
		defer func() {
			cancel()
			factory.Shutdown()
		}()
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatal("informer did not sync")
		}

		labels := map[string]string{"app": "db"}
		tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "postgres:17"}}}}
		ss, err := cs.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"},
			Spec: appsv1.StatefulSetSpec{ServiceName: "db", Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ss.Spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement || *ss.Spec.Replicas != 1 || ss.Generation != 1 {
			t.Errorf("statefulset defaults: %+v", ss.Spec)
		}
		sc, err := cs.AppsV1().StatefulSets(ns).UpdateScale(ctx, "db", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}}, metav1.UpdateOptions{})
		if err != nil || sc.Spec.Replicas != 3 || sc.Status.Selector != "app=db" {
			t.Fatalf("scale: %v %+v", err, sc)
		}
		ss.Status.Replicas, ss.Status.ObservedGeneration = 3, 2
		if _, err := cs.AppsV1().StatefulSets(ns).UpdateStatus(ctx, ss, metav1.UpdateOptions{}); err == nil {
			t.Error("a status update with a stale resourceVersion succeeded")
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			o, ok, _ := inf.GetIndexer().GetByKey(ns + "/db")
			if ok && *o.(*appsv1.StatefulSet).Spec.Replicas == 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("informer never saw the scaled StatefulSet: %v", o)
			}
			time.Sleep(10 * time.Millisecond)
		}

		job, err := cs.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if job.Spec.Selector == nil || job.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] != string(job.UID) || *job.Spec.BackoffLimit != 6 {
			t.Errorf("job defaults: %+v", job.Spec)
		}
		job.Status.Active = 1
		if job, err = cs.BatchV1().Jobs(ns).UpdateStatus(ctx, job, metav1.UpdateOptions{}); err != nil || job.Status.Active != 1 {
			t.Fatalf("job status: %v", err)
		}

		pathType := networkingv1.PathTypePrefix
		ing, err := cs.NetworkingV1().Ingresses(ns).Create(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "a.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pathType, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}, metav1.CreateOptions{})
		if err != nil || ing.Generation != 1 {
			t.Fatalf("ingress: %v %+v", err, ing)
		}

		hpa, err := cs.AutoscalingV1().HorizontalPodAutoscalers(ns).Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "db"},
			Spec: autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db"}, MaxReplicas: 5}}, metav1.CreateOptions{})
		if err != nil || *hpa.Spec.MinReplicas != 1 || hpa.Spec.TargetCPUUtilizationPercentage == nil || *hpa.Spec.TargetCPUUtilizationPercentage != 80 {
			t.Fatalf("hpa v1: %v %+v", err, hpa)
		}
		v2, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil || len(v2.Spec.Metrics) != 1 || *v2.Spec.Metrics[0].Resource.Target.AverageUtilization != 80 {
			t.Fatalf("hpa v2: %v %+v", err, v2)
		}
	})
}
