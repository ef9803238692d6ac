package cache

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
)

// MutationError reports an object that was modified after it was stored in
// an Indexer created with Options.DetectMutations. Find it with errors.As.
type MutationError struct {
	// Key is the object's cache key.
	Key string
	// Path is the first field found to differ from the stored copy, as a Go
	// selector path such as ".ObjectMeta.Labels[app]" ("" for the whole
	// object).
	Path string
}

func (e *MutationError) Error() string {
	return fmt.Sprintf("cache: object %s was mutated after it was stored (first difference at %q): objects read from the cache are shared; DeepCopy before changing them", e.Key, e.Path)
}

// snapshot is the deep copy of one stored object.
type snapshot[T Object] struct {
	obj  T              // the object as stored (the one that must not change)
	copy runtime.Object // its deep copy at store time
}

// detector keeps a deep copy of every stored object. Its fields are guarded
// by Indexer.mu.
type detector[T Object] struct {
	snaps      map[*entry[T]]snapshot[T]
	found      []error // mutations found on replace/delete, not yet returned by Check
	onMutation func(error)
}

// snapshot records a deep copy of e's current object.
func (d *detector[T]) snapshot(e *entry[T]) {
	d.snaps[e] = snapshot[T]{obj: e.obj, copy: e.obj.DeepCopyObject()}
}

// retire checks e's object before it leaves the Indexer (replaced or
// deleted) and appends a mutation, if any, to reports.
func (d *detector[T]) retire(e *entry[T], reports []error) []error {
	s, ok := d.snaps[e]
	if !ok {
		return reports
	}
	delete(d.snaps, e)
	if err := compare(e.key, s); err != nil {
		d.found = append(d.found, err)
		reports = append(reports, err)
	}
	return reports
}

// report calls OnMutation for each error, outside the Indexer's lock. It is
// a no-op on a nil detector.
func (d *detector[T]) report(errs []error) {
	if d == nil || d.onMutation == nil {
		return
	}
	for _, err := range errs {
		d.onMutation(err)
	}
}

// Check compares every stored object with the deep copy taken when it was
// stored, and returns every mutation found since the last Check (including
// those of objects replaced or deleted since), joined, each a *MutationError.
// An object found mutated is copied again, so a mutation is reported once.
// It returns an error wrapping ErrMutationDetectionOff without
// Options.DetectMutations. Check takes the write lock and deep-compares every
// object: it is a test tool.
func (ix *Indexer[T]) Check() error {
	if ix.det == nil {
		return fmt.Errorf("cache: check: %w", ErrMutationDetectionOff)
	}
	var fresh []error
	ix.mu.Lock()
	for e, s := range ix.det.snaps {
		if err := compare(e.key, s); err != nil {
			fresh = append(fresh, err)
			ix.det.snapshot(e)
		}
	}
	all := append(ix.det.found, fresh...)
	ix.det.found = nil
	ix.mu.Unlock()
	ix.det.report(fresh)
	return errors.Join(all...)
}

func compare[T Object](key string, s snapshot[T]) error {
	if equality.Semantic.DeepEqual(any(s.obj), any(s.copy)) {
		return nil
	}
	return &MutationError{Key: key, Path: firstDiff(reflect.ValueOf(any(s.obj)), reflect.ValueOf(any(s.copy)), "")}
}

// firstDiff walks two values of the same type that are semantically unequal
// and returns the path of the first semantically unequal field it finds.
func firstDiff(a, b reflect.Value, path string) string {
	if !a.IsValid() || !b.IsValid() || a.Type() != b.Type() {
		return path
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return path
		}
		return firstDiff(a.Elem(), b.Elem(), path)
	case reflect.Struct:
		for i := range a.NumField() {
			fa, fb := a.Field(i), b.Field(i)
			if !fa.CanInterface() {
				return path // unexported state (e.g. resource.Quantity): stop here
			}
			if !equality.Semantic.DeepEqual(fa.Interface(), fb.Interface()) {
				return firstDiff(fa, fb, path+"."+a.Type().Field(i).Name)
			}
		}
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s (length %d, stored %d)", path, a.Len(), b.Len())
		}
		for i := range a.Len() {
			if !equality.Semantic.DeepEqual(a.Index(i).Interface(), b.Index(i).Interface()) {
				return firstDiff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i))
			}
		}
	case reflect.Map:
		for _, k := range a.MapKeys() {
			va, vb := a.MapIndex(k), b.MapIndex(k)
			p := fmt.Sprintf("%s[%v]", path, k.Interface())
			if !vb.IsValid() {
				return p + " (added)"
			}
			if !equality.Semantic.DeepEqual(va.Interface(), vb.Interface()) {
				return firstDiff(va, vb, p)
			}
		}
		for _, k := range b.MapKeys() {
			if !a.MapIndex(k).IsValid() {
				return fmt.Sprintf("%s[%v] (removed)", path, k.Interface())
			}
		}
	}
	return strings.TrimSpace(path)
}
