package trigger_test

import (
	"fmt"

	"kloop.dev/kloop/reconcile/trigger"
)

// A record keeps the last few causes of a key and counts all of them: a
// burst of updates is one reconcile.
func ExampleRecord() {
	var r trigger.Record
	r.Add(trigger.Cause{Type: trigger.Create, Source: "ConfigMap"})
	for range 5 {
		r.Add(trigger.Cause{Type: trigger.Update, Source: "ConfigMap"})
	}
	fmt.Println("total:", r.Total(), "kept:", r.Len())
	for t, n := range r.Counts() {
		fmt.Println(t, n)
	}
	// Output:
	// total: 6 kept: 4
	// Create 1
	// Update 5
}
