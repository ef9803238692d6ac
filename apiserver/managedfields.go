package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Field management: every write through the API records which manager
// owns which fields of the object (metadata.managedFields), and server-side
// apply merges by those records. Both are done by the library
// kube-apiserver itself uses, k8s.io/apimachinery/pkg/util/managedfields on
// structured-merge-diff, with kube-apiserver's wiring: a FieldManager per
// served version and subresource, whose live and new objects are kloop's
// stored form (fmConverter converts them to the served version and back),
// and the fields each strategy resets.
//
// Schemas: built-in kinds take client-go's apply-configuration schema
// (generated from kube-apiserver's OpenAPI, with list types, map keys and
// map types), parsed once per process at the first write that needs it
// (≈ 60 ms, which is why New does not touch it: the server's own writes,
// such as the four namespaces New creates, record no managers). Custom
// resources take their CRD version's schema (crdTypeConverter).

// kindFields holds the field managers of one served kind, built at first
// use. The zero value is ready.
type kindFields struct {
	mu sync.Mutex // guards byResource
	// byResource: "" for the main resource, "status", "scale".
	byResource map[string]*managedfields.FieldManager
}

// fieldManager returns k's field manager for subresource sub.
func (s *Server) fieldManager(k *kind, sub string) (*managedfields.FieldManager, error) {
	kf := k.managed
	kf.mu.Lock()
	defer kf.mu.Unlock()
	if fm := kf.byResource[sub]; fm != nil {
		return fm, nil
	}
	gvk := schema.GroupVersionKind{Group: k.gvr.Group, Version: k.gvr.Version, Kind: k.kind}
	hub, err := schema.ParseGroupVersion(k.storedAPIVersion())
	if err != nil {
		return nil, err
	}
	conv := fmConverter{s: s, k: k}
	var fm *managedfields.FieldManager
	if k.crd != nil {
		tc, err := s.crdTypeConverter(k)
		if err != nil {
			return nil, fmt.Errorf("schema of %s: %w", k.gvr, err)
		}
		fm, err = managedfields.NewDefaultCRDFieldManager(tc, conv, conv, conv, gvk, hub, sub, resetFields(k, sub))
		if err != nil {
			return nil, err
		}
	} else {
		tc, err := s.builtinTypeConverter(gvk)
		if err != nil {
			return nil, err
		}
		fm, err = managedfields.NewDefaultFieldManager(tc, conv, conv, conv, gvk, hub, sub, resetFields(k, sub))
		if err != nil {
			return nil, err
		}
	}
	if kf.byResource == nil {
		kf.byResource = map[string]*managedfields.FieldManager{}
	}
	kf.byResource[sub] = fm
	return fm, nil
}

// hasSchema reports whether tc has a schema for gvk: whether an empty
// object of the kind converts.
func hasSchema(tc managedfields.TypeConverter, gvk schema.GroupVersionKind) bool {
	_, err := tc.ObjectToTyped(newEmpty(gvk))
	return err == nil
}

// managesFields reports whether writes of k record their managers: those
// of every served kind, as kube-apiserver's (reviews included: their
// answers carry the request's managedFields).
func (k *kind) managesFields() bool { return k.managed != nil }

// resetFields are the fields a write to sub never sets (kube-apiserver's
// GetResetFields of the kind's strategy): the status on the main resource
// of a kind with a status subresource; on /status, the spec and the
// metadata the status strategy keeps.
func resetFields(k *kind, sub string) map[fieldpath.APIVersion]fieldpath.Filter {
	var paths []fieldpath.Path
	switch own, ok := k.resetFields[sub]; {
	case ok:
		paths = own
	case sub == "" && k.status:
		paths = append(paths, fieldpath.MakePathOrDie("status"))
	case sub == "status":
		paths = append(paths, fieldpath.MakePathOrDie("spec"))
		for _, f := range k.statusKeepsMeta {
			paths = append(paths, fieldpath.MakePathOrDie("metadata", f))
		}
	}
	if len(paths) == 0 {
		return nil
	}
	filter := fieldpath.NewExcludeSetFilter(fieldpath.NewSet(paths...))
	out := map[fieldpath.APIVersion]fieldpath.Filter{fieldpath.APIVersion(k.apiVersion()): filter}
	if k.crd != nil {
		group := k.gvr.Group
		for _, v := range k.crd.versions {
			out[fieldpath.APIVersion(group+"/"+v)] = filter
		}
	}
	return out
}

