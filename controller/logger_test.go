package controller

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/internal/rctx"
	"kloop.dev/kloop/reconcile"
)

// logBoth logs the same calls through a reconcile's lazy logger and through
// the plain path (base.With of the reconcile's attributes) and returns both
// outputs.
func logBoth(t testing.TB, json bool, group string, calls func(l *slog.Logger)) (lazy, plain string) {
	t.Helper()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}
	id := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	out := func(buf *bytes.Buffer) *slog.Logger {
		opts := &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}
		var h slog.Handler = slog.NewTextHandler(buf, opts)
		if json {
			h = slog.NewJSONHandler(buf, opts)
		}
		l := slog.New(h).With("controller", "c")
		if group != "" {
			l = l.WithGroup(group)
		}
		return l
	}
	var a, b bytes.Buffer
	calls(newReconcileScope(context.Background(), out(&a), req, id).Logger)
	calls(out(&b).With("namespace", "ns", "name", "a", "reconcileID", rctx.FormatUUID(id)))
	return a.String(), b.String()
}

// TestReconcileLoggerMatchesWith checks the reconcile's lazy logger against
// the plain path it replaces, base.With(namespace, name, reconcileID).
func TestReconcileLoggerMatchesWith(t *testing.T) {
	for _, tc := range []struct {
		name  string
		calls func(l *slog.Logger)
	}{
		{"message", func(l *slog.Logger) { l.Info("hello") }},
		{"attributes", func(l *slog.Logger) { l.Error("failed", "err", "boom", "n", 3, "d", time.Second) }},
		{"levels", func(l *slog.Logger) { l.Debug("d"); l.Warn("w", "k", true) }},
		{"with", func(l *slog.Logger) { l.With("step", 2).Info("x", "y", 1) }},
		{"group", func(l *slog.Logger) { l.WithGroup("g").Info("x", "y", 1) }},
		{"group attribute", func(l *slog.Logger) { l.Info("x", slog.Group("g", "a", 1, "b", "c")) }},
		{"with twice", func(l *slog.Logger) {
			w := l.With("a", 1)
			w.Info("first")
			w.With("b", 2).Info("second")
			l.Info("third")
		}},
	} {
		for _, json := range []bool{false, true} {
			for _, group := range []string{"", "outer"} {
				lazy, plain := logBoth(t, json, group, tc.calls)
				if lazy != plain {
					t.Errorf("%s (json %v, group %q):\nlazy:  %s\nplain: %s", tc.name, json, group, lazy, plain)
				}
			}
		}
	}
}

// FuzzReconcileLogger compares the lazy logger with the plain path on
// arbitrary messages, keys, values and groups.
func FuzzReconcileLogger(f *testing.F) {
	f.Add("msg", "k", "v", "", false, false)
	f.Add("", "reconcileID", "x", "g", true, true)
	f.Add("a b", "", "=\"", "name", false, true)
	f.Fuzz(func(t *testing.T, msg, key, val, group string, json, with bool) {
		lazy, plain := logBoth(t, json, group, func(l *slog.Logger) {
			if with {
				l = l.With(key, val)
			}
			l.Info(msg, key, val)
			l.WithGroup(group).Warn(msg, key, val)
		})
		if lazy != plain {
			t.Errorf("lazy:  %s\nplain: %s", lazy, plain)
		}
	})
}

// BenchmarkReconcileLogger is the cost of a reconcile's logger that logs
// nothing: the lazy one against base.With.
func BenchmarkReconcileLogger(b *testing.B) {
	base := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)).With("controller", "c")
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}
	id := [16]byte{1}
	b.Run("lazy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = newReconcileScope(context.Background(), base, req, id)
		}
	})
	b.Run("with", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = base.With("namespace", req.Namespace, "name", req.Name, "reconcileID", rctx.FormatUUID(id))
		}
	})
}
