package controller

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/internal/rctx"
	"kloop.dev/kloop/reconcile"
	"kloop.dev/kloop/reconcile/trigger"
)

// cmAt is a ConfigMap ns/name at resourceVersion rv, with its kind set.
func cmAt(name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

// TestTriggersFrom: a reconcile reads why it runs — the events merged into
// it while the key waited (the last four, and the count), then the
// controller's own requeues — and its log line carries them.
func TestTriggersFrom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var seen []string
		release := make(chan struct{})
		r := &recorder{do: func(ctx context.Context, _ reconcile.Request, call int) (reconcile.Result, error) {
			tr, ok := reconcile.TriggersFrom(ctx)
			if !ok {
				t.Error("no triggers in a controller's reconcile")
			}
			mu.Lock()
			seen = append(seen, tr.String())
			mu.Unlock()
			switch call {
			case 1:
				<-release // events pile up meanwhile
			case 2:
				return reconcile.Result{}, errors.New("boom")
			case 3:
				return reconcile.Result{RequeueAfter: time.Minute}, nil
			}
			return reconcile.Result{}, nil
		}}
		tc := newTest(t, r, Options{})
		cancel, errc := run(tc.c)
		tc.events <- handler.UpdateEvent{ObjectOld: cmAt("a", "1"), ObjectNew: cmAt("a", "2")}
		synctest.Wait() // reconcile 1 holds the key
		for i := 3; i <= 8; i++ {
			tc.events <- handler.UpdateEvent{ObjectOld: cmAt("a", "1"), ObjectNew: cmAt("a", string(rune('0'+i)))}
		}
		synctest.Wait()
		close(release)
		time.Sleep(2 * time.Minute) // the backoff, then the RequeueAfter
		synctest.Wait()
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		const upd = "Update ConfigMap ns/a rv="
		const by = " by EnqueueRequestForObject"
		want := []string{
			"1: " + upd + "2" + by,
			"6: " + upd + "5" + by + "; " + upd + "6" + by + "; " + upd + "7" + by + "; " + upd + "8" + by,
			"1: Error",
			"1: RequeueAfter",
		}
		if strings.Join(seen, "\n") != strings.Join(want, "\n") {
			t.Fatalf("triggers seen:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
		}
		logs := tc.logs.String()
		for _, w := range []string{
			`msg=reconciled controller=widget namespace=ns name=a reconcileID=`,
			`triggers.total=1 triggers.recent="Update ConfigMap ns/a rv=2 by EnqueueRequestForObject (0s ago)"`,
			`err=boom triggers.total=6 triggers.recent="Update ConfigMap ns/a rv=5 by EnqueueRequestForObject (0s ago); Update`,
			`triggers.total=1 triggers.recent="Error (5ms ago)"`,
			`triggers.total=1 triggers.recent="RequeueAfter (1m0s ago)"`,
		} {
			if !strings.Contains(logs, w) {
				t.Errorf("logs lack %s:\n%s", w, logs)
			}
		}
	})
}

func TestTriggersDisabled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := make(chan bool, 1)
		r := &recorder{do: func(ctx context.Context, _ reconcile.Request, _ int) (reconcile.Result, error) {
			_, ok := reconcile.TriggersFrom(ctx)
			got <- ok
			return reconcile.Result{}, nil
		}}
		tc := newTest(t, r, Options{DisableTriggers: true})
		cancel, errc := run(tc.c)
		tc.send("a")
		if <-got {
			t.Error("TriggersFrom reports triggers with DisableTriggers")
		}
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	})
}

func TestChannelTrigger(t *testing.T) {
	tests := []struct {
		e    handler.Event
		want string
	}{
		{handler.CreateEvent{Object: cmAt("a", "1")}, "Create ConfigMap ns/a rv=1 by h"},
		{handler.CreateEvent{Object: cmAt("a", "1"), IsInInitialList: true}, "InitialList ConfigMap ns/a rv=1 by h"},
		{handler.UpdateEvent{ObjectOld: cmAt("a", "1"), ObjectNew: cmAt("a", "2")}, "Update ConfigMap ns/a rv=2 by h"},
		{handler.UpdateEvent{ObjectOld: cmAt("a", "1")}, "Update ConfigMap ns/a rv=1 by h"},
		{handler.DeleteEvent{Object: cmAt("a", "3")}, "Delete ConfigMap ns/a rv=3 by h"},
		{handler.DeleteEvent{Object: (*corev1.ConfigMap)(nil)}, "Delete channel by h"},
		{handler.GenericEvent{Object: obj("b")}, "Generic channel ns/b rv=1 by h"},
	}
	for _, tt := range tests {
		var r trigger.Record
		r.Add(channelTrigger(tt.e, "h"))
		tr, _ := reconcile.TriggersFrom(&rctx.Scope{Context: context.Background(), Triggers: &r})
		if got := tr.Recent[0].String(); got != tt.want {
			t.Errorf("%T: %q, want %q", tt.e, got, tt.want)
		}
	}
}