// fmConverter is the object converter, creater and defaulter of a kind's
// field manager. Objects are unstructured; the versions it converts
// between are k's served one and its stored one (for custom resources,
// any version of the CRD: their conversion renames the version, or calls
// the CRD's conversion webhook).
// Defaulting is left to the write path, after the field manager.
type fmConverter struct {
	s *Server
	k *kind
}

var (
	_ runtime.ObjectConvertor = fmConverter{}
	_ runtime.ObjectCreater   = fmConverter{}
	_ runtime.ObjectDefaulter = fmConverter{}
)

func (c fmConverter) Convert(in, out any, context any) error {
	return fmt.Errorf("apiserver: field manager: Convert is not supported")
}

func (c fmConverter) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

func (c fmConverter) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("apiserver: field manager: converting %T", in)
	}
	gvk := u.GroupVersionKind()
	var to schema.GroupVersionKind
	if gv, isGV := target.(schema.GroupVersion); isGV {
		to = gv.WithKind(gvk.Kind) // the field manager's; also across groups (events)
	} else if to, ok = target.KindForGroupVersionKinds([]schema.GroupVersionKind{gvk}); !ok {
		return nil, runtime.NewNotRegisteredErrForKind("kloop-apiserver", gvk)
	}
	if to == gvk {
		return u, nil
	}
	k := c.k
	if k == nil { // the Scale's: one version
		return nil, runtime.NewNotRegisteredErrForKind("kloop-apiserver", to)
	}
	from, want := gvk.GroupVersion().String(), to.GroupVersion().String()
	switch {
	case from == k.apiVersion() && want == k.storedAPIVersion():
		m, err := c.s.toStorage(k, runtime.DeepCopyJSON(u.Object))
		if err != nil {
			return nil, err
		}
		return &unstructured.Unstructured{Object: m}, nil
	case from == k.storedAPIVersion() && want == k.apiVersion():
		m, err := c.s.toServed(k, runtime.DeepCopyJSON(u.Object))
		if err != nil {
			return nil, err
		}
		return &unstructured.Unstructured{Object: m}, nil
	case k.crd != nil && to.Group == k.gvr.Group && k.crd.hasVersion(to.Version):
		m := runtime.DeepCopyJSON(u.Object)
		if k.crd.webhook != nil {
			var err error
			if m, err = c.s.convertCR(k, m, want); err != nil {
				return nil, err
			}
			return &unstructured.Unstructured{Object: m}, nil
		}
		m["apiVersion"] = want
		return &unstructured.Unstructured{Object: m}, nil
	}
	// Another version of the group served over the same storage (managers
	// of autoscaling/v1 and v2 HorizontalPodAutoscalers): through the
	// stored form. Across groups (core and events.k8s.io Events)
	// kube-apiserver's field manager does not convert either.
	if to.Group != k.gvr.Group || gvk.Group != k.gvr.Group {
		return nil, runtime.NewNotRegisteredErrForKind("kloop-apiserver", to)
	}
	stored := runtime.DeepCopyJSON(u.Object)
	if from != k.storedAPIVersion() {
		kf := c.s.reg.servedOver(k.storageResource, from)
		if kf == nil {
			return nil, runtime.NewNotRegisteredErrForKind("kloop-apiserver", to)
		}
		var err error
		if stored, err = c.s.toStorage(kf, stored); err != nil {
			return nil, err
		}
	}
	if want == k.storedAPIVersion() {
		return &unstructured.Unstructured{Object: stored}, nil
	}
	kt := c.s.reg.servedOver(k.storageResource, want)
	if kt == nil || kt.crd != nil {
		return nil, runtime.NewNotRegisteredErrForKind("kloop-apiserver", to)
	}
	m, err := c.s.toServed(kt, stored)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

