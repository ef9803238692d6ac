package informer

import (
	"errors"
	"log/slog"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// intern returns the canonical copy of s. The copies live in Go's unique
// package, which frees a string once no cached object references it, so an
// informer's strings never pin memory after their objects are gone.
func intern(s string) string {
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
// apiVersion, kind, name and uid of owner references. It is part of the default
// transform (opt out with Options.DisableInterning).
func InternMetadata[T Object](obj T) (T, error) {
	internMeta(obj)
	return obj, nil
}

func internMeta(obj metav1.Object) {
	if ns := obj.GetNamespace(); ns != "" {
		obj.SetNamespace(intern(ns))
	}
	if g := obj.GetGenerateName(); g != "" {
		obj.SetGenerateName(intern(g))
	}
	// Typed objects return their own maps (interned in place, no
	// allocation); unstructured ones return copies, written back.
	if m := obj.GetLabels(); len(m) > 0 {
		internStringMap(m)
		obj.SetLabels(m)
	}
	if m := obj.GetAnnotations(); len(m) > 0 {
		internStringMap(m)
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

// leanTransform returns the transform the FIFO applies: managedFields
// stripped (unless keep), strings interned (unless noIntern), then user's.
//
// A failing user transform must not stall the informer (the FIFO refuses a
// whole relist when one object fails), so its error is logged and the object
// is cached as it was before the user transform.
func leanTransform(keep, noIntern bool, user func(Object) (Object, error), logger *slog.Logger) func(Object) (Object, error) {
	if keep && noIntern && user == nil {
		return nil
	}
	in := &interner{}
	return func(obj Object) (Object, error) {
		if !keep {
			obj.SetManagedFields(nil)
		}
		if !noIntern {
			in.internObject(obj)
		}
		if user != nil {
			out, err := user(obj)
			if err == nil && !isNil(out) {
				return out, nil
			}
			if err == nil {
				err = errors.New("returned nil")
			}
			logger.Error("informer: transform failed; caching the object untransformed", "namespace", obj.GetNamespace(), "name", obj.GetName(), "err", err)
		}
		return obj, nil
	}
}
