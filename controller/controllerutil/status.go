package controllerutil

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"kloop.dev/kloop/client"
)

// StatusUpdater writes an object's status subresource:
// (*client.Client).Status() is one.
type StatusUpdater interface {
	Update(ctx context.Context, obj client.Object, opts ...client.WriteOption) error
}

// UpdateStatus runs mutate, which changes obj's status in place, and writes
// the status with w only if mutate changed it; it reports whether it wrote.
//
// This is the defence against the hot loop of the seeds ("your own status
// update is an event"): every status write that changes the object sends an
// update through the informer and enqueues the object again, so a reconcile
// that writes the status each time never stops if anything in it varies.
// With UpdateStatus the second reconcile finds nothing to change, writes
// nothing, and the loop ends. (A value that changes on every call, such as
// a timestamp set to now, still changes the status each time: set it only
// when something else changes, as meta.SetStatusCondition does with
// LastTransitionTime.)
//
// The status is the Status field of a typed object (a pointer to a struct
// with a field named Status, as every k8s.io/api kind and every kubebuilder
// CRD type has) or the "status" key of an *unstructured.Unstructured; an
// object with neither is an error. The status before and after mutate is
// compared in its JSON encoding, which is what the write would send: a
// change the server cannot see (a metav1.Time moved within the same
// second) is no change, and the snapshot taken before mutate shares nothing
// with obj, whatever its DeepCopyObject does. Make the status changes
// inside mutate: changes made before the call are part of the snapshot and
// count as no change. mutate must not change obj's namespace or name; its
// changes outside the status are not written (the status subresource
// ignores them). If mutate fails, UpdateStatus writes
// nothing and returns its error (obj keeps whatever mutate did). The write
// is an Update with obj's resourceVersion: a Conflict error means obj was
// stale; return it from Reconcile to retry with a fresh read.
func UpdateStatus(ctx context.Context, w StatusUpdater, obj client.Object, mutate func() error, opts ...client.WriteOption) (changed bool, err error) {
	if w == nil || isNil(w) {
		return false, errors.New("UpdateStatus: nil StatusUpdater")
	}
	if isNil(obj) {
		return false, errors.New("UpdateStatus: nil object")
	}
	if mutate == nil {
		return false, errors.New("UpdateStatus: nil mutate")
	}
	before, err := statusJSON(obj)
	if err != nil {
		return false, fmt.Errorf("UpdateStatus: %w", err)
	}
	namespace, name := obj.GetNamespace(), obj.GetName()
	if err := mutate(); err != nil {
		return false, err
	}
	if obj.GetNamespace() != namespace || obj.GetName() != name {
		return false, fmt.Errorf("UpdateStatus: mutate changed the object's key from %s to %s", describeKey(namespace, name), describe(obj))
	}
	after, err := statusJSON(obj)
	if err != nil {
		return false, fmt.Errorf("UpdateStatus: %w", err)
	}
	if bytes.Equal(before, after) {
		return false, nil
	}
	if err := w.Update(ctx, obj, opts...); err != nil {
		return false, err
	}
	return true, nil
}

// statusJSON returns the JSON encoding of obj's status: the value of its
// "status" key for an unstructured object, of its Status field for a typed
// one. encoding/json sorts map keys, so equal statuses encode equally.
func statusJSON(obj runtime.Object) ([]byte, error) {
	var st any
	if u, ok := obj.(runtime.Unstructured); ok {
		st = u.UnstructuredContent()["status"]
	} else {
		v := reflect.ValueOf(obj)
		if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
			return nil, fmt.Errorf("%T is not a pointer to a struct", obj)
		}
		f := v.Elem().FieldByName("Status")
		if !f.IsValid() {
			return nil, fmt.Errorf("%T has no Status field", obj)
		}
		st = f.Interface()
	}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encoding the status of %T: %w", obj, err)
	}
	return b, nil
}

// OperationResult is what CreateOrUpdate did.
type OperationResult string

const (
	// OperationResultNone means the object existed as wanted: no write.
	OperationResultNone OperationResult = "unchanged"
	// OperationResultCreated means the object was created.
	OperationResultCreated OperationResult = "created"
	// OperationResultUpdated means the object existed and was updated.
	OperationResultUpdated OperationResult = "updated"
)

// ObjectWriter reads, creates and updates objects: *client.Client is one.
type ObjectWriter interface {
	Get(ctx context.Context, key client.ObjectKey, obj client.Object) error
	Create(ctx context.Context, obj client.Object, opts ...client.WriteOption) error
	Update(ctx context.Context, obj client.Object, opts ...client.WriteOption) error
}

