package controllerutil

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// ErrBeingDeleted is wrapped by AddFinalizer's error for an object that has
// a deletionTimestamp: the API server refuses new finalizers on it (they
// could hold it forever), so the write would fail anyway.
var ErrBeingDeleted = errors.New("the object is being deleted: no finalizer can be added")

// ErrInvalidFinalizerName is wrapped by ValidateFinalizerName's errors.
var ErrInvalidFinalizerName = errors.New("invalid finalizer name")

// standardFinalizers are the finalizer names Kubernetes itself uses without
// a domain: the namespace controller's and the garbage collector's.
var standardFinalizers = []string{
	string(corev1.FinalizerKubernetes),
	metav1.FinalizerOrphanDependents,
	metav1.FinalizerDeleteDependents,
}

// ValidateFinalizerName checks name as kube-apiserver does: it must be a
// qualified name (an optional DNS-subdomain prefix and '/', then at most 63
// characters of letters, digits, '-', '_' and '.', starting and ending with
// a letter or digit; the API server rejects others), and it must have the
// domain prefix, as in "example.com/cleanup", unless it is one of
// Kubernetes' own ("kubernetes", "orphan", "foregroundDeletion").
// kube-apiserver (since 1.29) answers an unqualified name on a custom
// resource with the warning "prefer a domain-qualified finalizer name
// including a path (/)"; kloop refuses it, since two controllers using the
// same bare name would each remove the other's finalizer.
func ValidateFinalizerName(name string) error {
	if msgs := validation.IsQualifiedName(name); len(msgs) > 0 {
		return fmt.Errorf("%w %q: %s", ErrInvalidFinalizerName, name, strings.Join(msgs, "; "))
	}
	if !strings.Contains(name, "/") && !slices.Contains(standardFinalizers, name) {
		return fmt.Errorf("%w %q: want a domain-qualified name such as example.com/%s, to avoid conflicts with other finalizer writers", ErrInvalidFinalizerName, name, name)
	}
	return nil
}

// AddFinalizer adds the finalizer name to obj unless it is there already,
// and reports whether obj changed (write it with Update only then).
//
// Unlike controller-runtime's, it returns an error, and leaves obj as it
// was: for an invalid name (see ValidateFinalizerName), for a nil obj, and,
// wrapping ErrBeingDeleted, for an object with a deletionTimestamp that
// does not hold the finalizer yet (the API server forbids new finalizers on
// an object being deleted). Adding a finalizer the deleted object already
// holds is not an error (changed is false). All of these would fail at the
// API server too, after a wasted round trip and with a less clear error.
func AddFinalizer(obj metav1.Object, name string) (changed bool, err error) {
	if isNil(obj) {
		return false, errors.New("AddFinalizer: nil object")
	}
	if err := ValidateFinalizerName(name); err != nil {
		return false, err
	}
	fs := obj.GetFinalizers()
	if slices.Contains(fs, name) {
		return false, nil
	}
	if obj.GetDeletionTimestamp() != nil {
		return false, fmt.Errorf("adding finalizer %q to %s: %w", name, describe(obj), ErrBeingDeleted)
	}
	// A new slice: obj's may share its array with another copy.
	obj.SetFinalizers(append(slices.Clip(fs), name))
	return true, nil
}

// RemoveFinalizer removes every occurrence of the finalizer name from obj
// and reports whether obj changed (write it with Update only then). It is
// always allowed, also on an object being deleted: that is how the object
// goes. A nil obj is unchanged.
func RemoveFinalizer(obj metav1.Object, name string) (changed bool) {
	if isNil(obj) {
		return false
	}
	fs := obj.GetFinalizers()
	if !slices.Contains(fs, name) {
		return false
	}
	kept := make([]string, 0, len(fs)-1)
	for _, f := range fs {
		if f != name {
			kept = append(kept, f)
		}
	}
	obj.SetFinalizers(kept)
	return true
}

// ContainsFinalizer reports whether obj holds the finalizer name. A nil obj
// holds none.
func ContainsFinalizer(obj metav1.Object, name string) bool {
	return !isNil(obj) && slices.Contains(obj.GetFinalizers(), name)
}

