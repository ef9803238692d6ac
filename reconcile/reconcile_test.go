package reconcile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/types"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTerminal(t *testing.T) {
	base := errors.New("bad spec")
	pathErr := &fs.PathError{Op: "open", Path: "/x", Err: fs.ErrNotExist}
	tests := []struct {
		name         string
		err          error
		wantTerminal bool
		wantIsBase   bool
		wantMsg      string
	}{
		{"nil", nil, false, false, ""},
		{"plain", base, false, true, "bad spec"},
		{"terminal", Terminal(base), true, true, "terminal error: bad spec"},
		{"wrapped terminal", fmt.Errorf("reconcile widget: %w", Terminal(base)), true, true, "reconcile widget: terminal error: bad spec"},
		{"terminal of wrapped", Terminal(fmt.Errorf("ctx: %w", base)), true, true, "terminal error: ctx: bad spec"},
		{"joined", errors.Join(errors.New("other"), Terminal(base)), true, true, "other\nterminal error: bad spec"},
		{"terminal nil is nil", Terminal(nil), false, false, ""},
		{"sentinel itself", ErrTerminal, true, false, "terminal error"},
		{"terminal path error", Terminal(pathErr), true, false, "terminal error: open /x: file does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsTerminal(tt.err); got != tt.wantTerminal {
				t.Errorf("IsTerminal = %v, want %v", got, tt.wantTerminal)
			}
			if got := errors.Is(tt.err, ErrTerminal); got != tt.wantTerminal {
				t.Errorf("errors.Is(ErrTerminal) = %v, want %v", got, tt.wantTerminal)
			}
			if got := errors.Is(tt.err, base); got != tt.wantIsBase {
				t.Errorf("errors.Is(base) = %v, want %v", got, tt.wantIsBase)
			}
			if tt.err == nil {
				return
			}
			if tt.err.Error() != tt.wantMsg {
				t.Errorf("message %q, want %q", tt.err.Error(), tt.wantMsg)
			}
		})
	}
	// errors.As sees through the terminal wrapper.
	var pe *fs.PathError
	if !errors.As(Terminal(pathErr), &pe) || pe.Path != "/x" {
		t.Fatalf("errors.As through Terminal failed: %v", pe)
	}
	if !errors.Is(Terminal(pathErr), fs.ErrNotExist) {
		t.Fatal("errors.Is(fs.ErrNotExist) through Terminal failed")
	}
}

func TestContext(t *testing.T) {
	ctx := context.Background()
	if IDFrom(ctx) != "" {
		t.Fatal("ID outside a reconcile")
	}
	if LoggerFrom(ctx) == nil {
		t.Fatal("nil logger outside a reconcile")
	}
	LoggerFrom(ctx).Info("discarded") // must not panic

	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: dropTime})).With("name", "a")
	rctx := NewContext(ctx, "id-1", l)
	if got := IDFrom(rctx); got != "id-1" {
		t.Fatalf("IDFrom = %q", got)
	}
	LoggerFrom(rctx).Info("hello")
	if got := buf.String(); got != "level=INFO msg=hello name=a\n" {
		t.Fatalf("log = %q", got)
	}
	// A nil logger is stored as a discarding one.
	if LoggerFrom(NewContext(ctx, "id-2", nil)) == nil {
		t.Fatal("nil logger returned")
	}
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

func TestRequestAndResult(t *testing.T) {
	r := Request{types.NamespacedName{Namespace: "ns", Name: "a"}}
	if r.String() != "ns/a" {
		t.Fatalf("String = %q", r.String())
	}
	// Comparable: it keys a map (and the work queue).
	m := map[Request]int{r: 1}
	m[Request{types.NamespacedName{Namespace: "ns", Name: "a"}}]++
	if len(m) != 1 || m[r] != 2 {
		t.Fatalf("map = %v", m)
	}
	cluster := Request{types.NamespacedName{Name: "node-1"}}
	if cluster.String() != "/node-1" { // apimachinery's NamespacedName.String
		t.Fatalf("cluster-scoped String = %q", cluster.String())
	}
	if !(Result{}).IsZero() || (Result{RequeueAfter: time.Second}).IsZero() {
		t.Fatal("IsZero")
	}
}

func TestFunc(t *testing.T) {
	var got Request
	var r Reconciler = Func(func(_ context.Context, req Request) (Result, error) {
		got = req
		return Result{RequeueAfter: time.Minute}, nil
	})
	want := Request{types.NamespacedName{Namespace: "ns", Name: "b"}}
	res, err := r.Reconcile(context.Background(), want)
	if err != nil || res.RequeueAfter != time.Minute || got != want {
		t.Fatalf("Reconcile = %v, %v; got %v", res, err, got)
	}
}

func TestContextIsAContext(t *testing.T) {
	type other struct{}
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), other{}, "v"))
	ctx := NewContext(parent, "id", nil)
	if ctx.Value(other{}) != "v" {
		t.Fatal("parent values lost")
	}
	// Cancellation propagates through it, to contexts derived from it too.
	child, stop := context.WithTimeout(ctx, time.Hour)
	defer stop()
	cause := errors.New("shutting down")
	cancel(cause)
	<-child.Done()
	if !errors.Is(context.Cause(child), cause) || !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("cause %v, err %v", context.Cause(child), ctx.Err())
	}
	// A nested scope shadows the outer one.
	inner := NewContext(ctx, "inner", nil)
	if IDFrom(inner) != "inner" || IDFrom(ctx) != "id" {
		t.Fatal("nested scopes")
	}
}
