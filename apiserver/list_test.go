package apiserver_test

import (
	"fmt"
	"sort"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"kloop.dev/kloop/apiserver/apiservertest"
)

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
