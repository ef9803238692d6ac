package controller

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/internal/rctx"
	"kloop.dev/kloop/reconcile"
	"kloop.dev/kloop/reconcile/trigger"
)

// TracerName is the instrumentation scope of the controller's spans (and
// of the API calls' spans of kloop's REST stack).
const TracerName = "kloop.dev/kloop"

// The attributes of a reconcile's span.
const (
	AttrController    = "kloop.controller"
	AttrNamespace     = "k8s.namespace.name"
	AttrName          = "k8s.object.name"
	AttrReconcileID   = "kloop.reconcile_id"
	AttrResult        = "kloop.reconcile.result"
	AttrRequeueAfter  = "kloop.reconcile.requeue_after"
	AttrTriggers      = "kloop.triggers"
	AttrTriggersTotal = "kloop.triggers.total"
)

// DefaultTracedWrites is the number of writes whose spans a traced
// controller remembers (WriteSpans), to link the reconciles their events
// trigger to them.
const DefaultTracedWrites = 4096

// tracing makes the spans of a controller's reconciles.
type tracing struct {
	tracer     trace.Tracer
	controller string
	name       string // "Reconcile <controller>"
	writes     *WriteSpans
	// record remembers a write's span (rctx.Scope.OnTracedWrite), made
	// once.
	record func(namespace, name, resourceVersion string, span trace.SpanContext)
}

func newTracing(tp trace.TracerProvider, controller string, writes *WriteSpans) *tracing {
	if writes == nil {
		writes = NewWriteSpans(DefaultTracedWrites)
	}
	t := &tracing{
		tracer:     tp.Tracer(TracerName),
		controller: controller,
		name:       "Reconcile " + controller,
		writes:     writes,
	}
	t.record = func(namespace, name, rv string, span trace.SpanContext) {
		writes.add(writeKey{namespace, name, rv}, span)
	}
	return t
}

// writeKey is an object at a resourceVersion.
type writeKey struct{ namespace, name, rv string }

// WriteSpans remembers the spans of traced controllers' last writes by the
// object and resourceVersion each produced, first in first out, so that a
// reconcile triggered by a write's event links to the write's span
// (Options.TracedWrites). Controllers may share one: a reconcile of one then
// links to the writes of the others (a manager's controllers share the
// manager's). It is safe for concurrent use.
type WriteSpans struct {
	max int
	mu  sync.Mutex // guards m, ring and next
	m   map[writeKey]trace.SpanContext
	// ring holds the keys of m in the order they came, to evict the oldest.
	ring []writeKey
	next int
}

// NewWriteSpans returns a WriteSpans that keeps the last max writes' spans
// (DefaultTracedWrites when max ≤ 0).
func NewWriteSpans(max int) *WriteSpans {
	if max <= 0 {
		max = DefaultTracedWrites
	}
	return &WriteSpans{max: max, m: map[writeKey]trace.SpanContext{}}
}

func (w *WriteSpans) add(k writeKey, sc trace.SpanContext) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.m[k]; ok {
		// A no-op write answers the resourceVersion it found: only the
		// first write can have made that version, so it keeps its span.
		return
	}
	if len(w.ring) < w.max {
		w.ring = append(w.ring, k)
	} else {
		delete(w.m, w.ring[w.next])
		w.ring[w.next] = k
		w.next = (w.next + 1) % w.max
	}
	w.m[k] = sc
}

func (w *WriteSpans) links(trigs *trigger.Record, dst []trace.Link) []trace.Link {
	if trigs == nil || trigs.Len() == 0 {
		return dst
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.m) == 0 {
		return dst
	}
	for i := range trigs.Len() {
		t := trigs.At(i)
		if !isObjectEvent(t) {
			continue
		}
		k := writeKey{t.Object.GetNamespace(), t.Object.GetName(), t.Object.GetResourceVersion()}
		if sc, ok := w.m[k]; ok {
			dst = append(dst, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{
				attribute.String("kloop.link", "write→event"),
				attribute.String("kloop.trigger", t.Type.String()),
			}})
		}
	}
	return dst
}

// start begins the span of a reconcile of req: its attributes, and links
// to the spans of the writes whose events triggered it (links, which end
// takes).
func (t *tracing) start(ctx context.Context, req reconcile.Request, id [16]byte, trigs *trigger.Record) (_ context.Context, _ trace.Span, links []trace.Link) {
	attrs := []attribute.KeyValue{
		attribute.String(AttrController, t.controller),
		attribute.String(AttrNamespace, req.Namespace),
		attribute.String(AttrName, req.Name),
		attribute.String(AttrReconcileID, rctx.FormatUUID(id)),
	}
	if trigs != nil {
		attrs = append(attrs, attribute.Int(AttrTriggersTotal, trigs.Total()))
	}
	links = t.writes.links(trigs, nil) // before Start: a sampler may read them
	ctx, span := t.tracer.Start(ctx, t.name,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrs...),
		trace.WithLinks(links...))
	if trigs != nil && span.IsRecording() { // the text only for a span that is kept
		span.SetAttributes(attribute.String(AttrTriggers, triggersText(trigs)))
	}
	return ctx, span, links
}

// triggersText renders a record as reconcile.Triggers' String does: the
// total, then the recent causes.
func triggersText(trigs *trigger.Record) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(trigs.Total()))
	for i := range trigs.Len() {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		c := trigs.At(i)
		t := reconcile.Trigger{Type: c.Type, Kind: c.Source, Handler: c.Handler}
		if o := c.Object; o != nil {
			if ho := asObject(o); ho == nil || !handler.IsNil(ho) {
				t.Namespace, t.Name, t.ResourceVersion = o.GetNamespace(), o.GetName(), o.GetResourceVersion()
			}
		}
		b.WriteString(t.String())
	}
	return b.String()
}

// end finishes a reconcile's span: its result, error and writes (an event
// each, with the resourceVersion it produced), and the links to writes
// whose spans were not known yet when it started (links: those it has; a
// write's event may reach the cache before its writer's client has its
// answer).
func (t *tracing) end(span trace.Span, links []trace.Link, trigs *trigger.Record, out Outcome, res reconcile.Result, err error, ws []rctx.Write) {
	if !span.IsRecording() {
		span.End()
		return
	}
	for _, l := range t.writes.links(trigs, nil) {
		if !slices.ContainsFunc(links, func(o trace.Link) bool { return o.SpanContext.Equal(l.SpanContext) }) {
			span.AddLink(l)
		}
	}
	span.SetAttributes(attribute.String(AttrResult, string(out)))
	if out == OutcomeRequeueAfter {
		span.SetAttributes(attribute.String(AttrRequeueAfter, res.RequeueAfter.String()))
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	for _, w := range ws {
		kind := w.Kind.String()
		if w.Subresource != "" {
			kind += "/" + w.Subresource
		}
		span.AddEvent("write", trace.WithAttributes(
			attribute.String("k8s.kind", kind),
			attribute.String(AttrNamespace, w.Namespace),
			attribute.String(AttrName, w.Name),
			attribute.String("k8s.object.resource_version", w.ResourceVersion),
			attribute.Bool("kloop.write.deleted", w.Deleted),
			attribute.String("kloop.write.span_id", spanID(w.Span))))
	}
	span.End()
}

func spanID(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	return strings.ToLower(sc.SpanID().String())
}