func (c fmConverter) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	return newEmpty(gvk), nil
}

// newEmpty is the live object of a create: for a built-in kind its empty Go
// value as JSON, as kube-apiserver's field manager sees it (fields that
// are not omitted when empty, such as spec, are there already); for a
// custom resource only its apiVersion and kind.
func newEmpty(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	typed, err := builtinScheme.New(gvk)
	if gvk == apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition") {
		typed, err = &apiextensionsv1.CustomResourceDefinition{}, nil
	}
	if err == nil {
		if m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed); err == nil {
			u := &unstructured.Unstructured{Object: m}
			u.SetGroupVersionKind(gvk)
			return u
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	return u
}

// Default applies a built-in kind's defaults to an applied object, as
// kube-apiserver's scheme defaulter does: through the kind's Go type, as
// decoding a request body does (write_decode.go). Custom resources are
// defaulted by the write path (their schema's defaults).
func (c fmConverter) Default(obj runtime.Object) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || c.k == nil || c.k.newTyped == nil || c.k.crd != nil {
		return
	}
	typed := c.k.newTyped()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
		return // the write path's validation reports it
	}
	if !c.k.applyDefaults(typed) {
		return
	}
	m, err := toMap(typed)
	if err != nil {
		return
	}
	gvk := u.GroupVersionKind()
	u.Object = m
	u.SetGroupVersionKind(gvk)
}

// managerName is the manager a write records: the fieldManager parameter,
// else the user agent up to its first "/", printable characters only, at
// most 128 of them (kube-apiserver's managerOrUserAgent).
func managerName(fieldManager, userAgent string) string {
	if fieldManager != "" {
		return fieldManager
	}
	prefix, _, _ := strings.Cut(userAgent, "/")
	var buf bytes.Buffer
	for _, r := range prefix {
		if !unicode.IsPrint(r) {
			continue
		}
		if buf.Len() >= metavalidation.FieldManagerMaxLength {
			break
		}
		buf.WriteRune(r)
	}
	return buf.String()
}

// manageFields records a non-apply write of obj (stored form; old is the
// current state, nil on create, read-only) in obj's managedFields, as
// kube-apiserver's UpdateNoErrors does: the fields the write changed go to
// the request's manager; a request that sends managedFields sets them (an
// empty list resets them), except through a subresource. The server's own
// writes carry over what was recorded. It returns obj, or the object the
// field manager returned in its place.
func (s *Server) manageFields(k *kind, sub string, obj, old map[string]any, wo *writeOpts) map[string]any {
	if wo.keepManagedFields {
		return obj
	}
	if !wo.manage || !k.managesFields() {
		keepManagedFields(obj, old)
		return obj
	}
	if old != nil && k.convert == nil { // the fast path reads served paths in the stored form
		if entries, ok := fastManagedFields(obj, old, wo.manager, k.apiVersion(), sub, time.Now()); ok {
			meta(obj)["managedFields"] = entries
			return obj
		}
	}
	out, err := s.updateManagedFields(k, sub, obj, old, wo.manager)
	if err != nil {
		// What kube-apiserver's UpdateNoErrors does, without its log line:
		// an object that does not fit its schema (which validation then
		// refuses) keeps the managers it had.
		s.opts.Logger.Debug("apiserver: field manager", "resource", k.gvr.String(), "err", err)
		keepManagedFields(obj, old)
		return obj
	}
	return out
}

// updateManagedFields records an Update of old (nil: a create) into obj by
// manager with k's field manager for sub, and returns the object the field
// manager returns.
func (s *Server) updateManagedFields(k *kind, sub string, obj, old map[string]any, manager string) (map[string]any, error) {
	fm, err := s.fieldManager(k, sub)
	if err != nil {
		return nil, err
	}
	var live runtime.Object
	if old == nil {
		live = k.newStored()
	} else {
		live = &unstructured.Unstructured{Object: old}
	}
	out, err := fm.Update(live, &unstructured.Unstructured{Object: obj}, manager)
	if err != nil {
		return nil, err
	}
	u, ok := out.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("field manager returned %T", out)
	}
	return u.Object, nil
}

