package liveview

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/reconcile"
	"kloop.dev/kloop/reconcile/trigger"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func req(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func reconciled(name string, i int, trigs *trigger.Record, err error, writes ...controller.Write) *controller.Observation {
	o := &controller.Observation{Type: controller.Reconciled, Request: req(name), ReconcileID: fmt.Sprint("id-", i),
		Triggers: trigs, Start: t0.Add(time.Duration(i) * time.Second), Duration: 1500 * time.Microsecond,
		Outcome: controller.OutcomeSuccess, Err: err, Writes: writes}
	if err != nil {
		o.Outcome = controller.OutcomeError
	}
	return o
}

func TestTimelineEntries(t *testing.T) {
	tl, err := NewTimeline(TimelineOptions{PerObject: 3})
	if err != nil {
		t.Fatal(err)
	}
	var rec trigger.Record
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "7"}}
	for range 5 {
		rec.Add(trigger.Cause{Type: trigger.Update, Source: "ConfigMap", Handler: "h", Object: cm, Time: t0})
	}
	tl.Observe("c", reconciled("a", 1, &rec, nil, controller.Write{Kind: "Secret", Namespace: "ns", Name: "a-child", ResourceVersion: "8"}))
	rec.Reset()
	tl.Observe("c", &controller.Observation{Type: controller.StaleSkip, Request: req("a"), Start: t0.Add(2 * time.Second)})
	tl.Observe("c", reconciled("a", 3, nil, errors.New("boom")))
	tl.Observe("c", &controller.Observation{Type: controller.HotLoopReported, Request: req("a"), Start: t0.Add(4 * time.Second), Message: "loops"})

	got, ok := tl.Entries(ObjectKey{"c", "ns", "a"})
	if !ok {
		t.Fatal("no timeline for ns/a")
	}
	// PerObject 3: the first entry is gone, the rest in order.
	tests := []struct{ typ, result, errText, msg string }{
		{"StaleSkip", "", "", ""},
		{"Reconciled", "error", "boom", ""},
		{"HotLoop", "", "", "loops"},
	}
	if len(got) != len(tests) {
		t.Fatalf("%d entries, want %d: %+v", len(got), len(tests), got)
	}
	for i, tt := range tests {
		if e := got[i]; e.Type != tt.typ || e.Result != tt.result || e.Error != tt.errText || e.Message != tt.msg {
			t.Errorf("entry %d = %+v, want %+v", i, e, tt)
		}
	}
	sum := tl.Objects(0)
	if len(sum) != 1 || sum[0].Reconciles != 2 || sum[0].StaleSkips != 1 || sum[0].HotLoops != 1 || sum[0].LastResult != "error" {
		t.Errorf("summary %+v", sum)
	}

	// A fresh object keeps its triggers and writes.
	rec.Add(trigger.Cause{Type: trigger.Create, Source: "ConfigMap", Handler: "h", Object: cm, Time: t0})
	tl.Observe("c", reconciled("b", 9, &rec, nil, controller.Write{Kind: "Secret", Name: "x", ResourceVersion: "9"}))
	got, _ = tl.Entries(ObjectKey{"c", "ns", "b"})
	if len(got) != 1 || got[0].TriggersTotal != 1 || got[0].Triggers[0].ResourceVersion != "7" || got[0].Triggers[0].Type != "Create" ||
		len(got[0].Writes) != 1 || got[0].DurationMS != 1.5 || got[0].ReconcileID != "id-9" {
		t.Errorf("entry %+v", got)
	}
}

// Long errors and messages are cut: the timeline's memory is bounded by
// its entries only if each entry is.
func TestTimelineClipsText(t *testing.T) {
	tl, err := NewTimeline(TimelineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", 2*maxText) // two bytes a rune
	tl.Observe("c", reconciled("a", 1, nil, errors.New(long)))
	tl.Observe("c", &controller.Observation{Type: controller.HotLoopReported, Request: req("a"), Start: t0.Add(time.Second), Message: long})
	got, _ := tl.Entries(ObjectKey{"c", "ns", "a"})
	if len(got) != 2 {
		t.Fatalf("%d entries", len(got))
	}
	for _, s := range []string{got[0].Error, got[1].Message} {
		if len(s) > maxText+len("…") || !strings.HasSuffix(s, "…") || !utf8.ValidString(s) {
			t.Errorf("kept %d bytes (valid UTF-8 %v): %.40q…", len(s), utf8.ValidString(s), s)
		}
	}
	if short := clip("boom"); short != "boom" {
		t.Errorf("clip(boom) = %q", short)
	}
}

func TestTimelineLRU(t *testing.T) {
	tl, err := NewTimeline(TimelineOptions{MaxObjects: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"a", "b", "c", "a", "d"} {
		tl.Observe("c", reconciled(name, i, nil, nil))
	}
	var names []string
	for _, o := range tl.Objects(0) {
		names = append(names, o.Name)
	}
	if fmt.Sprint(names) != "[d a c]" {
		t.Errorf("objects %v, want [d a c] (b, the least recently observed, forgotten)", names)
	}
	if _, ok := tl.Entries(ObjectKey{"c", "ns", "b"}); ok {
		t.Error("b still has a timeline")
	}
	if got := tl.Objects(2); len(got) != 2 {
		t.Errorf("Objects(2) returned %d", len(got))
	}
}

func TestTimelineOptions(t *testing.T) {
	for _, o := range []TimelineOptions{{MaxObjects: -1}, {PerObject: -1}} {
		if _, err := NewTimeline(o); err == nil {
			t.Errorf("NewTimeline(%+v) accepted", o)
		}
	}
}
