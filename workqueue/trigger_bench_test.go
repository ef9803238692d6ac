package workqueue

import (
	"fmt"
	"testing"

	"kloop.dev/kloop/reconcile/trigger"
)

// BenchmarkTriggers: serial add + hand-out + done of 1,024 keys going
// round, each add with its cause, with the queue's trigger records off
// (the causes ignored) and on (recorded, handed out with the key).
func BenchmarkTriggers(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("triggers=%v", on), func(b *testing.B) {
			q, err := New(Options[string]{Triggers: on})
			if err != nil {
				b.Fatal(err)
			}
			defer q.ShutDown()
			keys := make([]string, 1024)
			ts := make([]trigger.Cause, len(keys))
			for i := range keys {
				keys[i] = fmt.Sprint("ns/k", i)
				ts[i] = upd(fmt.Sprint(i))
			}
			var r trigger.Record
			q.AddAllTriggered(keys[:1], ts[:1], AddOptions{})
			k, _, _ := q.GetWithTriggers(&r)
			b.ReportAllocs()
			i := 1
			for b.Loop() {
				q.AddAllTriggered(keys[i%len(keys):i%len(keys)+1], ts[i%len(keys):i%len(keys)+1], AddOptions{})
				k, _, _ = q.NextWithTriggers(k, &r)
				i++
			}
		})
	}
}
