package handler

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is a Kubernetes object: metadata and a kind. Every type of k8s.io/api,
// unstructured.Unstructured and generated CRD types implement it (as pointers).
type Object interface {
	metav1.Object
	runtime.Object
}

// Event is one of CreateEvent, UpdateEvent, DeleteEvent and GenericEvent.
type Event interface {
	isEvent()
}

// CreateEvent reports an object that appeared: created in the API, or seen in
// the initial list of an informer.
type CreateEvent struct {
	Object Object
	// IsInInitialList is true when the object comes from the initial list
	// (or a relist) rather than from a live change. The controller queues
	// such keys at low priority.
	IsInInitialList bool
}

// UpdateEvent reports a changed object. ObjectOld and ObjectNew have the same
// namespace and name. A resync delivers an update whose two objects have the
// same resourceVersion.
type UpdateEvent struct {
	ObjectOld, ObjectNew Object
}

// DeleteEvent reports an object that was deleted.
type DeleteEvent struct {
	// Object is the deleted object, or the last state the informer knew of
	// it when FinalStateUnknown is set.
	Object Object
	// FinalStateUnknown is true when the informer missed the deletion
	// (the watch was down) and inferred it from a relist that no longer
	// contained the object.
	FinalStateUnknown bool
}

// GenericEvent reports an object for a reason outside the API: an external
// system, a timer, a channel.
type GenericEvent struct {
	Object Object
}

func (CreateEvent) isEvent()  {}
func (UpdateEvent) isEvent()  {}
func (DeleteEvent) isEvent()  {}
func (GenericEvent) isEvent() {}

// IsNil reports whether o is nil or a typed nil pointer (or other nil-able
// kind) in the interface. Handlers and predicates skip such objects.
func IsNil(o Object) bool {
	if o == nil {
		return true
	}
	v := reflect.ValueOf(o)
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return v.IsNil()
	}
	return false
}
