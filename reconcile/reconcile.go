package reconcile

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/internal/rctx"
)

// Request names the object to reconcile: its namespace (empty for
// cluster-scoped objects) and name. It is comparable, and it is the key of
// the controller's work queue, so a key added many times before a worker
// takes it is reconciled once. String returns "namespace/name".
type Request struct {
	types.NamespacedName
}

// Result tells the controller when to look at the key again after a
// successful reconcile. The zero value means "done until the next event".
type Result struct {
	// RequeueAfter, when positive, reconciles the key again after at least
	// this long (the backoff is reset first). Ignored when the reconcile
	// returns an error. Default 0: not requeued.
	RequeueAfter time.Duration
}

// IsZero reports whether r asks for nothing.
func (r Result) IsZero() bool { return r.RequeueAfter == 0 }

// Reconciler makes the world match the object that req names. It is called
// by the controller's workers, never twice at once for one Request.
//
// Return Result{}, nil when done; Result{RequeueAfter: d}, nil to look again
// after d; an error to be retried with backoff; Terminal(err) for an error
// that retrying cannot fix.
type Reconciler interface {
	Reconcile(ctx context.Context, req Request) (Result, error)
}

// Func adapts a function to a Reconciler.
type Func func(ctx context.Context, req Request) (Result, error)

// Reconcile calls f.
func (f Func) Reconcile(ctx context.Context, req Request) (Result, error) { return f(ctx, req) }

// ErrTerminal matches, with errors.Is, every error returned by Terminal.
var ErrTerminal = errors.New("terminal error")

// Terminal marks err as terminal: the controller logs it, counts it in
// controller_runtime_terminal_reconcile_errors_total, resets the key's backoff
// and does not requeue it. errors.Is(t, ErrTerminal) reports it, also through
// further %w wrapping; errors.Is and errors.As see err through it.
// Terminal(nil) is nil, so that Terminal(validate(obj)) is safe to return.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err: err}
}

// IsTerminal reports whether err is or wraps an error returned by Terminal.
func IsTerminal(err error) bool { return errors.Is(err, ErrTerminal) }

type terminalError struct{ err error }

func (t *terminalError) Error() string        { return "terminal error: " + t.err.Error() }
func (t *terminalError) Unwrap() error        { return t.err }
func (t *terminalError) Is(target error) bool { return target == ErrTerminal }

// NewContext returns a context carrying a reconcile ID and a logger. The
// controller makes one for each reconcile; tests of a Reconciler may call it
// too. A nil logger is stored as one that discards.
func NewContext(ctx context.Context, id string, logger *slog.Logger) context.Context {
	return &rctx.Scope{Context: ctx, ID: id, Logger: logger}
}

// IDFrom returns the reconcile ID in ctx, or "" outside a reconcile.
func IDFrom(ctx context.Context) string {
	if s := rctx.From(ctx); s != nil {
		return s.IDString()
	}
	return ""
}

// LoggerFrom returns the reconcile's logger in ctx, which carries the
// attributes controller, namespace, name and reconcileID. Outside a
// reconcile it returns a logger that discards; it never returns nil.
func LoggerFrom(ctx context.Context) *slog.Logger {
	if s := rctx.From(ctx); s != nil && s.Logger != nil {
		return s.Logger
	}
	return slog.New(slog.DiscardHandler)
}
