package conversion

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Hub marks the version of a kind that every other version converts to and
// from (usually the storage version), as controller-runtime's
// conversion.Hub: add an empty Hub() method to its type.
type Hub interface {
	runtime.Object
	Hub()
}

// Convertible is a version of a kind that is not its Hub (a spoke): it
// converts itself to the hub and back, as controller-runtime's
// conversion.Convertible.
type Convertible interface {
	runtime.Object
	ConvertTo(dst Hub) error
	ConvertFrom(src Hub) error
}

// Converter converts an object of one version of a kind into another
// version of the same kind: dst is a new, empty object of the desired
// version's Go type (its apiVersion and kind already set).
type Converter interface {
	Convert(ctx context.Context, src, dst runtime.Object) error
}

// gvkOf returns the one GroupVersionKind of obj's type in scheme.
func gvkOf(scheme *runtime.Scheme, obj runtime.Object) (schema.GroupVersionKind, error) {
	gvks, _, err := scheme.ObjectKinds(obj)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	if len(gvks) != 1 {
		return schema.GroupVersionKind{}, fmt.Errorf("%T has %d kinds in the scheme, expected one", obj, len(gvks))
	}
	return gvks[0], nil
}

// versionsOf returns every GroupVersionKind of gk in scheme.
func versionsOf(scheme *runtime.Scheme, gk schema.GroupKind) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for gvk := range scheme.AllKnownTypes() {
		if gvk.GroupKind() == gk {
			out = append(out, gvk)
		}
	}
	return out
}

// HubAndSpoke returns the Converter of gk's versions in scheme: exactly one
// of their Go types is a Hub, every other one Convertible; a conversion
// between two spokes goes through a new hub object. A kind whose types do
// not make such a set is an error naming what is missing.
func HubAndSpoke(scheme *runtime.Scheme, gk schema.GroupKind) (Converter, error) {
	if scheme == nil {
		return nil, errors.New("conversion: HubAndSpoke needs a scheme")
	}
	gvks := versionsOf(scheme, gk)
	if len(gvks) < 2 {
		return nil, fmt.Errorf("conversion: %s has %d version(s) in the scheme: nothing to convert", gk, len(gvks))
	}
	var hubs, others []string
	var hub schema.GroupVersionKind
	for _, gvk := range gvks {
		obj, err := scheme.New(gvk)
		if err != nil {
			return nil, fmt.Errorf("conversion: %w", err)
		}
		switch obj.(type) {
		case Hub:
			hubs = append(hubs, gvk.Version)
			hub = gvk
		case Convertible:
		default:
			others = append(others, gvk.Version)
		}
	}
	switch {
	case len(hubs) == 0:
		return nil, fmt.Errorf("conversion: %s has no hub version (a Go type with a Hub() method)", gk)
	case len(hubs) > 1:
		return nil, fmt.Errorf("conversion: %s has %d hub versions %v, expected one", gk, len(hubs), hubs)
	case len(others) > 0:
		return nil, fmt.Errorf("conversion: %s versions %v are neither the hub nor Convertible", gk, others)
	}
	return &hubAndSpoke{scheme: scheme, hub: hub}, nil
}

type hubAndSpoke struct {
	scheme *runtime.Scheme
	hub    schema.GroupVersionKind
}

func (c *hubAndSpoke) Convert(_ context.Context, src, dst runtime.Object) error {
	return convertHubAndSpoke(src, dst, func() (Hub, error) {
		obj, err := c.scheme.New(c.hub)
		if err != nil {
			return nil, err
		}
		return obj.(Hub), nil
	})
}

// convertHubAndSpoke converts with the objects' Hub and Convertible
// methods; newHub makes the hub for a spoke-to-spoke conversion.
func convertHubAndSpoke(src, dst runtime.Object, newHub func() (Hub, error)) error {
	switch s := src.(type) {
	case Hub:
		d, ok := dst.(Convertible)
		if !ok {
			return fmt.Errorf("%T is not Convertible", dst)
		}
		return d.ConvertFrom(s)
	case Convertible:
		if h, ok := dst.(Hub); ok {
			return s.ConvertTo(h)
		}
		d, ok := dst.(Convertible)
		if !ok {
			return fmt.Errorf("%T is not Convertible", dst)
		}
		if newHub == nil {
			return fmt.Errorf("%T to %T: no hub to convert through", src, dst)
		}
		h, err := newHub()
		if err != nil {
			return err
		}
		if err := s.ConvertTo(h); err != nil {
			return fmt.Errorf("%T to the hub %T: %w", src, h, err)
		}
		if err := d.ConvertFrom(h); err != nil {
			return fmt.Errorf("the hub %T to %T: %w", h, dst, err)
		}
		return nil
	default:
		return fmt.Errorf("%T is neither a Hub nor Convertible", src)
	}
}

