package client

import (
	"encoding/json"
	"fmt"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// Patch is a patch to send with Client.Patch.
type Patch interface {
	// Type is the patch's media type.
	Type() types.PatchType
	// Data returns the patch body for obj.
	Data(obj Object) ([]byte, error)
}

// MergeFrom returns a JSON merge patch from original to the object passed
// to Patch: the usual way to change a few fields of an object read from the
// cache. It carries no resourceVersion: a concurrent change of other fields
// is no conflict (and a list in the patch replaces the server's whole).
//
//	orig := pod.DeepCopy()
//	pod.Labels["x"] = "y"
//	err := c.Patch(ctx, pod, client.MergeFrom(orig))
func MergeFrom(original Object) Patch { return mergeFrom{original: original} }

// MergeFromWithOptimisticLock is MergeFrom with original's
// metadata.resourceVersion in the patch: the server applies it only if the
// object has not changed since original was read, and answers a Conflict
// (apierrors.IsConflict) otherwise, as an Update would. original must have
// a resourceVersion. controller-runtime spells it
// MergeFromWithOptions(original, MergeFromWithOptimisticLock{}).
func MergeFromWithOptimisticLock(original Object) Patch {
	return mergeFrom{original: original, lock: true}
}

// StrategicMergeFrom returns a strategic merge patch from original to the
// object passed to Patch, computed with k8s.io/apimachinery's
// strategicpatch from the patch metadata of original's Go type: lists such
// as a pod's containers merge by their key (a patch that changes one
// container keeps the others) instead of being replaced whole. It is for
// the built-in kinds (typed k8s.io/api structs, or metadata-only objects
// for a metadata change). As with controller-runtime, an unstructured
// object has no patch metadata and is an error before any request, and a
// custom resource's server answers 415 Unsupported Media Type
// (apierrors.IsUnsupportedMediaType): use MergeFrom for them.
func StrategicMergeFrom(original Object) Patch {
	return mergeFrom{original: original, strategic: true}
}

// mergeFrom is a merge patch (JSON or strategic) from original.
type mergeFrom struct {
	original Object
	// lock puts original's resourceVersion in the patch.
	lock bool
	// strategic makes it a strategic merge patch.
	strategic bool
}

func (m mergeFrom) Type() types.PatchType {
	if m.strategic {
		return types.StrategicMergePatchType
	}
	return types.MergePatchType
}

func (m mergeFrom) Data(obj Object) ([]byte, error) {
	kind := "merge patch"
	if m.strategic {
		kind = "strategic merge patch"
	}
	if isNil(m.original) { // "null" would make the whole object the patch
		return nil, fmt.Errorf("client: %s from a nil object (%T)", kind, m.original)
	}
	if m.strategic {
		if _, ok := m.original.(*unstructured.Unstructured); ok {
			return nil, fmt.Errorf("client: strategic merge patch from %T: it has no patch metadata (the Go type of a built-in kind has); use MergeFrom", m.original)
		}
	}
	original, modified := m.original, obj
	if m.lock {
		rv := original.GetResourceVersion()
		if rv == "" {
			return nil, fmt.Errorf("client: %s with optimistic lock: %s %q has no resourceVersion", kind, original.GetObjectKind().GroupVersionKind().Kind, KeyOf(original))
		}
		var err error
		if original, err = copyObject(original); err != nil {
			return nil, err
		}
		if modified, err = copyObject(modified); err != nil {
			return nil, err
		}
		// The patch then sets the resourceVersion, which the server
		// compares with the object's.
		original.SetResourceVersion("")
		modified.SetResourceVersion(rv)
	}
	a, err := json.Marshal(original)
	if err != nil {
		return nil, fmt.Errorf("client: %s: %w", kind, err)
	}
	b, err := json.Marshal(modified)
	if err != nil {
		return nil, fmt.Errorf("client: %s: %w", kind, err)
	}
	var p []byte
	if m.strategic {
		p, err = strategicpatch.CreateTwoWayMergePatch(a, b, m.original)
	} else {
		p, err = jsonpatch.CreateMergePatch(a, b)
	}
	if err != nil {
		return nil, fmt.Errorf("client: %s: %w", kind, err)
	}
	return p, nil
}

// copyObject returns a deep copy of obj.
func copyObject(obj Object) (Object, error) {
	c, ok := obj.DeepCopyObject().(Object)
	if !ok || isNil(c) {
		return nil, fmt.Errorf("client: %T deep-copies to a %T", obj, c)
	}
	return c, nil
}

// RawPatch sends data as a patch of type t (JSON patch, merge patch,
// strategic merge patch, or server-side apply with a FieldOwner).
func RawPatch(t types.PatchType, data []byte) Patch { return rawPatch{t: t, data: data} }

type rawPatch struct {
	t    types.PatchType
	data []byte
}

func (r rawPatch) Type() types.PatchType       { return r.t }
func (r rawPatch) Data(Object) ([]byte, error) { return r.data, nil }