// CreateOrUpdate makes the object named by obj's namespace and name look as
// mutate wants, with controller-runtime's semantics: it reads the object
// into obj; if it is missing, it runs mutate and creates obj; if it exists,
// it runs mutate on what was read and updates it only if mutate changed it
// (equality.Semantic over the whole object, against a DeepCopyObject taken
// before mutate: that copy must be deep, as generated ones are), so that a
// reconcile that finds everything in place writes nothing.
//
// mutate must not change the namespace or name. Set in obj nothing but the
// namespace and name before the call: the read overwrites the rest. A
// mutate that clears a field the server defaults makes every call an
// update. Changes to the status are not written (use UpdateStatus). With
// reads from the cache, an object created a moment ago may not be seen yet:
// the create then fails with AlreadyExists (apierrors.IsAlreadyExists), which
// a reconcile can return to retry, or ignore (client.IgnoreAlreadyExists)
// when its watch of the object will trigger the next reconcile.
func CreateOrUpdate(ctx context.Context, c ObjectWriter, obj client.Object, mutate func() error) (OperationResult, error) {
	if c == nil || isNil(c) {
		return OperationResultNone, errors.New("CreateOrUpdate: nil ObjectWriter")
	}
	if isNil(obj) {
		return OperationResultNone, errors.New("CreateOrUpdate: nil object")
	}
	created, run, err := getOrCreate(ctx, "CreateOrUpdate", c, obj, mutate)
	if err != nil || created {
		return createdResult(created), err
	}
	existing := obj.DeepCopyObject()
	if err := run(); err != nil {
		return OperationResultNone, err
	}
	if equality.Semantic.DeepEqual(existing, obj) {
		return OperationResultNone, nil
	}
	if err := c.Update(ctx, obj); err != nil {
		return OperationResultNone, err
	}
	return OperationResultUpdated, nil
}

// getCreator reads and creates objects: what CreateOrUpdate and
// CreateOrPatch share of their writers.
type getCreator interface {
	Get(ctx context.Context, key client.ObjectKey, obj client.Object) error
	Create(ctx context.Context, obj client.Object, opts ...client.WriteOption) error
}

// getOrCreate reads the object named by obj's namespace and name into obj.
// When it is missing, it runs mutate and creates obj (created is true).
// Otherwise obj holds what was read, and the caller runs mutate with run,
// which refuses a mutate that changed the object's key. op names the caller
// in errors.
func getOrCreate(ctx context.Context, op string, c getCreator, obj client.Object, mutate func() error) (created bool, run func() error, err error) {
	key := client.KeyOf(obj)
	run = func() error {
		if mutate == nil {
			return nil
		}
		if err := mutate(); err != nil {
			return err
		}
		if client.KeyOf(obj) != key {
			return fmt.Errorf("%s: mutate changed the object's key from %s to %s", op, describeKey(key.Namespace, key.Name), describe(obj))
		}
		return nil
	}
	if err := c.Get(ctx, key, obj); err != nil {
		if !apierrors.IsNotFound(err) {
			return false, nil, err
		}
		if err := run(); err != nil {
			return false, nil, err
		}
		if err := c.Create(ctx, obj); err != nil {
			return false, nil, err
		}
		return true, nil, nil
	}
	return false, run, nil
}

// createdResult is OperationResultCreated when created, else
// OperationResultNone (the result of a getOrCreate that ended the call).
func createdResult(created bool) OperationResult {
	if created {
		return OperationResultCreated
	}
	return OperationResultNone
}

// Results of CreateOrPatch besides those of CreateOrUpdate, with
// controller-runtime's values.
const (
	// OperationResultUpdatedStatus means the object and its status were
	// patched.
	OperationResultUpdatedStatus OperationResult = "updatedStatus"
	// OperationResultUpdatedStatusOnly means only the status was patched.
	OperationResultUpdatedStatusOnly OperationResult = "updatedStatusOnly"
)

// ObjectPatcher reads, creates and patches objects: *client.Client is one.
type ObjectPatcher interface {
	Get(ctx context.Context, key client.ObjectKey, obj client.Object) error
	Create(ctx context.Context, obj client.Object, opts ...client.WriteOption) error
	Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.WriteOption) error
}

// StatusPatcher patches an object's status subresource:
// (*client.Client).Status() is one.
type StatusPatcher interface {
	Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.WriteOption) error
}

