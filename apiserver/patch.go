package apiserver

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"kloop.dev/kloop/apiserver/storage"
)

// patchType reads the patch type from the Content-Type header.
func patchType(r *http.Request, k *kind) (types.PatchType, error) {
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		ct = r.Header.Get("Content-Type")
	}
	pt := types.PatchType(ct)
	switch pt {
	case types.JSONPatchType, types.MergePatchType:
		return pt, nil
	case types.StrategicMergePatchType:
		if k.newTyped == nil {
			return "", unsupportedMediaType(fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s (strategic merge patch is not supported for custom resources)", types.JSONPatchType, types.MergePatchType))
		}
		return pt, nil
	case types.ApplyYAMLPatchType, types.ApplyCBORPatchType:
		return "", unsupportedMediaType("server-side apply is not supported by this server yet; use client-side apply")
	}
	return "", unsupportedMediaType(fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s", types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType))
}

func unsupportedMediaType(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType,
		Reason: metav1.StatusReasonUnsupportedMediaType, Message: msg,
	}}
}

// patchFailed is the 422 kube-apiserver answers for a patch that does not apply.
func patchFailed(err error) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity,
		Reason: metav1.StatusReasonInvalid, Message: fmt.Sprintf("the patch could not be applied: %v", err),
	}}
}

// applyPatch applies a patch of type pt to the JSON document doc. typed is the
// Go value of the kind, for strategic merge patch.
func applyPatch(pt types.PatchType, doc, patch []byte, typed func() any) ([]byte, error) {
	switch pt {
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, badRequest("invalid JSON patch: %v", err)
		}
		out, err := p.Apply(doc)
		if err != nil {
			return nil, patchFailed(err)
		}
		return out, nil
	case types.MergePatchType:
		if !json.Valid(patch) {
			return nil, badRequest("invalid JSON merge patch: not valid JSON")
		}
		out, err := jsonpatch.MergePatch(doc, patch)
		if err != nil {
			return nil, patchFailed(err)
		}
		return out, nil
	case types.StrategicMergePatchType:
		var pm map[string]any
		if err := json.Unmarshal(patch, &pm); err != nil || pm == nil {
			return nil, badRequest("invalid strategic merge patch: must be a JSON object")
		}
		out, err := strategicpatch.StrategicMergePatch(doc, patch, typed())
		if err != nil {
			return nil, patchFailed(err)
		}
		return out, nil
	}
	return nil, unsupportedMediaType(string(pt))
}

func (s *Server) servePatch(w http.ResponseWriter, r *http.Request, k *kind, ri requestInfo, q url.Values) error {
	wo, err := writeOptions(q)
	if err != nil {
		return err
	}
	pt, err := patchType(r, k)
	if err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if ri.subresource == "scale" {
		return s.updateScale(w, k, ri.namespace, ri.name, body, &pt, wo)
	}
	o, err := s.update(k, ri, wo, func(cur *storage.Object) (map[string]any, error) {
		doc, err := s.output(k, cur)
		if err != nil {
			return nil, err
		}
		patched, err := applyPatch(pt, doc, body, k.newTyped)
		if err != nil {
			return nil, err
		}
		obj, err := s.decodeBody(k, patched, wo)
		if err != nil {
			return nil, err
		}
		return s.toStorage(k, obj)
	})
	if err != nil {
		return err
	}
	out, err := s.output(k, o)
	if err != nil {
		return err
	}
	writeWarnings(w, wo)
	writeJSON(w, http.StatusOK, out)
	return nil
}