// Func is one conversion function from a version to another, made by
// NewFunc; Funcs makes a Converter of several.
type Func struct {
	src, dst reflect.Type
	fn       func(ctx context.Context, src, dst runtime.Object) error
}

// NewFunc returns the conversion function fn from Src to Dst (pointers to
// the Go types of two versions of one kind, such as *v1alpha1.Widget and
// *v1.Widget).
func NewFunc[Src, Dst runtime.Object](fn func(ctx context.Context, src Src, dst Dst) error) Func {
	return Func{
		src: reflect.TypeFor[Src](),
		dst: reflect.TypeFor[Dst](),
		fn: func(ctx context.Context, src, dst runtime.Object) error {
			if fn == nil {
				return errors.New("nil conversion function")
			}
			return fn(ctx, src.(Src), dst.(Dst))
		},
	}
}

// Funcs returns the Converter of plain conversion functions, one per pair
// of versions (a pair without a function is an error when it is asked
// for). Every type must be a version of one kind in scheme.
func Funcs(scheme *runtime.Scheme, fns ...Func) (Converter, error) {
	if scheme == nil {
		return nil, errors.New("conversion: Funcs needs a scheme")
	}
	c := &funcs{m: map[[2]schema.GroupVersionKind]Func{}}
	var gk schema.GroupKind
	for i, f := range fns {
		if f.fn == nil {
			return nil, fmt.Errorf("conversion: Funcs: function %d was not made by NewFunc", i)
		}
		var pair [2]schema.GroupVersionKind
		for j, t := range []reflect.Type{f.src, f.dst} {
			if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
				return nil, fmt.Errorf("conversion: Funcs: %v is not a pointer to a struct", t)
			}
			gvk, err := gvkOf(scheme, reflect.New(t.Elem()).Interface().(runtime.Object))
			if err != nil {
				return nil, fmt.Errorf("conversion: Funcs: %w", err)
			}
			pair[j] = gvk
		}
		if i == 0 {
			gk = pair[0].GroupKind()
		}
		for _, gvk := range pair {
			if gvk.GroupKind() != gk {
				return nil, fmt.Errorf("conversion: Funcs: %s and %s are not one kind", gk, gvk.GroupKind())
			}
		}
		if pair[0] == pair[1] {
			return nil, fmt.Errorf("conversion: Funcs: a function from %s to itself", pair[0])
		}
		if _, dup := c.m[pair]; dup {
			return nil, fmt.Errorf("conversion: Funcs: two functions from %s to %s", pair[0].Version, pair[1].Version)
		}
		c.m[pair] = f
	}
	return c, nil
}

type funcs struct {
	m map[[2]schema.GroupVersionKind]Func
}

func (c *funcs) Convert(ctx context.Context, src, dst runtime.Object) error {
	pair := [2]schema.GroupVersionKind{src.GetObjectKind().GroupVersionKind(), dst.GetObjectKind().GroupVersionKind()}
	f, ok := c.m[pair]
	if !ok {
		return fmt.Errorf("no conversion function from %s to %s", pair[0].Version, pair[1].Version)
	}
	return f.fn(ctx, src, dst)
}

// IsConvertible reports whether gk's versions in scheme convert hub and
// spoke (HubAndSpoke succeeds). A kind with one version, or none of whose Go types is a Hub or
// Convertible is not (false, nil); one that is half done (a hub without
// spokes, a spoke without hub, two hubs) is an error saying what is
// missing.
func IsConvertible(scheme *runtime.Scheme, gk schema.GroupKind) (bool, error) {
	if scheme == nil {
		return false, errors.New("conversion: IsConvertible needs a scheme")
	}
	gvks := versionsOf(scheme, gk)
	if len(gvks) < 2 {
		return false, nil // one version: nothing to convert
	}
	some := false
	for _, gvk := range gvks {
		obj, err := scheme.New(gvk)
		if err != nil {
			return false, fmt.Errorf("conversion: %w", err)
		}
		switch obj.(type) {
		case Hub, Convertible:
			some = true
		}
	}
	if !some {
		return false, nil
	}
	if _, err := HubAndSpoke(scheme, gk); err != nil {
		return false, err
	}
	return true, nil
}
