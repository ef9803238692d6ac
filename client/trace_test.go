package client

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/internal/rctx"
)

// TestTracerProvider: a client made alone with a TracerProvider makes each
// request a span, child of the context's; in a traced reconcile, each
// write carries its span.
func TestTracerProvider(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		defer func() { _ = tp.Shutdown(context.Background()) }()
		c, err := New(env.Config(), Options{TracerProvider: tp})
		if err != nil {
			t.Fatal(err)
		}
		ctx, parent := tp.Tracer("test").Start(context.Background(), "reconcile")
		writes := &rctx.Writes{}
		var recorded []string
		sc := &rctx.Scope{Context: ctx, Writes: writes, Traced: true,
			OnTracedWrite: func(ns, name, rv string, span trace.SpanContext) {
				recorded = append(recorded, ns+"/"+name+"@"+rv+" "+span.SpanID().String())
			}}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "traced"}}
		if err := c.Create(sc, cm); err != nil {
			t.Fatal(err)
		}
		var got corev1.ConfigMap
		if err := c.Get(sc, KeyOf(cm), &got); err != nil {
			t.Fatal(err)
		}
		parent.End()

		byName := map[string]tracetest.SpanStub{}
		for _, s := range exp.GetSpans() {
			if s.Parent.SpanID() == parent.SpanContext().SpanID() {
				byName[s.Name] = s
			}
		}
		create, get := byName["CREATE configmaps"], byName["GET configmaps"]
		if create.Name == "" || get.Name == "" {
			t.Fatalf("the calls' spans are not the reconcile's children: %v", byName)
		}
		ws := writes.Take(nil)
		if len(ws) != 1 || ws[0].Span.SpanID() != create.SpanContext.SpanID() || ws[0].ResourceVersion != cm.ResourceVersion {
			t.Errorf("the write %+v does not carry the creation's span %s", ws, create.SpanContext.SpanID())
		}
		want := env.Namespace + "/traced@" + cm.ResourceVersion + " " + create.SpanContext.SpanID().String()
		if len(recorded) != 1 || recorded[0] != want {
			t.Errorf("OnTracedWrite got %q, want %q", recorded, want)
		}
	})
}
