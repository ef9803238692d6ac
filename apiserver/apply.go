package apiserver

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"kloop.dev/kloop/apiserver/storage"
)

// serveApply serves a server-side apply (PATCH with
// application/apply-patch+yaml) of body to the object ri names: the field
// manager merges the applied configuration into the live object, taking
// the fields it sets for wo.manager, and answers 409 naming the managers
// and fields it would take from others unless wo.force. An apply to an
// object that does not exist creates it (201).
func (s *Server) serveApply(w http.ResponseWriter, k *kind, ri requestInfo, body []byte, wo *writeOpts) error {
	if !k.managesFields() {
		return unsupportedMediaType("server-side apply is not supported for " + k.gvr.Resource)
	}
	patch, err := decodeApplyPatch(body)
	if err != nil {
		return err
	}
	fm, err := s.fieldManager(k, ri.subresource)
	if err != nil {
		return serverError(err)
	}
	wo.applied = true
	apply := func(live map[string]any) (map[string]any, error) {
		out, err := fm.Apply(&unstructured.Unstructured{Object: live}, &unstructured.Unstructured{Object: runtime.DeepCopyJSON(patch)}, wo.manager, wo.force)
		if err != nil {
			var st apierrors.APIStatus
			if errors.As(err, &st) {
				return nil, err
			}
			return nil, serverError(err) // kube-apiserver: a patch that does not fit the schema is a 500
		}
		u, ok := out.(*unstructured.Unstructured)
		if !ok {
			return nil, serverError(errors.New("field manager returned no object"))
		}
		// As kube-apiserver, the name is checked on the result.
		if err := checkURLName(k, ri, u.Object); err != nil {
			return nil, err
		}
		return u.Object, nil
	}
	for attempt := 0; ; attempt++ {
		o, err := s.update(k, ri, wo, func(cur *storage.Object) (map[string]any, error) {
			live, err := decodeMap(cur.Data) // the field manager keeps parts of it in its result
			if err != nil {
				return nil, err
			}
			return apply(live)
		})
		if err == nil {
			return s.respond(w, k, o, http.StatusOK, wo)
		}
		if !errors.Is(err, storage.ErrNotFound) || ri.subresource != "" {
			return err
		}
		// Create by apply: the applied configuration on an empty object.
		obj, err := apply(k.newStored().Object)
		if err != nil {
			return err
		}
		if err := s.checkWrite(k, wo, ri.namespace, obj, nil); err != nil {
			return err
		}
		o, err = s.create(k, obj, ri.namespace, wo)
		if apierrors.IsAlreadyExists(err) && attempt < 3 {
			continue // created meanwhile: apply to it
		}
		if err != nil {
			return err
		}
		return s.respond(w, k, o, http.StatusCreated, wo)
	}
}

// decodeApplyPatch decodes an applied configuration, YAML or JSON, with
// kube-apiserver's error for one that is not an object.
func decodeApplyPatch(body []byte) (map[string]any, error) {
	j, err := yaml.YAMLToJSON(body)
	if err != nil {
		return nil, badRequest("error encoding patch: %v", err)
	}
	m, err := decodeMap(j)
	if err != nil {
		return nil, badRequest("error decoding YAML: %v", err)
	}
	return m, nil
}
