package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"

	evanphx "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kloop.dev/kloop/apiserver/internal/jsonpatch"
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
			return "", unsupportedMediaType(acceptedPatchTypes(k))
		}
		return pt, nil
	case types.ApplyYAMLPatchType:
		return pt, nil
	}
	// (application/apply-patch+cbor too: kube-apiserver takes it only with
	// its CBORServingAndStorage feature, off by default.)
	// What kube-apiserver's router answers for a content type no route takes.
	st := unsupportedMediaType("415: Unsupported Media Type").(*apierrors.StatusError)
	st.ErrStatus.Details = &metav1.StatusDetails{}
	return "", st
}

// acceptedPatchTypes is kube-apiserver's 415 message for a patch type the
// resource does not take.
func acceptedPatchTypes(k *kind) string {
	accepted := []string{string(types.JSONPatchType), string(types.MergePatchType)}
	if k.newTyped != nil {
		accepted = append(accepted, string(types.StrategicMergePatchType))
	}
	accepted = append(accepted, string(types.ApplyYAMLPatchType))
	return "the body of the request was in an unknown format - accepted media types include: " + strings.Join(accepted, ", ")
}

func unsupportedMediaType(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType,
		Reason: metav1.StatusReasonUnsupportedMediaType, Message: msg,
	}}
}

// patchFailed is the 422 kube-apiserver answers for a JSON patch that does
// not apply (the reason is not told).
func patchFailed(err error) error {
	return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
}

// invalidPatch is the 422 for a patch whose result is not a valid object
// of its kind; value is the patched document as kube-apiserver quotes it.
func invalidPatch(value string, err error) error {
	return apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), value, err.Error())})
}

// jsonPatchOp is one operation of a JSON patch, to check its shape as
// kube-apiserver does (its error messages name this type).
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from"`
	Value any    `json:"value"`
}

// applyPatch applies a patch of type pt to the JSON document doc, with
// kube-apiserver's results and errors (JSON and merge patches by
// internal/jsonpatch, which gives json-patch.v4's results, kube-apiserver's
// library) and its bounds (patchlimits.go). typed returns a new Go value of
// the kind, for strategic merge patch, whose result it also checks against
// the type.
func applyPatch(pt types.PatchType, doc, patch []byte, typed func() any) ([]byte, error) {
	if !json.Valid(patch) {
		return nil, badRequest("invalid JSON patch")
	}
	switch pt {
	case types.JSONPatchType:
		var ops []jsonPatchOp
		if err := json.Unmarshal(patch, &ops); err != nil {
			return nil, badRequest("error decoding patch: %s", strings.ReplaceAll(err.Error(), "[]apiserver.jsonPatchOp", "[]handlers.jsonPatchOp"))
		}
		p, err := evanphx.DecodePatch(patch) // for its errors' texts
		if err != nil {
			return nil, badRequest("%v", err)
		}
		if len(p) > maxJSONPatchOperations {
			return nil, tooManyJSONPatchOperations(len(p))
		}
		decoded := make([]jsonpatch.Operation, len(p))
		for i, op := range p {
			decoded[i] = op
		}
		out, err := jsonpatch.Apply(doc, decoded, maxJSONPatchCopyBytes)
		if err != nil {
			return nil, patchFailed(err)
		}
		return out, nil
	case types.MergePatchType:
		var m map[string]any
		if err := json.Unmarshal(patch, &m); err != nil {
			return nil, badRequest("error decoding patch: %v", err)
		}
		out, err := jsonpatch.MergePatch(doc, patch)
		if err != nil {
			return nil, badRequest("%v", err)
		}
		return out, nil
	case types.StrategicMergePatchType:
		var pm map[string]any // numbers as int64, as kube-apiserver decodes them
		if err := utiljson.Unmarshal(patch, &pm); err != nil {
			return nil, badRequest("%v", err)
		}
		var cur map[string]any
		if err := utiljson.Unmarshal(doc, &cur); err != nil {
			return nil, fmt.Errorf("decoding the current object: %w", err)
		}
		schema, err := strategicpatch.NewPatchMetaFromStruct(typed())
		if err != nil {
			return nil, err
		}
		if err := checkStrategicMergeWork(pm, cur, schema); err != nil {
			return nil, err
		}
		out, err := strategicpatch.StrategicMergeMapPatchUsingLookupPatchMeta(cur, pm, schema)
		if err != nil {
			return nil, smpError(err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(out, typed(), false); err != nil {
			return nil, invalidPatch(fmt.Sprintf("%+v", pm), err)
		}
		return json.Marshal(out)
	}
	return nil, unsupportedMediaType(string(pt))
}

// smpError is kube-apiserver's status for a strategic merge patch error.
func smpError(err error) error {
	switch err {
	case mergepatch.ErrBadJSONDoc, mergepatch.ErrBadPatchFormatForPrimitiveList, mergepatch.ErrBadPatchFormatForRetainKeys,
		mergepatch.ErrBadPatchFormatForSetElementOrderList, mergepatch.ErrUnsupportedStrategicMergePatchFormat:
		return badRequest("%v", err)
	case mergepatch.ErrNoListOfLists, mergepatch.ErrPatchContentNotMatchRetainKeys:
		return patchFailed(err)
	}
	// kube-apiserver passes the others on as they are: a 500 with the
	// error's text and no reason (an unknown $patch directive, a directive
	// of the wrong type, a list element without its merge key).
	return serverError(err)
}

func (s *Server) servePatch(w http.ResponseWriter, r *http.Request, k *kind, ri requestInfo, q url.Values) (err error) {
	// As kube-apiserver: the patch type first, then the body, then the
	// options (which depend on the patch type).
	pt, err := patchType(r, k)
	if err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	wo, err := writeOptions(q, "Patch", pt)
	if err != nil {
		return err
	}
	wo.user = userFrom(r)
	wo.manager = managerName(wo.manager, r.UserAgent())
	wo.adm = newAdmissionCall(r, "PatchOptions")
	defer warnOnError(w, wo, &err)
	if pt == types.ApplyYAMLPatchType && ri.subresource != "scale" { // scale.go applies to a Scale
		return s.serveApply(w, k, ri, body, wo)
	}
	if ri.subresource == "scale" {
		return s.updateScale(w, k, ri.namespace, ri.name, body, &pt, wo)
	}
	o, err := s.update(k, ri, wo, func(cur *storage.Object) (map[string]any, error) {
		if pt == types.MergePatchType {
			if obj, ok := s.fastMergePatch(k, cur, body); ok {
				return s.toStorage(k, obj)
			}
		}
		doc, err := s.output(k, cur)
		if err != nil {
			return nil, err
		}
		patched, err := applyPatch(pt, doc, body, k.newTyped)
		if err != nil {
			return nil, err
		}
		obj, err := s.decodeBody(k, patched, wo)
		var df *decodeFailure
		if errors.As(err, &df) {
			return nil, invalidPatch(string(patched), df.err)
		}
		var vm *versionMismatch
		if errors.As(err, &vm) {
			return nil, vm.invalid()
		}
		if err != nil {
			return nil, err
		}
		return s.toStorage(k, obj)
	})
	if err != nil {
		return err
	}
	return s.respond(w, k, o, http.StatusOK, wo)
}
