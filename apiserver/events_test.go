package apiserver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"kloop.dev/kloop/apiserver/apiservertest"
)

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