// storedAPIVersion is the apiVersion of k's stored objects; the served one
// for kinds that store nothing (reviews).
func (k *kind) storedAPIVersion() string {
	if k.storageVersion == "" {
		return k.apiVersion()
	}
	return k.storageVersion
}

// newStored is an empty object of k in its stored form (newEmpty).
func (k *kind) newStored() *unstructured.Unstructured {
	gv, _ := schema.ParseGroupVersion(k.storedAPIVersion())
	return newEmpty(gv.WithKind(k.kind))
}

// keepManagedFields sets obj's managedFields to old's (none on create).
func keepManagedFields(obj, old map[string]any) {
	m := meta(obj)
	if old != nil {
		if mf, ok := meta(old)["managedFields"]; ok {
			m["managedFields"] = runtime.DeepCopyJSONValue(mf)
			return
		}
	}
	delete(m, "managedFields")
}

// crdTypeConverter builds the type converter of a custom resource from the
// schemas of its CRD's served versions, as kube-apiserver does (its apply
// models): each schema as OpenAPI without its value validations, with
// apiVersion and kind, metadata as ObjectMeta, and its group, version and
// kind named on it. Without a schema every field is deduced from the
// object (maps granular, lists atomic).
func (s *Server) crdTypeConverter(k *kind) (managedfields.TypeConverter, error) {
	if k.crd.schemaProps == nil {
		return managedfields.NewDeducedTypeConverter(), nil
	}
	models := objectMetaModels()
	kinds := []*kind{k}
	for _, other := range s.reg.crdKinds(k.crd.crdName) {
		if other.gvr.Version != k.gvr.Version && other.crd.schemaProps != nil {
			kinds = append(kinds, other)
		}
	}
	for _, v := range kinds {
		gvk := schema.GroupVersionKind{Group: v.gvr.Group, Version: v.gvr.Version, Kind: v.kind}
		model, err := crdApplyModel(v.crd.schemaProps, gvk)
		if err != nil {
			return nil, err
		}
		models[crdModelName(gvk)] = model
	}
	return managedfields.NewTypeConverter(models, false)
}

// addTypeMeta gives a resource's model its apiVersion, kind and metadata.
func addTypeMeta(model *spec.Schema) {
	if model.Properties == nil {
		model.Properties = map[string]spec.Schema{}
	}
	model.Properties["apiVersion"] = *spec.StringProperty()
	model.Properties["kind"] = *spec.StringProperty()
	model.Properties["metadata"] = spec.Schema{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef("#/components/schemas/" + metav1.ObjectMeta{}.OpenAPIModelName())}}
}

// addEmbeddedTypeMeta gives every x-kubernetes-embedded-resource below
// model its apiVersion, kind and metadata, as kube-apiserver's CRD OpenAPI
// builder (addEmbeddedProperties) does for the apply models.
func addEmbeddedTypeMeta(model *spec.Schema) {
	for name, p := range model.Properties {
		addEmbeddedTypeMeta(&p)
		if embedded, _ := p.Extensions.GetBool("x-kubernetes-embedded-resource"); embedded {
			addTypeMeta(&p)
		}
		model.Properties[name] = p
	}
	for _, sub := range []*spec.Schema{itemsSchema(model), additionalSchema(model)} {
		if sub != nil {
			addEmbeddedTypeMeta(sub)
			if embedded, _ := sub.Extensions.GetBool("x-kubernetes-embedded-resource"); embedded {
				addTypeMeta(sub)
			}
		}
	}
}

func itemsSchema(s *spec.Schema) *spec.Schema {
	if s.Items != nil {
		return s.Items.Schema
	}
	return nil
}

func additionalSchema(s *spec.Schema) *spec.Schema {
	if s.AdditionalProperties != nil {
		return s.AdditionalProperties.Schema
	}
	return nil
}

