package predicate

import (
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"kloop.dev/kloop/handler"
)

// Predicate decides whether an event reaches a handler. It must be cheap and
// must not block.
type Predicate interface {
	Create(handler.CreateEvent) bool
	Update(handler.UpdateEvent) bool
	Delete(handler.DeleteEvent) bool
	Generic(handler.GenericEvent) bool
}

// Allow reports whether e passes every predicate in ps (nil ones pass).
// An event of an unknown type passes.
func Allow(e handler.Event, ps ...Predicate) bool {
	for _, p := range ps {
		if p != nil && !allow(p, e) {
			return false
		}
	}
	return true
}

func allow(p Predicate, e handler.Event) bool {
	switch e := e.(type) {
	case handler.CreateEvent:
		return p.Create(e)
	case handler.UpdateEvent:
		return p.Update(e)
	case handler.DeleteEvent:
		return p.Delete(e)
	case handler.GenericEvent:
		return p.Generic(e)
	}
	return true
}

// Funcs is a Predicate made of functions; a nil function lets the events of
// its kind pass.
type Funcs struct {
	CreateFunc  func(handler.CreateEvent) bool
	UpdateFunc  func(handler.UpdateEvent) bool
	DeleteFunc  func(handler.DeleteEvent) bool
	GenericFunc func(handler.GenericEvent) bool
}

// Create calls CreateFunc, or returns true.
func (f Funcs) Create(e handler.CreateEvent) bool { return f.CreateFunc == nil || f.CreateFunc(e) }

// Update calls UpdateFunc, or returns true.
func (f Funcs) Update(e handler.UpdateEvent) bool { return f.UpdateFunc == nil || f.UpdateFunc(e) }

// Delete calls DeleteFunc, or returns true.
func (f Funcs) Delete(e handler.DeleteEvent) bool { return f.DeleteFunc == nil || f.DeleteFunc(e) }

// Generic calls GenericFunc, or returns true.
func (f Funcs) Generic(e handler.GenericEvent) bool {
	return f.GenericFunc == nil || f.GenericFunc(e)
}

// NewFuncs returns a predicate that applies filter to the object of every
// event (the new object of updates), as controller-runtime's
// NewPredicateFuncs. Events with a nil object do not pass; a nil filter lets
// every event with an object pass.
func NewFuncs(filter func(handler.Object) bool) Funcs {
	test := func(o handler.Object) bool {
		return !handler.IsNil(o) && (filter == nil || filter(o))
	}
	return Funcs{
		CreateFunc:  func(e handler.CreateEvent) bool { return test(e.Object) },
		UpdateFunc:  func(e handler.UpdateEvent) bool { return test(e.ObjectNew) },
		DeleteFunc:  func(e handler.DeleteEvent) bool { return test(e.Object) },
		GenericFunc: func(e handler.GenericEvent) bool { return test(e.Object) },
	}
}

// updateOnly is embedded by the predicates that only filter updates.
type updateOnly struct{}

func (updateOnly) Create(handler.CreateEvent) bool   { return true }
func (updateOnly) Delete(handler.DeleteEvent) bool   { return true }
func (updateOnly) Generic(handler.GenericEvent) bool { return true }

// both reports whether the update carries both objects.
func both(e handler.UpdateEvent) bool {
	return !handler.IsNil(e.ObjectOld) && !handler.IsNil(e.ObjectNew)
}

// GenerationChanged passes updates whose metadata.generation changed, and
// every create, delete and generic event. The API server bumps the generation
// on spec changes only, so this drops status and metadata-only updates —
// including the controller's own status writes. Objects without a generation
// (many built-in kinds keep it at 0) never pass an update.
type GenerationChanged struct{ updateOnly }

// Update implements Predicate.
func (GenerationChanged) Update(e handler.UpdateEvent) bool {
	return both(e) && e.ObjectNew.GetGeneration() != e.ObjectOld.GetGeneration()
}

// ResourceVersionChanged passes updates whose metadata.resourceVersion
// changed (so not resyncs), and every create, delete and generic event.
type ResourceVersionChanged struct{ updateOnly }

// Update implements Predicate.
func (ResourceVersionChanged) Update(e handler.UpdateEvent) bool {
	return both(e) && e.ObjectNew.GetResourceVersion() != e.ObjectOld.GetResourceVersion()
}

// LabelChanged passes updates whose labels changed (a nil and an empty map
// are equal), and every create, delete and generic event.
type LabelChanged struct{ updateOnly }

