package client

import (
	"encoding/json"
	"fmt"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/types"
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
// cache.
//
//	orig := pod.DeepCopy()
//	pod.Labels["x"] = "y"
//	err := c.Patch(ctx, pod, client.MergeFrom(orig))
func MergeFrom(original Object) Patch { return mergeFrom{original: original} }

type mergeFrom struct{ original Object }

func (mergeFrom) Type() types.PatchType { return types.MergePatchType }

func (m mergeFrom) Data(obj Object) ([]byte, error) {
	if isNil(m.original) { // "null" would make the whole object the patch
		return nil, fmt.Errorf("client: merge patch from a nil object (%T)", m.original)
	}
	a, err := json.Marshal(m.original)
	if err != nil {
		return nil, fmt.Errorf("client: merge patch: %w", err)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("client: merge patch: %w", err)
	}
	p, err := jsonpatch.CreateMergePatch(a, b)
	if err != nil {
		return nil, fmt.Errorf("client: merge patch: %w", err)
	}
	return p, nil
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