// CreateOrPatch is CreateOrUpdate with JSON merge patches instead of an
// update, as controller-runtime's CreateOrPatch: only what mutate changed is
// sent, with no resourceVersion, so a concurrent change of other fields is
// not a conflict; and a change of the status is written too, with status
// (nil when the kind has no status subresource: a status change is then an
// error). It reads the object into obj; if it is missing, it runs mutate and
// creates obj (the status a create sends is ignored by the server for kinds
// with a status subresource). If it exists, it runs mutate on what was read,
// patches the object if anything but the status changed and the status if
// it changed, and reports which: OperationResultNone,
// OperationResultUpdated, OperationResultUpdatedStatus (both) or
// OperationResultUpdatedStatusOnly. Changes are found with equality.Semantic
// against a DeepCopyObject taken before mutate. The notes of CreateOrUpdate
// on mutate and on reads from the cache apply.
func CreateOrPatch(ctx context.Context, c ObjectPatcher, status StatusPatcher, obj client.Object, mutate func() error) (OperationResult, error) {
	if c == nil || isNil(c) {
		return OperationResultNone, errors.New("CreateOrPatch: nil ObjectPatcher")
	}
	if isNil(obj) {
		return OperationResultNone, errors.New("CreateOrPatch: nil object")
	}
	created, run, err := getOrCreate(ctx, "CreateOrPatch", c, obj, mutate)
	if err != nil || created {
		return createdResult(created), err
	}
	before, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return OperationResultNone, fmt.Errorf("CreateOrPatch: %T.DeepCopyObject is not a client.Object", obj)
	}
	if err := run(); err != nil {
		return OperationResultNone, err
	}
	beforeMain, beforeStatus, err := splitStatus(before)
	if err != nil {
		return OperationResultNone, err
	}
	afterMain, afterStatus, err := splitStatus(obj)
	if err != nil {
		return OperationResultNone, err
	}
	mainChanged := !equality.Semantic.DeepEqual(beforeMain, afterMain)
	statusChanged := !equality.Semantic.DeepEqual(beforeStatus, afterStatus)
	if statusChanged && (status == nil || isNil(status)) {
		return OperationResultNone, fmt.Errorf("CreateOrPatch: mutate changed the status of %s, and no StatusPatcher was given", describe(obj))
	}
	// The status as mutate left it: a patch of the object fills obj with
	// the server's answer, whose status is the stored one.
	var wanted map[string]any
	if statusChanged {
		// A copy: an *unstructured.Unstructured hands out its own maps.
		if m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err == nil {
			if b, err := json.Marshal(m["status"]); err == nil {
				_ = json.Unmarshal(b, &wanted)
			}
		}
	}
	result := OperationResultNone
	if mainChanged {
		if err := c.Patch(ctx, obj, client.MergeFrom(before)); err != nil {
			return OperationResultNone, err
		}
		result = OperationResultUpdated
	}
	if statusChanged && mainChanged {
		// A kind without a status subresource took the status with the
		// object: nothing is left to patch.
		if _, st, err := splitStatus(obj); err == nil && equality.Semantic.DeepEqual(jsonNormal(st), anyMap(wanted)) {
			statusChanged = false
		}
	}
	if statusChanged {
		if mainChanged {
			// Patch the status the server now has to the one mutate wanted.
			base, ok := obj.DeepCopyObject().(client.Object)
			if !ok {
				return result, fmt.Errorf("CreateOrPatch: %T.DeepCopyObject is not a client.Object", obj)
			}
			if err := setStatus(obj, wanted); err != nil {
				return result, err
			}
			before = base
		}
		if err := status.Patch(ctx, obj, client.MergeFrom(before)); err != nil {
			return result, err
		}
		if mainChanged {
			result = OperationResultUpdatedStatus
		} else {
			result = OperationResultUpdatedStatusOnly
		}
	}
	return result, nil
}

// jsonNormal is v through a JSON round trip (numbers become float64), to
// compare with what such a round trip made; nil if v does not marshal.
func jsonNormal(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

// anyMap is m as the value of a map[string]any entry: nil when m is nil.
func anyMap(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}

// splitStatus returns obj as unstructured content without its status, and
// its status. obj is not modified.
func splitStatus(obj client.Object) (map[string]any, any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("CreateOrPatch: %s: %w", describe(obj), err)
	}
	m = maps.Clone(m) // an *unstructured.Unstructured hands out its own map
	st := m["status"]
	delete(m, "status")
	return m, st, nil
}

// setStatus sets obj's status to st (unstructured content), through a JSON
// round trip of the whole object.
func setStatus(obj client.Object, st map[string]any) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("CreateOrPatch: %s: %w", describe(obj), err)
	}
	if st == nil {
		delete(m, "status")
	} else {
		m["status"] = st
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, obj); err != nil {
		return fmt.Errorf("CreateOrPatch: %s: %w", describe(obj), err)
	}
	return nil
}
