package predicate_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/handler/predicate"
)

// The controller's own status write changes the resourceVersion but not the
// generation: GenerationChanged drops it, so it does not wake the controller
// again. A spec change passes.
func Example() {
	v1 := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 1, ResourceVersion: "100"}}
	statusWrite := v1.DeepCopy()
	statusWrite.ResourceVersion = "101"
	specWrite := statusWrite.DeepCopy()
	specWrite.Generation, specWrite.ResourceVersion = 2, "102"

	filter := predicate.And(predicate.GenerationChanged{}, predicate.Not(predicate.NewFuncs(func(o handler.Object) bool {
		return o.GetLabels()["skip"] == "true"
	})))
	fmt.Println("status write:", predicate.Allow(handler.UpdateEvent{ObjectOld: v1, ObjectNew: statusWrite}, filter))
	fmt.Println("spec write:", predicate.Allow(handler.UpdateEvent{ObjectOld: statusWrite, ObjectNew: specWrite}, filter))
	fmt.Println("create:", predicate.Allow(handler.CreateEvent{Object: v1}, filter))
	// Output:
	// status write: false
	// spec write: true
	// create: true
}
