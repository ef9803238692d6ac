package controller

import (
	"context"
	"log/slog"
	"sync"

	"kloop.dev/kloop/internal/rctx"
	"kloop.dev/kloop/reconcile"
)

// reconcileScope is one reconcile's context scope and its logger's handler,
// allocated together.
type reconcileScope struct {
	rctx.Scope
	log reconcileLogHandler
}

// newReconcileScope returns the scope of a reconcile of req, whose logger
// is base with the attributes namespace, name and reconcileID.
func newReconcileScope(ctx context.Context, base *slog.Logger, req reconcile.Request, id [16]byte) *rctx.Scope {
	rs := &reconcileScope{Scope: rctx.Scope{Context: ctx, UUID: id, HasUUID: true}}
	rs.log = reconcileLogHandler{base: base.Handler(), sc: &rs.Scope, req: req}
	rs.Logger = slog.New(&rs.log)
	return &rs.Scope
}

// reconcileLogHandler is a reconcile's slog.Handler: the controller's
// handler with the reconcile's attributes (namespace, name, reconcileID),
// added only to what is logged. A reconcile that logs nothing costs no
// formatting, not even of its ID's text; what is logged reads as it would
// through base.With(those attributes).
type reconcileLogHandler struct {
	base slog.Handler // the controller's, with its "controller" attribute
	sc   *rctx.Scope  // the reconcile's scope: its ID
	req  reconcile.Request

	once sync.Once    // makes with
	with slog.Handler // base.WithAttrs(attrs()), for WithAttrs and WithGroup
}

func (h *reconcileLogHandler) attrs() []slog.Attr {
	return []slog.Attr{
		slog.String("namespace", h.req.Namespace),
		slog.String("name", h.req.Name),
		slog.String("reconcileID", h.sc.IDString()),
	}
}

func (h *reconcileLogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.base.Enabled(ctx, l)
}

// Handle hands base the record with the reconcile's attributes first, where
// base.With would have put them.
func (h *reconcileLogHandler) Handle(ctx context.Context, r slog.Record) error {
	nr := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	nr.AddAttrs(h.attrs()...)
	r.Attrs(func(a slog.Attr) bool {
		nr.AddAttrs(a)
		return true
	})
	return h.base.Handle(ctx, nr)
}

func (h *reconcileLogHandler) withBase() slog.Handler {
	h.once.Do(func() { h.with = h.base.WithAttrs(h.attrs()) })
	return h.with
}

func (h *reconcileLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return h.withBase().WithAttrs(as)
}

func (h *reconcileLogHandler) WithGroup(name string) slog.Handler {
	return h.withBase().WithGroup(name)
}