// AlreadyOwnedError is SetControllerReference's error when the object
// already has another controller. Detect it with errors.As.
type AlreadyOwnedError struct {
	// Namespace and Name name the object.
	Namespace, Name string
	// Owner is its existing controller reference.
	Owner metav1.OwnerReference
}

func (e *AlreadyOwnedError) Error() string {
	return fmt.Sprintf("%s is already controlled by %s %s", describeKey(e.Namespace, e.Name), e.Owner.Kind, e.Owner.Name)
}

// OwnerReferenceOption changes the OwnerReference that SetOwnerReference or
// SetControllerReference writes.
type OwnerReferenceOption func(*metav1.OwnerReference)

// WithBlockOwnerDeletion sets BlockOwnerDeletion: with true, a foreground
// deletion of the owner waits for this object to be deleted first.
// SetControllerReference sets it to true by default, SetOwnerReference
// leaves it unset.
func WithBlockOwnerDeletion(block bool) OwnerReferenceOption {
	return func(r *metav1.OwnerReference) { r.BlockOwnerDeletion = &block }
}

// SetControllerReference makes owner the controller of controlled: an owner
// reference with Controller and BlockOwnerDeletion true (as
// controller-runtime's), which the garbage collector follows to delete
// controlled with its owner, and handler.EnqueueRequestForOwner (builder's
// Owns) follows to reconcile the owner when controlled changes.
//
// The owner's kind comes from scheme for typed objects (nil means client-go's
// scheme of the k8s.io/api kinds), from its apiVersion and kind for
// *unstructured.Unstructured and *metav1.PartialObjectMetadata. The owner
// must have a name and a UID (it must have been read from, or created on,
// the API server). Owner references do not cross namespaces: a namespaced
// owner must be in controlled's namespace, and cannot own a cluster-scoped
// object; a cluster-scoped owner can own anything. An existing reference to
// the same owner (same group, kind and name) is replaced in place; a
// reference to another controller is an *AlreadyOwnedError, since an object
// has at most one. controlled is unchanged on error.
func SetControllerReference(owner, controlled metav1.Object, scheme *runtime.Scheme, opts ...OwnerReferenceOption) error {
	ref, err := ownerRef(owner, controlled, scheme)
	if err != nil {
		return fmt.Errorf("SetControllerReference: %w", err)
	}
	ref.Controller = new(true)
	ref.BlockOwnerDeletion = new(true)
	for _, o := range opts {
		o(&ref)
	}
	if existing := metav1.GetControllerOfNoCopy(controlled); existing != nil && !sameOwner(*existing, ref) {
		return &AlreadyOwnedError{Namespace: controlled.GetNamespace(), Name: controlled.GetName(), Owner: *existing}
	}
	upsertOwnerRef(controlled, ref)
	return nil
}

// SetOwnerReference adds a plain (not controller) owner reference to owner
// on object, or replaces an existing reference to the same owner (same
// group, kind and name; a controller reference then stops being one). Its
// rules are SetControllerReference's, without the single-controller one.
func SetOwnerReference(owner, object metav1.Object, scheme *runtime.Scheme, opts ...OwnerReferenceOption) error {
	ref, err := ownerRef(owner, object, scheme)
	if err != nil {
		return fmt.Errorf("SetOwnerReference: %w", err)
	}
	for _, o := range opts {
		o(&ref)
	}
	upsertOwnerRef(object, ref)
	return nil
}

// RemoveOwnerReference removes object's references to owner (same group,
// kind and name) and reports whether there was one.
func RemoveOwnerReference(owner, object metav1.Object, scheme *runtime.Scheme) (changed bool, err error) {
	if isNil(owner) || isNil(object) {
		return false, errors.New("RemoveOwnerReference: nil object")
	}
	gvk, err := kindOf(owner, scheme)
	if err != nil {
		return false, fmt.Errorf("RemoveOwnerReference: %w", err)
	}
	ref := metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: owner.GetName()}
	refs := object.GetOwnerReferences()
	kept := make([]metav1.OwnerReference, 0, len(refs))
	for _, r := range refs {
		if !sameOwner(r, ref) {
			kept = append(kept, r)
		}
	}
	if len(kept) == len(refs) {
		return false, nil
	}
	object.SetOwnerReferences(kept)
	return true, nil
}

