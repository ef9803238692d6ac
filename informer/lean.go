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

// lean makes cached objects lean: the FIFO's transform strips managedFields
// (unless keep) and runs the user's transform, on the watch's goroutine;
// intern interns the strings of each object the informer is about to cache
// (unless noIntern), on the informer's own goroutine, which writes the cache
// and so reads the cached version of the object without contending with
// anyone for the cache's lock.
type lean struct {
	keep, noIntern bool
	// internUpdates walks updated objects whole; otherwise an object the
	// cache already holds has only its metadata interned (see
	// Options.InternUpdates).
	internUpdates bool
	user          func(Object) (Object, error)
	logger        *slog.Logger
	in            interner
}

// newLean returns the informer's lean, nil if it has nothing to do.
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

// fifoTransform returns the FIFO's transform, nil if there is none.
func (l *lean) fifoTransform() func(Object) (Object, error) {
	if l == nil || (l.keep && l.user == nil) {
		return nil
	}
	return l.transform
}

func (l *lean) transform(obj Object) (Object, error) {
	if !l.keep {
		obj.SetManagedFields(nil)
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

// interns reports whether intern does anything.
func (l *lean) interns() bool { return l != nil && !l.noIntern }

// intern interns obj, about to replace prev in the cache (nil: not cached).
// Nobody else holds obj yet; prev's memory is never written. An update
// (another resourceVersion) has only its metadata interned unless
// internUpdates; a new object, and a relisted unchanged one (same
// resourceVersion), are walked whole — against prev, whose canonical
// strings they then take, so a relist costs no memory. modified: obj comes
// from a watch's MODIFIED event, so it is an update without comparing
// resourceVersions (a comparison that reads prev's, cold in the CPU's
// caches by the time an object changes again).
func (l *lean) intern(obj, prev Object, modified bool) {
	if !l.interns() || obj == nil || obj == prev {
		return
	}
	if prev != nil && !l.internUpdates && (modified || prev.GetResourceVersion() != obj.GetResourceVersion()) {
		l.in.internMetadata(obj, prev)
	} else {
		l.in.internObject(obj, prev)
	}
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