// crdModelName is the OpenAPI name of a custom resource's model, as
// kube-apiserver names it: the group's labels reversed, the version, the kind.
func crdModelName(gvk schema.GroupVersionKind) string {
	labels := strings.Split(gvk.Group, ".")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	return strings.Join(labels, ".") + "." + gvk.Version + "." + gvk.Kind
}

// crdApplyModel is the apply model of one version of a custom resource.
func crdApplyModel(props *apiextensionsv1.JSONSchemaProps, gvk schema.GroupVersionKind) (*spec.Schema, error) {
	b, err := json.Marshal(props)
	if err != nil {
		return nil, err
	}
	var tree map[string]any
	if err := json.Unmarshal(b, &tree); err != nil {
		return nil, err
	}
	stripValueValidations(tree)
	if b, err = json.Marshal(tree); err != nil {
		return nil, err
	}
	model := &spec.Schema{}
	if err := json.Unmarshal(b, model); err != nil {
		return nil, err
	}
	if model.Properties == nil {
		model.Properties = map[string]spec.Schema{}
	}
	model.Type = spec.StringOrArray{"object"}
	addTypeMeta(model)
	addEmbeddedTypeMeta(model)
	model.AddExtension("x-kubernetes-group-version-kind", []any{map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}})
	return model, nil
}

// stripValueValidations removes from a schema (as JSON) what does not
// shape the object, as kube-apiserver's apply models leave it out: the
// value validations, their logical combinations, nullable and descriptions.
func stripValueValidations(s map[string]any) {
	for _, key := range []string{"allOf", "anyOf", "oneOf", "not", "nullable", "description", "enum", "pattern",
		"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength",
		"minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties", "required", "x-kubernetes-validations", "example", "externalDocs"} {
		delete(s, key)
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, p := range props {
			if m, ok := p.(map[string]any); ok {
				stripValueValidations(m)
			}
		}
	}
	for _, key := range []string{"items", "additionalProperties"} {
		if m, ok := s[key].(map[string]any); ok {
			stripValueValidations(m)
		}
	}
}

// apiextensionsTypeConverter is the schema of CustomResourceDefinition,
// from the OpenAPI definitions kube-apiserver serves for it.
func apiextensionsTypeConverter() (managedfields.TypeConverter, error) {
	ref := func(name string) spec.Ref { return spec.MustCreateRef("#/components/schemas/" + name) }
	models := map[string]*spec.Schema{}
	for name, def := range generatedopenapi.GetOpenAPIDefinitions(ref) {
		sch := def.Schema
		models[name] = &sch
	}
	crd := models[apiextensionsv1.CustomResourceDefinition{}.OpenAPIModelName()]
	if crd == nil {
		return nil, fmt.Errorf("no OpenAPI model of CustomResourceDefinition")
	}
	gvk := apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition")
	crd.AddExtension("x-kubernetes-group-version-kind", []any{map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}})
	return managedfields.NewTypeConverter(models, false)
}

// objectMetaModels are the models of ObjectMeta and what it refers to,
// from the generated OpenAPI definitions kube-apiserver serves, named as
// it names them.
func objectMetaModels() map[string]*spec.Schema {
	ref := func(name string) spec.Ref { return spec.MustCreateRef("#/components/schemas/" + name) }
	defs := generatedopenapi.GetOpenAPIDefinitions(ref) // keyed by OpenAPI model name
	out := map[string]*spec.Schema{}
	var add func(name string)
	add = func(name string) {
		if _, ok := out[name]; ok {
			return
		}
		def, ok := defs[name]
		if !ok {
			return
		}
		sch := def.Schema
		out[name] = &sch
		for _, dep := range def.Dependencies {
			add(dep)
		}
	}
	add(metav1.ObjectMeta{}.OpenAPIModelName())
	return out
}

