package apiserver

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
)

// The write path, one file per step: write_decode.go decodes request
// bodies, write_options.go reads a write's options and collects its
// warnings, create.go, update.go and delete.go serve the verbs (patch.go
// and scale.go build on update). What they share is here: the stored form
// of an object and its validation.

// toStorage converts a served object into its stored form.
func (s *Server) toStorage(k *kind, obj map[string]any) (map[string]any, error) {
	if k.convert != nil {
		var err error
		if obj, err = k.convert.toStorage(obj); err != nil {
			if _, ok := err.(apierrors.APIStatus); ok { // a conversion webhook's failure
				return nil, err
			}
			return nil, badRequest("converting %s: %v", k.kind, err)
		}
	}
	// Set only when they differ: the usual body has them already, and
	// storing a string in a map allocates.
	if av, _ := obj["apiVersion"].(string); av != k.storageVersion {
		obj["apiVersion"] = k.storageVersion
	}
	if kd, _ := obj["kind"].(string); kd != k.kind {
		obj["kind"] = k.kind
	}
	return obj, nil
}

// encoder returns the EncodeFunc storing obj (stored form) at a revision.
// obj is encoded now, outside the store's lock, with a gap where its
// resourceVersion goes (jsontree.EncodeRVHole): under the lock, the
// EncodeFunc only fills it in. Nothing may change obj after this call.
func (k *kind) encoder(obj map[string]any) storage.EncodeFunc {
	m := meta(obj)
	delete(m, "resourceVersion") // the EncodeFunc sets it
	pre, hole, encErr := jsontree.EncodeRVHole(obj)
	return func(rev int64) (*storage.Object, error) {
		if encErr != nil {
			return nil, fmt.Errorf("encoding %s: %w", k.kind, encErr)
		}
		rv := formatRV(rev)
		m["resourceVersion"] = rv
		data := jsontree.FillRVHole(pre, hole, rv)
		return &storage.Object{
			Namespace:  jsontree.Str(m, "namespace"),
			Name:       jsontree.Str(m, "name"),
			UID:        jsontree.Str(m, "uid"),
			Data:       data,
			APIVersion: jsontree.Str(obj, "apiVersion"),
			Labels:     labelsOf(obj),
			Fields:     k.fieldsOf(obj),
		}, nil
	}
}

// validate runs metadata and kind validation; old is nil on create, sub
// the subresource an update writes.
func (s *Server) validate(k *kind, u, old *unstructured.Unstructured, sub string) error {
	var errs field.ErrorList
	switch {
	case k.validateAll != nil:
		var oldObj map[string]any
		if old != nil {
			oldObj = old.Object
		}
		errs = k.validateAll(u.Object, oldObj, sub)
	case old == nil:
		errs = apivalidation.ValidateObjectMetaAccessor(u, k.namespaced, k.nameValidation, field.NewPath("metadata"))
	default:
		errs = validateMetaUpdate(u, old, field.NewPath("metadata"))
	}
	if old == nil && k.validateCreate != nil {
		errs = append(errs, k.validateCreate(u.Object)...)
	}
	if k.validate != nil {
		errs = append(errs, k.validate(u.Object)...)
	}
	if old != nil && k.validateUpdate != nil {
		errs = append(errs, k.validateUpdate(u.Object, old.Object)...)
	}
	if old != nil && k.validateSubresource != nil {
		errs = append(errs, k.validateSubresource(sub, u.Object, old.Object)...)
	}
	if k.declarative != nil {
		errs = k.declarative(errs, u.Object, old != nil)
	}
	if k.crd != nil {
		var oldObj map[string]any
		if old != nil {
			oldObj = old.Object
		}
		errs = append(errs, k.crd.checked().schema.validate(u.Object, oldObj, sub, k.scale, errs)...)
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: k.gvr.Group, Kind: k.kind}, u.GetName(), errs)
	}
	return nil
}

// validateMetaUpdate is apivalidation.ValidateObjectMetaAccessorUpdate,
// without its cost in the usual update: when the fields it checks for
// immutability hold the same values as before (which its own checks then
// pass: its getters read equal values alike), the old object is not being
// deleted and the resourceVersion and generation are fine, only the checks
// of the new labels, annotations, owner references and managed fields can
// fail, and they are called as it calls them. Otherwise it is called.
func validateMetaUpdate(u, old *unstructured.Unstructured, fldPath *field.Path) field.ErrorList {
	m, mok := u.Object["metadata"].(map[string]any)
	om, omok := old.Object["metadata"].(map[string]any)
	fast := mok && omok && jsontree.Str(om, "deletionTimestamp") == "" && jsontree.Str(m, "resourceVersion") != "" && u.GetGeneration() >= 0
	for _, f := range []string{"generation", "name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"} {
		if !fast {
			break
		}
		v, ok := m[f]
		ov, ook := om[f]
		fast = ok == ook && jsontree.Equal(v, ov)
	}
	if !fast {
		return apivalidation.ValidateObjectMetaAccessorUpdate(u, old, fldPath)
	}
	// Empty (or absent) labels and annotations have nothing to check.
	var errs field.ErrorList
	if jsontree.Len(m, "labels") > 0 {
		errs = append(errs, metavalidation.ValidateLabels(u.GetLabels(), fldPath.Child("labels"))...)
	}
	if jsontree.Len(m, "annotations") > 0 {
		errs = append(errs, apivalidation.ValidateAnnotations(u.GetAnnotations(), fldPath.Child("annotations"))...)
	}
	if _, ok := m["ownerReferences"]; ok {
		errs = append(errs, apivalidation.ValidateOwnerReferences(u.GetOwnerReferences(), fldPath.Child("ownerReferences"))...)
	}
	if _, ok := m["managedFields"]; ok {
		errs = append(errs, metavalidation.ValidateManagedFields(u.GetManagedFields(), fldPath.Child("managedFields"), metavalidation.CoveredByDeclarative)...)
	}
	return errs
}
