package apiserver

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
)

// crdCleanupFinalizer keeps a deleted CRD until its objects are gone.
const crdCleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io"

// crVerbs are the verbs of custom resources, in apiextensions-apiserver's
// order.
var crVerbs = []string{"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"}

// crdServing is what a custom resource version's kind needs from its CRD.
type crdServing struct {
	crdName string
	// versions are every version of the CRD, served or not.
	versions []string
	// schemaProps is the version's openAPIV3Schema (nil without one), for
	// OpenAPI documents and field management.
	schemaProps *apiextensionsv1.JSONSchemaProps
	// schema does the schema work of writes (crschema.go); never nil.
	schema *crSchema
	// columns makes the Table rows of kubectl get: kube-apiserver's CRD
	// table convertor of the version's printer columns (Age without any).
	columns rest.TableConvertor
	// terminating: the CRD is being deleted; creates are refused.
	terminating bool
	// webhook is the CRD's conversion webhook (strategy Webhook), nil
	// for strategy None (crdconvert.go).
	webhook *crdWebhook
	// check, when set, is what objects are pruned, defaulted and validated
	// against once converted to the stored form: the storage version's
	// schema, for a version converted by a webhook. nil: this version's.
	check *crdServing
	// gone is closed when the kind stops being served (its CRD deleted, or
	// the version no longer served): its watches end then, as
	// kube-apiserver's do when it destroys a CRD's storage. Set by
	// registry.replaceCRD, carried over when the CRD is re-served.
	gone chan struct{}
}

// hasVersion reports whether the CRD has version v, served or not.
func (c *crdServing) hasVersion(v string) bool { return slices.Contains(c.versions, v) }

// checked returns what objects of this version are pruned, defaulted and
// validated as in their stored form.
func (c *crdServing) checked() *crdServing {
	if c.check != nil {
		return c.check
	}
	return c
}

// crdKinds builds the kinds a CRD serves, one per served version.
func crdKinds(crd *apiextensionsv1.CustomResourceDefinition) ([]*kind, error) {
	names := crd.Spec.Names
	storageVersion := ""
	var fields []selectableField
	versions := make([]string, 0, len(crd.Spec.Versions))
	for _, v := range crd.Spec.Versions {
		versions = append(versions, v.Name)
		if v.Storage {
			storageVersion = v.Name
		}
		for _, f := range v.SelectableFields {
			name := strings.TrimPrefix(f.JSONPath, ".")
			if !slices.ContainsFunc(fields, func(x selectableField) bool { return x.name == name }) {
				fields = append(fields, selectableField{name: name, path: strings.Split(name, ".")})
			}
		}
	}
	if storageVersion == "" {
		return nil, fmt.Errorf("CustomResourceDefinition %s has no storage version", crd.Name)
	}
	var out []*kind
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		k := &kind{
			gvr:             schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: names.Plural},
			kind:            names.Kind,
			listKind:        names.ListKind,
			singular:        names.Singular,
			namespaced:      crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
			shortNames:      names.ShortNames,
			categories:      names.Categories,
			verbs:           crVerbs,
			storageResource: crd.Spec.Group + "/" + names.Plural,
			storageVersion:  crd.Spec.Group + "/" + storageVersion,
			generation:      true,
			nameValidation:  apivalidation.NameIsDNSSubdomain,
			fields:          fields,
			crd:             &crdServing{crdName: crd.Name, versions: versions, schema: &crSchema{}},
			// Custom resources take no unconditional update.
			requireResourceVersion: true,
		}
		if k.listKind == "" {
			k.listKind = k.kind + "List"
		}
		if k.singular == "" {
			k.singular = strings.ToLower(k.kind)
		}
		if sr := v.Subresources; sr != nil {
			k.status = sr.Status != nil
			if sc := sr.Scale; sc != nil {
				k.scale = &scaleInfo{specReplicas: jsonPath(sc.SpecReplicasPath), statusReplicas: jsonPath(sc.StatusReplicasPath), selectorString: true}
				if sc.LabelSelectorPath != nil {
					k.scale.selector = jsonPath(*sc.LabelSelectorPath)
				}
			}
		}
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			k.crd.schemaProps = v.Schema.OpenAPIV3Schema
			k.crd.schema.props = v.Schema.OpenAPIV3Schema
		}
		k.crd.columns = crColumns(v.AdditionalPrinterColumns)
		out = append(out, k)
	}
	return out, nil
}

// jsonPath splits a simple JSONPath such as .spec.replicas.
func jsonPath(p string) []string {
	return strings.Split(strings.TrimPrefix(p, "."), ".")
}

// crdKind configures the customresourcedefinitions kind: validation,
// defaulting and the status kube-apiserver's controllers would set.
func crdKind(k *kind) {
	k.prepareCreate = func(obj map[string]any) {
		delete(obj, "status")
	}
	k.admit = (*Server).admitCRD
	k.admitManager = "kube-apiserver"
	k.admitBefore = func(before, after map[string]any) {
		// kube-apiserver's PrepareForCreate: the stored versions, empty
		// conditions and names, which its naming and establishing
		// controllers then fill.
		before["status"] = map[string]any{"conditions": []any{}, "acceptedNames": map[string]any{},
			"storedVersions": runtime.DeepCopyJSONValue(jsontree.Get(after, "status", "storedVersions"))}
	}
	k.afterWrite = func(s *Server, o *storage.Object) { s.syncCRD(o.Name) }
	k.afterDelete = k.afterWrite
	k.restore = k.afterWrite
	k.terminate = func(obj map[string]any) {
		// A CRD keeps a finalizer until its objects are deleted.
		u := &unstructured.Unstructured{Object: obj}
		if !slices.Contains(u.GetFinalizers(), crdCleanupFinalizer) {
			u.SetFinalizers(append(u.GetFinalizers(), crdCleanupFinalizer))
		}
	}
	k.deleteContent = (*Server).deleteCRDContent
	k.validateAll = validateCRD
	k.warnings = func(obj map[string]any) []string { return crdWarnings(obj, nil) }
	k.warningsUpdate = crdWarnings
	k.normalize = func(obj map[string]any) (map[string]any, error) {
		crd, err := decodeCRD(obj)
		if err != nil {
			return nil, badRequest("%v", err)
		}
		// A new storage version joins status.storedVersions, as
		// kube-apiserver records every version objects were stored at.
		for _, v := range crd.Spec.Versions {
			if v.Storage && len(crd.Status.StoredVersions) > 0 && !slices.Contains(crd.Status.StoredVersions, v.Name) {
				crd.Status.StoredVersions = append(crd.Status.StoredVersions, v.Name)
			}
		}
		return toMap(crd)
	}
}

