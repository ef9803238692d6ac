package controller

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/internal/rctx"
	"kloop.dev/kloop/reconcile"
)

// TestStaleSkip: a key whose last reconcile wrote something the cache has
// not caught up with is skipped (Reconcile not called) and requeued until
// it has, its causes kept; one the cache never catches up with is
// reconciled once the timeout passed, with a warning.
func TestStaleSkip(t *testing.T) {
	for _, tc := range []struct {
		name       string
		catchUpAt  time.Duration // when CaughtUp turns true; 0: never
		wantSkips  bool
		wantLog    string
		wantSecond time.Duration // when the second reconcile starts, about
	}{
		{"caught up after 50ms", 50 * time.Millisecond, true, "", 50 * time.Millisecond},
		{"never: the timeout", 0, true, "did not catch up with the writes of the key's last reconcile", DefaultReadYourOwnWritesTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				var caught atomic.Bool
				if tc.catchUpAt > 0 {
					time.AfterFunc(tc.catchUpAt, func() { caught.Store(true) })
				}
				var mu sync.Mutex
				var starts []time.Duration
				var second string
				r := &recorder{do: func(ctx context.Context, _ reconcile.Request, call int) (reconcile.Result, error) {
					mu.Lock()
					starts = append(starts, time.Since(start))
					mu.Unlock()
					if call == 1 {
						rctx.From(ctx).Writes.Add(rctx.Write{Kind: schema.GroupKind{Kind: "ConfigMap"}, Namespace: "ns", Name: "child",
							ResourceVersion: "7", CaughtUp: caught.Load})
					} else {
						tr, _ := reconcile.TriggersFrom(ctx)
						second = tr.String()
					}
					return reconcile.Result{}, nil
				}}
				tc2 := newTest(t, r, Options{})
				cancel, errc := run(tc2.c)
				tc2.send("a")
				synctest.Wait()
				tc2.send("a") // the event of the write, say
				time.Sleep(5 * time.Second)
				synctest.Wait()
				cancel()
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
				if len(starts) != 2 {
					t.Fatalf("%d reconciles, want 2", len(starts))
				}
				if d := starts[1] - tc.wantSecond; d < 0 || d > 20*time.Millisecond {
					t.Errorf("second reconcile at %s, want about %s", starts[1], tc.wantSecond)
				}
				s := tc2.m.Only()
				if tc.wantSkips && s.StaleSkips == 0 {
					t.Errorf("no stale skip counted: %+v", s)
				}
				if tc.catchUpAt == 0 && s.StaleTimeouts != 1 {
					t.Errorf("StaleTimeouts %d, want 1", s.StaleTimeouts)
				}
				if !strings.HasPrefix(second, "2: Generic") || !strings.Contains(second, "Stale") {
					t.Errorf("the second reconcile's triggers %q: want the event it came with, then one Stale", second)
				}
				if tc.wantLog != "" && !strings.Contains(tc2.logs.String(), tc.wantLog) {
					t.Errorf("logs lack %q:\n%s", tc.wantLog, tc2.logs.String())
				}
			})
		})
	}
}

// TestStaleSkipDisabled: with DisableReadYourOwnWrites nothing is held back,
// and the reconcile's reads are told not to wait.
func TestStaleSkipDisabled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var noWait []bool
		r := &recorder{do: func(ctx context.Context, _ reconcile.Request, call int) (reconcile.Result, error) {
			sc := rctx.From(ctx)
			noWait = append(noWait, sc.NoReadWait)
			if sc.Writes != nil {
				sc.Writes.Add(rctx.Write{Name: "child", ResourceVersion: "7", CaughtUp: func() bool { return false }})
			}
			return reconcile.Result{}, nil
		}}
		tc := newTest(t, r, Options{DisableReadYourOwnWrites: true})
		cancel, errc := run(tc.c)
		tc.send("a")
		synctest.Wait()
		tc.send("a")
		synctest.Wait()
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(noWait, []bool{true, true}) || tc.m.Only().StaleSkips != 0 {
			t.Fatalf("reads told not to wait %v, skips %d; want two reconciles at once", noWait, tc.m.Only().StaleSkips)
		}
	})
}

// fakeRecorder records Events.
type fakeRecorder struct {
	mu     sync.Mutex
	events []string
}

func (f *fakeRecorder) Event(obj runtime.Object, eventType, reason, message string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, _ := obj.(metav1.Object)
	f.events = append(f.events, eventType+" "+reason+" "+m.GetName()+": "+message)
}

