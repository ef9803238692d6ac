package rctx

import (
	"context"
	"encoding/hex"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"kloop.dev/kloop/reconcile/trigger"
)

// key is the context key of a Scope.
type key struct{}

// Scope is the context of one reconcile: its parent plus the reconcile ID
// and logger, in one allocation (context.WithValue and a value would be
// two). Immutable once made.
type Scope struct {
	context.Context
	// ID is the reconcile ID's text; if it is empty and HasUUID, the ID is
	// UUID's canonical form.
	ID      string
	UUID    [16]byte
	HasUUID bool
	Logger  *slog.Logger
	// Triggers is why the reconcile runs: the record the work queue
	// handed out with the key (nil outside a controller, or with
	// controller.Options.DisableTriggers). It is the worker's, valid during
	// the reconcile only: readers copy what they keep.
	Triggers *trigger.Record
	// Writes collects the writes made through the client with the
	// reconcile's context (nil: nobody asks).
	Writes *Writes
	// NoReadWait: the client's cached reads with the reconcile's context
	// do not wait for the cache to catch up with the client's writes
	// (controller.Options.DisableReadYourOwnWrites).
	NoReadWait bool
	// Traced: the reconcile is a span (controller.Options.TracerProvider),
	// and the client hands each write the span of its API call
	// (Write.Span).
	Traced bool
	// OnTracedWrite, when set (a traced reconcile), is called by the client
	// as soon as a write's answer is in, with the object, the
	// resourceVersion it produced and the write's span: so that the
	// reconciles its event triggers, in any controller sharing the
	// controller's controller.WriteSpans, link to it.
	OnTracedWrite func(namespace, name, resourceVersion string, span trace.SpanContext)
}

// Value returns the scope itself for its key, and asks the parent
// otherwise.
func (s *Scope) Value(k any) any {
	if _, ok := k.(key); ok {
		return s
	}
	return s.Context.Value(k)
}

// From returns the innermost Scope of ctx, nil if there is none.
func From(ctx context.Context) *Scope {
	s, _ := ctx.Value(key{}).(*Scope)
	return s
}

// IDString returns the reconcile ID as text.
func (s *Scope) IDString() string {
	if s.ID == "" && s.HasUUID {
		return FormatUUID(s.UUID)
	}
	return s.ID
}

// FormatUUID returns u in its canonical 36-character form.
func FormatUUID(u [16]byte) string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], u[10:16])
	return string(b[:])
}
