package controller_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/reconcile"
)

// lines is a funcr sink's output, one formatted record per line.
type lines struct {
	mu  sync.Mutex
	buf []string
}

func (l *lines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, strings.TrimSpace(prefix+" "+args))
}

func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.buf...)
}

// TestLogrBridge checks the two bridges the docs give logr (and zap, through
// zapr) users: a logr.Logger as a controller's slog Logger, and kloop's slog
// logger handed to code that takes a logr.Logger.
func TestLogrBridge(t *testing.T) {
	t.Run("logr as the controller's logger", func(t *testing.T) {
		var got lines
		l := funcr.New(got.add, funcr.Options{Verbosity: 1})
		failed := make(chan struct{})
		var once sync.Once
		r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			reconcile.LoggerFrom(ctx).Info("looking", "step", 1)
			once.Do(func() { close(failed) })
			return reconcile.Result{}, reconcile.Terminal(errors.New("boom"))
		})
		c, err := controller.New("bridge", r, controller.Options{Logger: slog.New(logr.ToSlogHandler(l))})
		if err != nil {
			t.Fatal(err)
		}
		events := make(chan handler.Event, 1)
		src, err := controller.NewChannelSource(events, handler.EnqueueRequestForObject{}, controller.ChannelOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Watch(src); err != nil {
			t.Fatal(err)
		}
		events <- handler.GenericEvent{Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w"}}}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		<-failed
		// The terminal error is logged after Reconcile returns.
		deadline := time.Now().Add(10 * time.Second)
		for !containsAll(got.all(), `"msg"="reconcile failed with a terminal error`) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		all := got.all()
		for _, want := range []string{
			`"msg"="looking" "controller"="bridge" "namespace"="ns" "name"="w"`,
			`"step"=1`,
			`"msg"="reconcile failed with a terminal error, not requeued"`,
			// An slog error record reaches logr as Error(nil, …), its
			// "err" attribute as a value (logr's bridge).
			`"err"="terminal error: boom"`,
		} {
			if !containsAll(all, want) {
				t.Errorf("no line has %s:\n%s", want, strings.Join(all, "\n"))
			}
		}
	})
	t.Run("slog handed to logr code", func(t *testing.T) {
		var buf bytes.Buffer
		h := slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug,
			ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}})
		l := logr.FromSlogHandler(h).WithValues("controller", "bridge")
		l.Info("from logr", "n", 2)
		l.V(1).Info("verbose")
		l.Error(errors.New("bad"), "failed")
		want := "level=INFO msg=\"from logr\" controller=bridge n=2\n" +
			// logr's V(n) is slog's level -n: V(1) is DEBUG+3.
			"level=DEBUG+3 msg=verbose controller=bridge\n" +
			"level=ERROR msg=failed controller=bridge err=bad\n"
		if buf.String() != want {
			t.Errorf("got:\n%s\nwant:\n%s", buf.String(), want)
		}
	})
}

func containsAll(lines []string, want string) bool {
	for _, l := range lines {
		if strings.Contains(l, want) {
			return true
		}
	}
	return false
}

// A logr.Logger (from zapr, funcr, klog, …) is a controller's Logger through
// logr.ToSlogHandler; kloop's loggers go the other way with
// logr.FromSlogHandler.
func ExampleOptions_logr() {
	l := funcr.New(func(prefix, args string) { fmt.Println(args) }, funcr.Options{})
	c, err := controller.New("widgets", reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}), controller.Options{Logger: slog.New(logr.ToSlogHandler(l))})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = c
	slog.New(logr.ToSlogHandler(l)).Info("ready", "controller", "widgets")
	// Output:
	// "level"=0 "msg"="ready" "controller"="widgets"
}