// TestHotLoopSlowDown: a reconcile triggered only by its own last write that
// writes again, ten times in a row, is reported; with SlowDown the key is
// then held back to one reconcile per SlowDown.
func TestHotLoopSlowDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		events := make(chan handler.Event, 100)
		rv := 1
		var mu sync.Mutex
		var starts []time.Time
		r := &recorder{do: func(ctx context.Context, req reconcile.Request, _ int) (reconcile.Result, error) {
			mu.Lock()
			starts = append(starts, time.Now())
			rv++
			cur := rv
			mu.Unlock()
			// The write, and its event coming back.
			rctx.From(ctx).Writes.Add(rctx.Write{Kind: schema.GroupKind{Kind: "ConfigMap"}, Namespace: "ns", Name: req.Name,
				ResourceVersion: itoa(cur)})
			events <- handler.UpdateEvent{ObjectOld: cmAt(req.Name, itoa(cur-1)), ObjectNew: cmAt(req.Name, itoa(cur))}
			return reconcile.Result{}, nil
		}}
		rec := &fakeRecorder{}
		tc := newTest(t, r, Options{HotLoop: HotLoopOptions{SlowDown: time.Second, Recorder: rec}})
		src, err := NewChannelSource(events, handler.EnqueueRequestForObject{}, ChannelOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := tc.c.Watch(src); err != nil {
			t.Fatal(err)
		}
		cancel, errc := run(tc.c)
		events <- handler.UpdateEvent{ObjectOld: cmAt("a", "0"), ObjectNew: cmAt("a", "1")} // someone's edit starts it
		time.Sleep(5500 * time.Millisecond)
		synctest.Wait()
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if got := tc.m.Only().HotLoops; got != 1 {
			t.Fatalf("HotLoops %d, want 1", got)
		}
		if len(rec.events) != 1 || !strings.HasPrefix(rec.events[0], "Warning HotLoop a: reconciled and written 10 times in a row") {
			t.Fatalf("events %q", rec.events)
		}
		// Eleven reconciles at once (the edit's, then ten own-write loops
		// reported at the tenth), then one per second.
		mu.Lock()
		defer mu.Unlock()
		fast := 0
		for _, s := range starts {
			if s.Sub(starts[0]) < time.Millisecond {
				fast++
			}
		}
		if fast != 11 || len(starts) < 15 || len(starts) > 17 {
			t.Fatalf("%d reconciles, %d at once; want 11 at once, then one per second", len(starts), fast)
		}
		if !strings.Contains(tc.logs.String(), "hot loop: reconciled and written 10 times") {
			t.Errorf("no log line:\n%s", tc.logs.String())
		}
	})
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestChangedHands: the fields that went from one manager to another
// between two versions of managedFields, and the managers.
func TestChangedHands(t *testing.T) {
	mf := func(manager, op, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationType(op),
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	tests := []struct {
		name          string
		before, after []metav1.ManagedFieldsEntry
		managers      []string
		paths         []string
	}{{
		name:     "a label taken over",
		before:   []metav1.ManagedFieldsEntry{mf("blue", "Update", `{"f:metadata":{"f:labels":{".":{},"f:team":{}}},"f:data":{"f:x":{}}}`)},
		after:    []metav1.ManagedFieldsEntry{mf("blue", "Update", `{"f:data":{"f:x":{}}}`), mf("green", "Update", `{"f:metadata":{"f:labels":{"f:team":{}}}}`)},
		managers: []string{`"blue"`, `"green"`},
		paths:    []string{".metadata.labels.team"},
	}, {
		name:   "different fields: nothing changed hands",
		before: []metav1.ManagedFieldsEntry{mf("blue", "Update", `{"f:spec":{"f:color":{}}}`)},
		after:  []metav1.ManagedFieldsEntry{mf("blue", "Update", `{"f:spec":{"f:color":{}}}`), mf("green", "Update", `{"f:status":{"f:state":{}}}`)},
	}, {
		name:     "list items by key, apply against update",
		before:   []metav1.ManagedFieldsEntry{mf("kubectl", "Apply", `{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:image":{}}}}}`)},
		after:    []metav1.ManagedFieldsEntry{mf("kubectl", "Update", `{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:image":{}}}}}`)},
		managers: []string{`"kubectl"`, `"kubectl" (apply)`},
		paths:    []string{`.spec.containers[{"name":"app"}].image`},
	}, {
		name:   "garbage is ignored",
		before: []metav1.ManagedFieldsEntry{mf("x", "Update", `{not json`)},
		after:  []metav1.ManagedFieldsEntry{mf("y", "Update", `[]`)},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			managers, paths := changedHands(tt.before, tt.after)
			if !slices.Equal(managers, tt.managers) || !slices.Equal(paths, tt.paths) {
				t.Fatalf("got %q %q, want %q %q", managers, paths, tt.managers, tt.paths)
			}
		})
	}
}

// FuzzChangedHands: managedFields from the server are input; nothing
// panics and every path reported is one of after's.
func FuzzChangedHands(f *testing.F) {
	f.Add(`{"f:metadata":{"f:labels":{".":{},"f:a":{}}}}`, `{"f:metadata":{"f:labels":{"f:a":{}}}}`)
	f.Add(`{"k:{\"a\":1}":{"v:x":{},"i:3":{}}}`, `{}`)
	f.Fuzz(func(t *testing.T, a, b string) {
		before := []metav1.ManagedFieldsEntry{{Manager: "a", FieldsV1: &metav1.FieldsV1{Raw: []byte(a)}}}
		after := []metav1.ManagedFieldsEntry{{Manager: "b", FieldsV1: &metav1.FieldsV1{Raw: []byte(b)}}}
		_, paths := changedHands(before, after)
		own := owners(after)
		for _, p := range paths {
			if _, ok := own[p]; !ok {
				t.Fatalf("path %q is not after's", p)
			}
		}
	})
}
