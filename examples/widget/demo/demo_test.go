package demo_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"errors"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/client"
	examplev1 "kloop.dev/kloop/examples/widget/api/v1"
	"kloop.dev/kloop/examples/widget/demo"
	"kloop.dev/kloop/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The demo at a few hundred Widgets with a failing cloud converges, within
// its timeout, to what its summary says: every Widget Running with one
// instance, none leaked or duplicated.
func TestDemoConverges(t *testing.T) {
	var out testutil.SyncBuffer
	err := demo.Run(context.Background(), demo.Options{Widgets: 300, CloudFailureRate: 0.05, Timeout: 4 * time.Minute}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"creating WidgetSet fleet (150 replicas) and 150 Widgets solo-0 … solo-149",
		"all 300 Widgets Running",
		"resized 10 Widgets to large, deleted 5",
		"300 widgets Running, 300 instances in the cloud, 0 leaked, 0 duplicated",
		"watch events", "queue depth", "reconciles in flight", "requeue-after", "throttled",
		"live view of the pipeline at http://127.0.0.1:",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b[") {
		t.Error("escape sequences in plain output")
	}
}

// On a terminal the progress is redrawn in place, with a cell per Widget.
func TestDemoTerminal(t *testing.T) {
	var out testutil.SyncBuffer
	err := demo.Run(context.Background(), demo.Options{Widgets: 20, Terminal: true, Refresh: 20 * time.Millisecond, LiveView: "0"}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{"\x1b[", "(R Running, p Pending", "RRRRRRRRRRRRRRRRRRRR", "20 widgets Running, 20 instances"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%q", want, got)
		}
	}
	if strings.Contains(got, "live view") {
		t.Errorf("a live view with LiveView \"0\":\n%q", got)
	}
}

// A run that cannot converge in time says so, with what was left.
func TestDemoTimeout(t *testing.T) {
	var out testutil.SyncBuffer
	err := demo.Run(context.Background(), demo.Options{Widgets: 10, Timeout: 300 * time.Millisecond}, &out)
	if err == nil || !strings.Contains(err.Error(), "timed out after 300ms") || !strings.Contains(err.Error(), "of 10 Running") {
		t.Errorf("error %v, want a timeout naming what was left\n%s", err, out.String())
	}
}

func TestDemoOptions(t *testing.T) {
	for _, tc := range []struct {
		opts demo.Options
		want string
	}{
		{demo.Options{Widgets: -1}, "widgets -1"},
		{demo.Options{CloudFailureRate: 1}, "cloud failure rate 1"},
		{demo.Options{Workers: -2}, "workers -2"},
		{demo.Options{Timeout: -time.Second}, "negative timeout"},
	} {
		if err := demo.Run(context.Background(), tc.opts, &testutil.SyncBuffer{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run(%+v) = %v, want %q", tc.opts, err, tc.want)
		}
	}
}

// A run against a cluster (a kubeconfig) that times out leaves no Widget
// whose finalizer only the gone process could clear, and deletes its
// namespace.
func TestDemoTimeoutOnAClusterCleansUp(t *testing.T) {
	srv := apiservertest.NewServer(t, apiservertest.Options{})
	var out testutil.SyncBuffer
	err := demo.Run(context.Background(), demo.Options{Widgets: 10, Timeout: 300 * time.Millisecond, Kubeconfig: srv.Kubeconfig(), LiveView: "0"}, &out)
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("error %v, want a timeout\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "removing the Widgets' finalizers") {
		t.Errorf("output lacks the clean-up:\n%s", out.String())
	}
	c, err := client.New(srv.Config(), client.Options{Scheme: demoScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	var ws examplev1.WidgetList
	if err := c.List(context.Background(), &ws); err != nil {
		t.Fatal(err)
	}
	for _, w := range ws.Items {
		if len(w.Finalizers) != 0 {
			t.Errorf("widget %s/%s keeps finalizers %v", w.Namespace, w.Name, w.Finalizers)
		}
	}
	var nss corev1.NamespaceList
	if err := c.List(context.Background(), &nss); err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss.Items {
		if strings.HasPrefix(ns.Name, "kloop-demo-") && ns.DeletionTimestamp == nil {
			t.Errorf("namespace %s left", ns.Name)
		}
	}
}

func demoScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(s), examplev1.AddToScheme(s)); err != nil {
		t.Fatal(err)
	}
	return s
}