// admitCRD checks that a new CRD's names are free and sets the status the
// CRD controllers of kube-apiserver would: the names are accepted and the
// resource is established (it is served once the create returns).
func (s *Server) admitCRD(obj map[string]any) error {
	crd, err := decodeCRD(obj)
	if err != nil {
		return badRequest("%v", err)
	}
	for _, v := range crd.Spec.Versions {
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural}
		if k := s.reg.get(gvr); k != nil && (k.crd == nil || k.crd.crdName != crd.Name) {
			return apierrors.NewInvalid(apiextensionsv1.Kind("CustomResourceDefinition"), crd.Name,
				field.ErrorList{field.Duplicate(field.NewPath("spec", "names", "plural"), crd.Spec.Names.Plural)})
		}
	}
	if _, err := crdKinds(crd); err != nil {
		return apierrors.NewInvalid(apiextensionsv1.Kind("CustomResourceDefinition"), crd.Name,
			field.ErrorList{field.Invalid(field.NewPath("spec", "versions"), nil, err.Error())})
	}
	now := metav1.NewTime(s.opts.Now())
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{
		Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
			{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, LastTransitionTime: now, Reason: "NoConflicts", Message: "no conflicts found"},
			{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, LastTransitionTime: now, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"},
		},
		AcceptedNames: crd.Spec.Names,
	}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			crd.Status.StoredVersions = []string{v.Name}
		}
	}
	st, err := toMap(crd.Status)
	if err != nil {
		return err
	}
	obj["status"] = st
	return nil
}

// syncCRD makes the served kinds of a CRD match its stored state: it serves
// (or re-serves, after an update) the CRD's resources, or stops serving them
// once the CRD is gone. It reads the current state, so concurrent writes
// cannot leave an older state installed.
func (s *Server) syncCRD(name string) {
	s.crdMu.Lock()
	defer s.crdMu.Unlock()
	o, err := s.store.Get(crdGVR.Group+"/"+crdGVR.Resource, "", name)
	if err != nil {
		s.reg.replaceCRD(name, nil)
		return
	}
	obj, err := decodeMap(o.Data)
	if err != nil {
		s.opts.Logger.Error("apiserver: decoding a stored CRD", "name", name, "err", err)
		return
	}
	crd, err := decodeCRD(obj)
	if err != nil {
		s.opts.Logger.Error("apiserver: decoding a stored CRD", "name", name, "err", err)
		return
	}
	kinds, err := crdKinds(crd)
	if err != nil {
		s.opts.Logger.Error("apiserver: serving a CRD", "name", name, "err", err)
		return
	}
	for _, k := range kinds {
		k.crd.terminating = crd.DeletionTimestamp != nil
	}
	s.setWebhookConversion(kinds, crd)
	s.reg.replaceCRD(crd.Name, kinds)
}

// deleteCRDContent deletes every object of a terminating CRD, then finishes
// the CRD's deletion if none is left (objects with finalizers may stay).
func (s *Server) deleteCRDContent(crdName string) {
	for _, k := range s.reg.crdKinds(crdName) {
		res, err := s.store.List(k.storageResource, storage.ListOptions{})
		if err != nil {
			continue
		}
		for _, o := range res.Objects {
			if _, _, err := s.delete(k, o.Namespace, o.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				s.opts.Logger.Error("apiserver: deleting a custom resource", "crd", crdName, "name", o.Name, "err", err)
			}
		}
		break // all versions share the storage
	}
	s.finalizeCRD(crdName)
}

// finalizeCRD removes the cleanup finalizer of a terminating CRD whose objects
// are all gone, which deletes it.
func (s *Server) finalizeCRD(crdName string) {
	ks := s.reg.crdKinds(crdName)
	if len(ks) > 0 {
		res, err := s.store.List(ks[0].storageResource, storage.ListOptions{Limit: 1})
		if err != nil || len(res.Objects) > 0 {
			return
		}
	}
	crdK := s.reg.get(crdGVR)
	_, err := s.update(crdK, requestInfo{gv: crdGVR.GroupVersion(), resource: crdGVR.Resource, name: crdName}, &writeOpts{}, func(cur *storage.Object) (map[string]any, error) {
		obj, err := decodeMap(cur.Data)
		if err != nil {
			return nil, err
		}
		m := meta(obj)
		if m["deletionTimestamp"] == nil {
			return obj, nil
		}
		fins, _ := m["finalizers"].([]any)
		fins = slices.DeleteFunc(slices.Clone(fins), func(f any) bool { return f == crdCleanupFinalizer })
		if len(fins) == 0 {
			delete(m, "finalizers")
		} else {
			m["finalizers"] = fins
		}
		return obj, nil
	})
	if err != nil && !apierrors.IsNotFound(err) {
		s.opts.Logger.Error("apiserver: finalizing a CRD", "name", crdName, "err", err)
	}
}
