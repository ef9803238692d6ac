package controller

import (
	"context"
	"fmt"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"kloop.dev/kloop/internal/rctx"
	"kloop.dev/kloop/reconcile"
	"kloop.dev/kloop/reconcile/trigger"
)

// TestWriteSpansBounded: the spans of the controller's writes are found by
// the events of their object at their resourceVersion, and only the last
// max of them are kept.
func TestWriteSpansBounded(t *testing.T) {
	w := NewWriteSpans(3)
	span := func(i int) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{byte(i + 1)}, TraceFlags: trace.FlagsSampled})
	}
	for i := range 5 {
		w.add(writeKey{"ns", "a", fmt.Sprint(i)}, span(i))
	}
	tests := []struct {
		rv   string
		want bool
	}{{"0", false}, {"1", false}, {"2", true}, {"3", true}, {"4", true}, {"5", false}}
	for _, tt := range tests {
		var rec trigger.Record
		rec.Add(trigger.Cause{Type: trigger.Update, Source: "ConfigMap", Object: cmAt("a", tt.rv)})
		rec.Add(trigger.Cause{Type: trigger.Error})
		links := w.links(&rec, nil)
		if got := len(links) == 1; got != tt.want {
			t.Errorf("rv %s: %d links, want a link %v", tt.rv, len(links), tt.want)
		}
	}
	if len(w.m) != 3 || len(w.ring) != 3 {
		t.Errorf("%d spans kept, ring %d; want 3", len(w.m), len(w.ring))
	}
	if links := w.links(nil, nil); len(links) != 0 {
		t.Errorf("links without triggers: %v", links)
	}
	// A no-op write answers the version it found: the span of the write
	// that made that version stays.
	w.add(writeKey{"ns", "a", "4"}, span(9))
	if got := w.m[writeKey{"ns", "a", "4"}]; !got.Equal(span(4)) {
		t.Errorf("after a no-op write at rv 4 the table holds span %v, want the first write's %v", got.SpanID(), span(4).SpanID())
	}
}

// TestTriggersText: a span's triggers read as reconcile.Triggers' String.
func TestTriggersText(t *testing.T) {
	var rec trigger.Record
	for i := range 6 {
		rec.Add(trigger.Cause{Type: trigger.Update, Source: "ConfigMap", Handler: "h", Object: cmAt("a", fmt.Sprint(i))})
	}
	rec.Add(trigger.Cause{Type: trigger.Error})
	want := "7: Update ConfigMap ns/a rv=3 by h; Update ConfigMap ns/a rv=4 by h; Update ConfigMap ns/a rv=5 by h; Error"
	if got := triggersText(&rec); got != want {
		t.Errorf("triggersText = %q, want %q", got, want)
	}
	ts, _ := reconcile.TriggersFrom(&rctx.Scope{Context: context.Background(), Triggers: &rec})
	if ts.String() != want {
		t.Errorf("reconcile.Triggers renders %q", ts.String())
	}
}

// A reconcile the sampler drops: its span records nothing and costs no
// triggers text; one it keeps has the attributes and the result.
func TestTracingSampling(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sampler sdktrace.Sampler
		want    int
	}{{"dropped", sdktrace.NeverSample(), 0}, {"kept", sdktrace.AlwaysSample(), 1}} {
		t.Run(tc.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(tc.sampler))
			defer func() { _ = tp.Shutdown(context.Background()) }()
			tr := newTracing(tp, "c", nil)
			var rec trigger.Record
			rec.Add(trigger.Cause{Type: trigger.Update, Source: "ConfigMap", Object: cmAt("a", "1")})
			_, span, links := tr.start(context.Background(), reconcile.Request{}, [16]byte{1}, &rec)
			tr.end(span, links, &rec, OutcomeSuccess, reconcile.Result{}, nil, nil)
			spans := exp.GetSpans()
			if len(spans) != tc.want {
				t.Fatalf("%d spans exported, want %d", len(spans), tc.want)
			}
			if tc.want == 0 {
				return
			}
			attrs := map[string]string{}
			for _, a := range spans[0].Attributes {
				attrs[string(a.Key)] = a.Value.Emit()
			}
			if attrs[AttrTriggers] == "" || attrs[AttrResult] != string(OutcomeSuccess) {
				t.Errorf("attributes %v", attrs)
			}
		})
	}
}
