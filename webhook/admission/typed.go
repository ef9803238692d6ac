package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"
)

// Defaulter sets the defaults of objects of type T (a pointer to a Go type
// of the kind, such as *v1.Widget, or *unstructured.Unstructured) on
// create and update. Default changes obj in place; an error refuses the
// request (a Kubernetes API error keeps its Status, anything else is a 403
// with its message).
type Defaulter[T runtime.Object] interface {
	Default(ctx context.Context, obj T) error
}

// DefaulterFunc adapts a function to a Defaulter.
type DefaulterFunc[T runtime.Object] func(ctx context.Context, obj T) error

// Default calls f.
func (f DefaulterFunc[T]) Default(ctx context.Context, obj T) error { return f(ctx, obj) }

// Validator validates objects of type T on create, update (with the old
// object) and delete (the object being deleted). An error refuses the
// request (a Kubernetes API error keeps its Status, anything else is a 403
// with its message); warnings go back to the client with the verdict,
// whatever it is.
type Validator[T runtime.Object] interface {
	ValidateCreate(ctx context.Context, obj T) (Warnings, error)
	ValidateUpdate(ctx context.Context, oldObj, newObj T) (Warnings, error)
	ValidateDelete(ctx context.Context, obj T) (Warnings, error)
}

// WithDefaulter returns the mutating Handler of d: it decodes the request's
// object into a new T, calls Default, and answers with the JSON patch from
// the object as the API server sent it to the defaulted one, as
// controller-runtime's defaulting webhook does. The patch holds only what
// Default changed: the differences that decoding and encoding T alone make
// (fields T does not know, which would be removed; zero values T writes,
// which would be added) are left out. Deletes and connects are admitted
// untouched.
func WithDefaulter[T runtime.Object](d Defaulter[T]) (Handler, error) {
	newT, err := constructor[T]()
	if err != nil {
		return nil, err
	}
	if isNil(d) {
		return nil, errors.New("admission: WithDefaulter needs a Defaulter")
	}
	return &defaulting[T]{d: d, newT: newT}, nil
}

// WithValidator returns the validating Handler of v: it decodes the
// request's objects into new Ts and calls the method of the operation
// (connects are admitted without a call).
func WithValidator[T runtime.Object](v Validator[T]) (Handler, error) {
	newT, err := constructor[T]()
	if err != nil {
		return nil, err
	}
	if isNil(v) {
		return nil, errors.New("admission: WithValidator needs a Validator")
	}
	return &validating[T]{v: v, newT: newT}, nil
}

func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Interface, reflect.Slice:
		return rv.IsNil()
	}
	return false
}

// constructor returns a function making a new, empty T; T must be a
// pointer to a struct.
func constructor[T runtime.Object]() (func() T, error) {
	typ := reflect.TypeFor[T]()
	if typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("admission: the object type %v must be a pointer to a struct", typ)
	}
	elem := typ.Elem()
	return func() T { return reflect.New(elem).Interface().(T) }, nil
}

// decode decodes an object of the request into a new T, as kube-apiserver
// encodes it (JSON, case-sensitive field names).
func decode[T runtime.Object](newT func() T, raw runtime.RawExtension, what string) (T, error) {
	obj := newT()
	if len(raw.Raw) == 0 {
		return obj, fmt.Errorf("the request has no %s", what)
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw.Raw, obj); err != nil {
		return obj, fmt.Errorf("decoding the %s as %T: %w", what, obj, err)
	}
	return obj, nil
}

type defaulting[T runtime.Object] struct {
	d    Defaulter[T]
	newT func() T
}

func (h *defaulting[T]) Handle(ctx context.Context, req Request) Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return Allowed("")
	}
	obj, err := decode(h.newT, req.Object, "object")
	if err != nil {
		return Errored(http.StatusBadRequest, err)
	}
	original := obj.DeepCopyObject()
	if err := h.d.Default(NewContextWithRequest(ctx, req), obj); err != nil {
		return Refused(err)
	}
	if reflect.DeepEqual(original, obj) {
		return Allowed("")
	}
	defaulted, err := json.Marshal(obj)
	if err != nil {
		return Errored(http.StatusInternalServerError, fmt.Errorf("encoding the defaulted object: %w", err))
	}
	patch, err := CreatePatch(req.Object.Raw, defaulted)
	if err != nil {
		return Errored(http.StatusInternalServerError, err)
	}
	// What the round trip through T alone changes is not the defaulter's.
	roundTrip, err := json.Marshal(original)
	if err != nil {
		return Errored(http.StatusInternalServerError, fmt.Errorf("encoding the object: %w", err))
	}
	noise, err := CreatePatch(req.Object.Raw, roundTrip)
	if err != nil {
		return Errored(http.StatusInternalServerError, err)
	}
	if len(noise) > 0 {
		seen := make(map[string]bool, len(noise))
		for _, o := range noise {
			seen[o.String()] = true
		}
		kept := patch[:0]
		for _, o := range patch {
			if !seen[o.String()] {
				kept = append(kept, o)
			}
		}
		patch = kept
	}
	return Patched("", patch...)
}

type validating[T runtime.Object] struct {
	v    Validator[T]
	newT func() T
}

func (h *validating[T]) Handle(ctx context.Context, req Request) Response {
	ctx = NewContextWithRequest(ctx, req)
	var warnings Warnings
	var err error
	switch req.Operation {
	case admissionv1.Connect:
		return Allowed("")
	case admissionv1.Create:
		obj, derr := decode(h.newT, req.Object, "object")
		if derr != nil {
			return Errored(http.StatusBadRequest, derr)
		}
		warnings, err = h.v.ValidateCreate(ctx, obj)
	case admissionv1.Update:
		obj, derr := decode(h.newT, req.Object, "object")
		if derr != nil {
			return Errored(http.StatusBadRequest, derr)
		}
		old, derr := decode(h.newT, req.OldObject, "oldObject")
		if derr != nil {
			return Errored(http.StatusBadRequest, derr)
		}
		warnings, err = h.v.ValidateUpdate(ctx, old, obj)
	case admissionv1.Delete:
		// The object being deleted is the old object (kubernetes#76346).
		old, derr := decode(h.newT, req.OldObject, "oldObject")
		if derr != nil {
			return Errored(http.StatusBadRequest, derr)
		}
		warnings, err = h.v.ValidateDelete(ctx, old)
	default:
		return Errored(http.StatusBadRequest, fmt.Errorf("unknown operation %q", req.Operation))
	}
	if err != nil {
		return Refused(err).WithWarnings(warnings...)
	}
	return Allowed("").WithWarnings(warnings...)
}