// Update implements Predicate.
func (LabelChanged) Update(e handler.UpdateEvent) bool {
	return both(e) && !maps.Equal(e.ObjectNew.GetLabels(), e.ObjectOld.GetLabels())
}

// AnnotationChanged passes updates whose annotations changed (a nil and an
// empty map are equal), and every create, delete and generic event.
type AnnotationChanged struct{ updateOnly }

// Update implements Predicate.
func (AnnotationChanged) Update(e handler.UpdateEvent) bool {
	return both(e) && !maps.Equal(e.ObjectNew.GetAnnotations(), e.ObjectOld.GetAnnotations())
}

// LabelSelector returns a predicate that passes events whose object (the new
// object, for updates) has labels matching s. It returns an error when s is
// not a valid selector. The empty selector matches every object.
func LabelSelector(s metav1.LabelSelector) (Predicate, error) {
	sel, err := metav1.LabelSelectorAsSelector(&s)
	if err != nil {
		return nil, fmt.Errorf("predicate: invalid label selector: %w", err)
	}
	return selector{NewFuncs(func(o handler.Object) bool { return sel.Matches(labels.Set(o.GetLabels())) })}, nil
}

// selector is LabelSelector's predicate (a type of its own, so that
// IsBuiltin knows it).
type selector struct{ Funcs }

// IsBuiltin reports whether p is made only of this package's own predicates
// — GenerationChanged, ResourceVersionChanged, LabelChanged,
// AnnotationChanged, LabelSelector, and And, Or, Not of them (nil counts,
// as it passes everything): pure functions of the event that return at
// once. Funcs and predicates of other packages are user code, whatever they
// do. The builder delivers the events of a For or Owns whose predicates are
// all built-in on the informer's own goroutine (informer.SourceOptions.Inline).
func IsBuiltin(p Predicate) bool {
	switch v := p.(type) {
	case nil, GenerationChanged, *GenerationChanged, ResourceVersionChanged, *ResourceVersionChanged,
		LabelChanged, *LabelChanged, AnnotationChanged, *AnnotationChanged, selector:
		return true
	case and:
		return allBuiltin(v)
	case or:
		return allBuiltin(v)
	case not:
		return IsBuiltin(v.p)
	}
	return false
}

func allBuiltin(ps []Predicate) bool {
	for _, p := range ps {
		if !IsBuiltin(p) {
			return false
		}
	}
	return true
}

// And passes an event when every predicate passes it (true for none).
func And(ps ...Predicate) Predicate { return and(ps) }

type and []Predicate

func (a and) Create(e handler.CreateEvent) bool {
	for _, p := range a {
		if p != nil && !p.Create(e) {
			return false
		}
	}
	return true
}

func (a and) Update(e handler.UpdateEvent) bool {
	for _, p := range a {
		if p != nil && !p.Update(e) {
			return false
		}
	}
	return true
}

func (a and) Delete(e handler.DeleteEvent) bool {
	for _, p := range a {
		if p != nil && !p.Delete(e) {
			return false
		}
	}
	return true
}

func (a and) Generic(e handler.GenericEvent) bool {
	for _, p := range a {
		if p != nil && !p.Generic(e) {
			return false
		}
	}
	return true
}

// Or passes an event when any predicate passes it (false for none; a nil
// predicate passes everything).
func Or(ps ...Predicate) Predicate { return or(ps) }

type or []Predicate

func (o or) Create(e handler.CreateEvent) bool {
	for _, p := range o {
		if p == nil || p.Create(e) {
			return true
		}
	}
	return false
}

func (o or) Update(e handler.UpdateEvent) bool {
	for _, p := range o {
		if p == nil || p.Update(e) {
			return true
		}
	}
	return false
}

func (o or) Delete(e handler.DeleteEvent) bool {
	for _, p := range o {
		if p == nil || p.Delete(e) {
			return true
		}
	}
	return false
}

func (o or) Generic(e handler.GenericEvent) bool {
	for _, p := range o {
		if p == nil || p.Generic(e) {
			return true
		}
	}
	return false
}

// Not passes an event when p does not (a nil p passes everything, so Not(nil)
// passes nothing).
func Not(p Predicate) Predicate { return not{p} }

type not struct{ p Predicate }

func (n not) Create(e handler.CreateEvent) bool   { return n.p != nil && !n.p.Create(e) }
func (n not) Update(e handler.UpdateEvent) bool   { return n.p != nil && !n.p.Update(e) }
func (n not) Delete(e handler.DeleteEvent) bool   { return n.p != nil && !n.p.Delete(e) }
func (n not) Generic(e handler.GenericEvent) bool { return n.p != nil && !n.p.Generic(e) }
