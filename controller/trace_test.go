package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/controller/controllerutil"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
)

func attrOf(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func str(s sdktrace.ReadOnlySpan, key string) string {
	v, _ := attrOf(s, key)
	return v.Emit()
}

// TestTracing follows one change from the watch event to the write: a
// manager traced into an in-memory exporter runs a controller that reads a
// ConfigMap and creates its child Secret. The first reconcile's span has
// its triggers, result and ID, the Secret's creation is its child span
// with the resourceVersion it returned, and the reconcile that the
// Secret's own event triggers links back to that creation.
func TestTracing(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		defer func() { _ = tp.Shutdown(context.Background()) }()

		mgr, err := manager.New(env.Config(), manager.Options{TracerProvider: tp})
		if err != nil {
			t.Fatal(err)
		}
		cl := mgr.Client()
		scope := informer.Scope{Namespace: env.Namespace, FieldSelector: "metadata.name!=kube-root-ca.crt"}
		r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			var cm corev1.ConfigMap
			if err := cl.Get(ctx, req.NamespacedName, &cm); err != nil {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			var s corev1.Secret
			key := client.ObjectKey{Namespace: req.Namespace, Name: req.Name + "-child"}
			if err := cl.Get(ctx, key, &s); !apierrors.IsNotFound(err) {
				return reconcile.Result{}, err
			}
			s = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
				StringData: map[string]string{"from": cm.Name}}
			if err := controllerutil.SetControllerReference(&cm, &s, cl.Scheme()); err != nil {
				return reconcile.Result{}, err
			}
			return reconcile.Result{}, cl.Create(ctx, &s)
		})
		err = builder.ControllerManagedBy(mgr).Named("traced").
			For(&corev1.ConfigMap{}, builder.WithScope(scope)).
			Owns(&corev1.Secret{}, builder.WithScope(informer.Scope{Namespace: env.Namespace})).
			Complete(r)
		if err != nil {
			t.Fatal(err)
		}
		// Another controller of the manager reads the Secrets from the
		// API server: its reconcile of the child links to the first
		// one's write. A reconcile that begins and ends before the
		// writer's client has read the write's answer, which its event
		// may overtake, is not linked (controller/doc.go); this one
		// lasts until the writing reconcile has ended — its span is
		// exported — so that the link is taken at its end, whatever the
		// machine's load.
		writerDone := func() bool {
			spans := exp.GetSpans()
			for _, c := range spans {
				if c.Name != "CREATE secrets" {
					continue
				}
				for _, p := range spans {
					if p.Name == "Reconcile traced" && p.SpanContext.SpanID() == c.Parent.SpanID() {
						return true
					}
				}
			}
			return false
		}
		err = builder.ControllerManagedBy(mgr).Named("secret-reader").
			For(&corev1.Secret{}, builder.WithScope(informer.Scope{Namespace: env.Namespace})).
			Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				var s corev1.Secret
				if err := client.IgnoreNotFound(cl.Uncached().Get(ctx, req.NamespacedName, &s)); err != nil {
					return reconcile.Result{}, err
				}
				for deadline := time.Now().Add(10 * time.Second); !writerDone() && time.Now().Before(deadline); {
					time.Sleep(5 * time.Millisecond)
				}
				return reconcile.Result{}, nil
			}))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		}()
		<-mgr.Started()
		if err := cl.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "a"}}); err != nil {
			t.Fatal(err)
		}

		isReconcile := func(s tracetest.SpanStub) bool {
			return s.Name == "Reconcile traced" && slices.Contains(s.Attributes, attribute.String(controller.AttrName, "a"))
		}
		var first, create, linked, reader tracetest.SpanStub
		testutil.Eventually(t, "a reconcile, its Secret's creation and a reconcile of each controller linked to it", func() error {
			spans := exp.GetSpans()
			first, create, linked, reader = tracetest.SpanStub{}, tracetest.SpanStub{}, tracetest.SpanStub{}, tracetest.SpanStub{}
			for _, s := range spans {
				if isReconcile(s) && first.Name == "" {
					first = s
				}
			}
			for _, s := range spans {
				if s.Name == "CREATE secrets" && s.Parent.SpanID() == first.SpanContext.SpanID() {
					create = s
				}
			}
			linksCreate := func(l sdktrace.Link) bool { return l.SpanContext.SpanID() == create.SpanContext.SpanID() }
			for _, s := range spans {
				if isReconcile(s) && slices.ContainsFunc(s.Links, linksCreate) {
					linked = s
				}
				if s.Name == "Reconcile secret-reader" && slices.ContainsFunc(s.Links, linksCreate) {
					reader = s
				}
			}
			if first.Name == "" || create.Name == "" || linked.Name == "" || reader.Name == "" {
				return fmt.Errorf("found: first %t, create %t, linked %t, reader %t", first.Name != "", create.Name != "", linked.Name != "", reader.Name != "")
			}
			return nil
		})

		spans := exp.GetSpans().Snapshots()
		byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
		for _, s := range spans {
			byID[s.SpanContext().SpanID()] = s
		}
		f, c, l := byID[first.SpanContext.SpanID()], byID[create.SpanContext.SpanID()], byID[linked.SpanContext.SpanID()]
		if got := str(f, controller.AttrTriggers); !strings.Contains(got, "ConfigMap "+env.Namespace+"/a") {
			t.Errorf("the first reconcile's triggers %q do not name the ConfigMap", got)
		}
		if n, _ := attrOf(f, controller.AttrTriggersTotal); n.AsInt64() < 1 {
			t.Errorf("triggers.total %d", n.AsInt64())
		}
		if got := str(f, controller.AttrResult); got != "success" {
			t.Errorf("result %q", got)
		}
		if str(f, controller.AttrReconcileID) == "" || str(f, controller.AttrController) != "traced" || str(f, controller.AttrNamespace) != env.Namespace {
			t.Errorf("reconcile span attributes %v", f.Attributes())
		}
		rv := str(c, "k8s.object.resource_version")
		if rv == "" || str(c, "http.response.status_code") != "201" || str(c, "http.request.method") != "POST" || str(c, "k8s.object.name") != "" && str(c, "k8s.object.name") != "a-child" {
			t.Errorf("the creation's span attributes %v", c.Attributes())
		}
		var wrote bool
		for _, e := range f.Events() {
			if e.Name == "write" && slices.Contains(e.Attributes, attribute.String("k8s.object.resource_version", rv)) {
				wrote = true
			}
		}
		if !wrote {
			t.Errorf("the reconcile's span records no write at rv %s: %v", rv, f.Events())
		}
		if got := str(l, controller.AttrTriggers); !strings.Contains(got, "Secret "+env.Namespace+"/a-child rv="+rv) {
			t.Errorf("the linked reconcile's triggers %q are not the Secret's event at rv %s", got, rv)
		}
		if l.SpanContext().TraceID() == f.SpanContext().TraceID() {
			t.Error("the later reconcile is in the first one's trace: it should be a new trace, linked")
		}
	})
}
