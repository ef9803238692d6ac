package liveview

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/reconcile/trigger"
)

// BenchmarkTimelineObserve is the live view's cost per reconcile: one
// Observation (two triggers, one write) recorded in the timeline of one of
// 10,000 objects (past the default MaxObjects: the LRU evicts).
func BenchmarkTimelineObserve(b *testing.B) {
	tl, err := NewTimeline(TimelineOptions{})
	if err != nil {
		b.Fatal(err)
	}
	obs := make([]controller.Observation, 10_000)
	recs := make([]trigger.Record, len(obs))
	for i := range obs {
		name := fmt.Sprint("obj-", i)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: "1"}}
		recs[i].Add(trigger.Cause{Type: trigger.Update, Source: "ConfigMap", Handler: "h", Object: cm, Time: t0})
		recs[i].Add(trigger.Cause{Type: trigger.Update, Source: "ConfigMap", Handler: "h", Object: cm, Time: t0})
		obs[i] = *reconciled(name, i, &recs[i], nil, controller.Write{Kind: "ConfigMap", Namespace: "ns", Name: name, ResourceVersion: "2"})
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		tl.Observe("c", &obs[i%len(obs)])
		i++
	}
	if n := len(tl.Objects(0)); n != DefaultMaxObjects {
		b.Fatalf("%d objects kept, want %d", n, DefaultMaxObjects)
	}
}