// HasControllerReference reports whether obj has a controller owner
// reference. A nil obj has none.
func HasControllerReference(obj metav1.Object) bool {
	return !isNil(obj) && metav1.GetControllerOfNoCopy(obj) != nil
}

// ownerRef validates owner against object and returns the plain reference.
func ownerRef(owner, object metav1.Object, scheme *runtime.Scheme) (metav1.OwnerReference, error) {
	if isNil(owner) {
		return metav1.OwnerReference{}, errors.New("nil owner")
	}
	if isNil(object) {
		return metav1.OwnerReference{}, errors.New("nil object")
	}
	if owner.GetName() == "" || owner.GetUID() == "" {
		return metav1.OwnerReference{}, fmt.Errorf("owner %s has no name or UID: read it from the API server first", describe(owner))
	}
	if ns := owner.GetNamespace(); ns != "" {
		switch object.GetNamespace() {
		case "":
			return metav1.OwnerReference{}, fmt.Errorf("cluster-scoped %s cannot have a namespaced owner (%s)", describe(object), describe(owner))
		case ns:
		default:
			return metav1.OwnerReference{}, fmt.Errorf("owner references do not cross namespaces: owner %s, object %s", describe(owner), describe(object))
		}
	}
	gvk, err := kindOf(owner, scheme)
	if err != nil {
		return metav1.OwnerReference{}, err
	}
	return metav1.OwnerReference{
		APIVersion: gvk.GroupVersion().String(),
		Kind:       gvk.Kind,
		Name:       owner.GetName(),
		UID:        owner.GetUID(),
	}, nil
}

// kindOf returns obj's kind: its own apiVersion and kind for unstructured
// and metadata-only objects, the scheme's for typed ones (client-go's scheme
// when scheme is nil).
func kindOf(obj metav1.Object, scheme *runtime.Scheme) (schema.GroupVersionKind, error) {
	ro, ok := obj.(runtime.Object)
	if !ok {
		return schema.GroupVersionKind{}, fmt.Errorf("%T is not a runtime.Object", obj)
	}
	own := ro.GetObjectKind().GroupVersionKind()
	switch ro.(type) {
	case runtime.Unstructured, *metav1.PartialObjectMetadata:
		if own.Kind == "" || own.Version == "" {
			return own, fmt.Errorf("%T %s has no apiVersion and kind", obj, describe(obj))
		}
		return own, nil
	}
	if scheme == nil {
		scheme = clientgoscheme.Scheme
	}
	gvks, unversioned, err := scheme.ObjectKinds(ro)
	switch {
	case err != nil:
		return schema.GroupVersionKind{}, fmt.Errorf("the kind of %T: %w", obj, err)
	case unversioned:
		return schema.GroupVersionKind{}, fmt.Errorf("%T is an unversioned type", obj)
	case len(gvks) == 1:
		return gvks[0], nil
	}
	if slices.Contains(gvks, own) {
		return own, nil
	}
	return schema.GroupVersionKind{}, fmt.Errorf("%T is registered as %d kinds %v: set its apiVersion and kind to choose one", obj, len(gvks), gvks)
}

// sameOwner reports whether a and b refer to the same object: group, kind
// and name (the version may differ), as controller-runtime.
func sameOwner(a, b metav1.OwnerReference) bool {
	ag, err := schema.ParseGroupVersion(a.APIVersion)
	if err != nil {
		return false
	}
	bg, err := schema.ParseGroupVersion(b.APIVersion)
	if err != nil {
		return false
	}
	return ag.Group == bg.Group && a.Kind == b.Kind && a.Name == b.Name
}

// upsertOwnerRef replaces object's reference to ref's owner with ref, or
// appends ref. It writes a new slice: object's may share its array.
func upsertOwnerRef(object metav1.Object, ref metav1.OwnerReference) {
	refs := slices.Clone(object.GetOwnerReferences())
	if i := slices.IndexFunc(refs, func(r metav1.OwnerReference) bool { return sameOwner(r, ref) }); i >= 0 {
		refs[i] = ref
	} else {
		refs = append(refs, ref)
	}
	object.SetOwnerReferences(refs)
}

// isNil reports whether obj is nil or a nil pointer (whose methods would
// panic).
func isNil(obj any) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

func describe(obj metav1.Object) string { return describeKey(obj.GetNamespace(), obj.GetName()) }

func describeKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