// builtinTypeConverter is the schema of a built-in kind gvk:
// client-go's apply schema, apiextensions' for CustomResourceDefinition;
// a kind neither has (reviews, Scale, TokenRequest) is deduced from its
// objects (maps granular, lists atomic), as its fields are.
func (s *Server) builtinTypeConverter(gvk schema.GroupVersionKind) (managedfields.TypeConverter, error) {
	s.builtinTypesOnce.Do(func() { s.builtinTypes = applyconfigurations.NewTypeConverter(builtinScheme) })
	tc := s.builtinTypes
	if gvk.Group == apiextensionsv1.GroupName {
		s.apiextTypesOnce.Do(func() { s.apiextTypes, s.apiextTypesErr = apiextensionsTypeConverter() })
		if s.apiextTypesErr != nil {
			return nil, s.apiextTypesErr
		}
		tc = s.apiextTypes
	}
	if !hasSchema(tc, gvk) {
		tc = managedfields.NewDeducedTypeConverter()
	}
	return tc, nil
}

// subresourceFieldManager is the field manager of a subresource whose
// object is a kind of its own (autoscaling/v1 Scale of /scale,
// TokenRequest of serviceaccounts/token), one version, built at first use.
func (s *Server) subresourceFieldManager(gvk schema.GroupVersionKind, sub string) (*managedfields.FieldManager, error) {
	s.subFMMu.Lock()
	defer s.subFMMu.Unlock()
	key := gvk.String() + "/" + sub
	if fm := s.subFM[key]; fm != nil {
		return fm, nil
	}
	tc, err := s.builtinTypeConverter(gvk)
	if err != nil {
		return nil, err
	}
	conv := fmConverter{s: s}
	fm, err := managedfields.NewDefaultFieldManager(tc, conv, conv, conv, gvk, gvk.GroupVersion(), sub, nil)
	if err != nil {
		return nil, err
	}
	if s.subFM == nil {
		s.subFM = map[string]*managedfields.FieldManager{}
	}
	s.subFM[key] = fm
	return fm, nil
}

// manageScaleFields records a write of /scale (the Scale oldScale becoming
// newScale, or patch applied to it when apply) in the managedFields of
// parent, k's object in its stored form, as kube-apiserver does: the
// parent's managers of the replicas become the Scale's (a ScaleHandler),
// the Scale's field manager records the write, and its managers go back
// to the parent. It returns the new Scale (for an apply, the merged one).
func (s *Server) manageScaleFields(k *kind, parent, oldScale, newScale map[string]any, apply bool, wo *writeOpts) (map[string]any, error) {
	fm, err := s.subresourceFieldManager(scaleGVK, "scale")
	if err != nil {
		return nil, err
	}
	path := make([]any, len(k.scale.specReplicas))
	for i, p := range k.scale.specReplicas {
		path[i] = p
	}
	gv := k.gvr.GroupVersion()
	pu := &unstructured.Unstructured{Object: parent}
	h := managedfields.NewScaleHandler(pu.GetManagedFields(), gv, managedfields.ResourcePathMappings{gv.String(): fieldpath.MakePathOrDie(path...)})
	entries, err := h.ToSubresource()
	if err != nil {
		return nil, serverError(err)
	}
	oldU := &unstructured.Unstructured{Object: oldScale}
	oldU.SetManagedFields(entries)
	var out runtime.Object
	if apply {
		out, err = fm.Apply(oldU, &unstructured.Unstructured{Object: newScale}, wo.manager, wo.force)
		if err != nil {
			var st apierrors.APIStatus
			if errors.As(err, &st) {
				return nil, err
			}
			return nil, serverError(err)
		}
	} else if out, err = fm.Update(oldU, &unstructured.Unstructured{Object: newScale}, wo.manager); err != nil {
		s.opts.Logger.Debug("apiserver: field manager of /scale", "resource", k.gvr.String(), "err", err)
		return newScale, nil // the parent keeps its managers
	}
	ou, ok := out.(*unstructured.Unstructured)
	if !ok {
		return nil, serverError(errors.New("field manager returned no object"))
	}
	parentEntries, err := h.ToParent(ou.GetManagedFields())
	if err != nil {
		return nil, serverError(err)
	}
	pu.SetManagedFields(parentEntries)
	return ou.Object, nil
}
