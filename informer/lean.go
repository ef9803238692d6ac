package informer

import (
	"errors"
	"log/slog"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// internUnique returns the canonical copy of s in Go's unique package (for
// InternMetadata, which has no informer to keep a table). Its canonical
// copies only last while a unique.Handle references them, so strings are
// shared among the objects interned between two garbage collections.
func internUnique(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// StripManagedFields drops metadata.managedFields: the default transform of
// every informer (opt out with Options.KeepManagedFields).
func StripManagedFields[T Object](obj T) (T, error) {
	obj.SetManagedFields(nil)
	return obj, nil
}

// InternMetadata replaces the strings of obj's metadata that repeat across
// objects by canonical copies: namespace, generateName, label keys and
// values, annotation keys (and values up to 64 bytes), finalizers, and the
// apiVersion, kind, name and uid of owner references. The default transform
// does this and more with tables of its own; InternMetadata is for a
// Transform of your own with Options.DisableInterning. Its canonical copies
// live in Go's unique package, which keeps a copy only while a Handle to it
// exists: objects interned between two garbage collections share strings,
// objects interned after one may get new copies.
func InternMetadata[T Object](obj T) (T, error) {
	internMeta(obj, internUnique)
	return obj, nil
}

func internMeta(obj metav1.Object, intern func(string) string) {
	if ns := obj.GetNamespace(); ns != "" {
		obj.SetNamespace(intern(ns))
	}
	if g := obj.GetGenerateName(); g != "" {
		obj.SetGenerateName(intern(g))
	}
	// Typed objects return their own maps (interned in place, no
	// allocation); unstructured ones return copies, written back.
	if m := obj.GetLabels(); len(m) > 0 {
		internStringMapFunc(m, intern)
		obj.SetLabels(m)
	}
	if m := obj.GetAnnotations(); len(m) > 0 {
		internStringMapFunc(m, intern)
		obj.SetAnnotations(m)
	}
	if fs := obj.GetFinalizers(); len(fs) > 0 {
		for i, f := range fs {
			fs[i] = intern(f)
		}
		obj.SetFinalizers(fs)
	}
	if refs := obj.GetOwnerReferences(); len(refs) > 0 {
		for i := range refs {
			refs[i].APIVersion = intern(refs[i].APIVersion)
			refs[i].Kind = intern(refs[i].Kind)
			refs[i].Name = intern(refs[i].Name)
			refs[i].UID = types.UID(intern(string(refs[i].UID))) // shared by an owner's dependents
		}
		obj.SetOwnerReferences(refs)
	}
}

// lean is the transform the FIFO applies: managedFields stripped (unless
// keep), strings interned (unless noIntern), then the user's transform.
type lean struct {
	keep, noIntern bool
	// internUpdates walks updated objects whole; otherwise an object the
	// cache already holds has only its metadata interned (see
	// Options.InternUpdates).
	internUpdates bool
	user          func(Object) (Object, error)
	logger        *slog.Logger
	in            interner
	// cached returns the version of an object the informer's cache holds
	// (set once by the informer before it starts, nil before): interning
	// takes the strings that did not change from it.
	cached func(namespace, name string) (Object, bool)
}

// newLean returns the informer's transform, nil if it has nothing to do.
//
// A failing user transform must not stall the informer (the FIFO refuses a
// whole relist when one object fails), so its error is logged and the object
// is cached as it was before the user transform.
func newLean(keep, noIntern, internUpdates bool, user func(Object) (Object, error), logger *slog.Logger) *lean {
	if keep && noIntern && user == nil {
		return nil
	}
	return &lean{keep: keep, noIntern: noIntern, internUpdates: internUpdates, user: user, logger: logger}
}

func (l *lean) transform(obj Object) (Object, error) {
	if !l.keep {
		obj.SetManagedFields(nil)
	}
	if !l.noIntern {
		var prev Object
		if l.cached != nil {
			if p, ok := l.cached(obj.GetNamespace(), obj.GetName()); ok {
				prev = p
			}
		}
		// A relist brings back unchanged objects (same resourceVersion):
		// walked whole against the cached version they take all of its
		// canonical strings, so a relist costs no memory.
		if prev != nil && !l.internUpdates && prev.GetResourceVersion() != obj.GetResourceVersion() {
			l.in.internMetadata(obj, prev)
		} else {
			l.in.internObject(obj, prev)
		}
	}
	if l.user != nil {
		out, err := l.user(obj)
		if err == nil && !isNil(out) {
			return out, nil
		}
		if err == nil {
			err = errors.New("returned nil")
		}
		l.logger.Error("informer: transform failed; caching the object untransformed", "namespace", obj.GetNamespace(), "name", obj.GetName(), "err", err)
	}
	return obj, nil
}

// internStringMapFunc interns the keys and short values of m in place.
func internStringMapFunc(m map[string]string, intern func(string) string) {
	for k, v := range m {
		if len(v) <= maxInterned {
			v = intern(v)
		}
		m[intern(k)] = v
	}
}
