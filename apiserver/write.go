package apiserver

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	sigsjson "sigs.k8s.io/json"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
)

// decodeBody decodes a request body into the served form of an object of k:
// a JSON object with this kind's apiVersion and kind. Built-in kinds go
// through their Go type, which checks field types, drops unknown fields and
// applies defaults as kube-apiserver's decoding does. Its errors are
// kube-apiserver's (see decodeFailure).
func (s *Server) decodeBody(k *kind, body []byte, wo *writeOpts) (map[string]any, error) {
	if k.newTyped != nil {
		if obj, ok := k.fastTyped(body); ok {
			return obj, nil
		}
		if obj, ok, err := s.decodeTypedPlain(k, body); ok {
			return obj, err
		}
	}
	var tm struct {
		APIVersion string `json:"apiVersion,omitempty"`
		Kind       string `json:"kind,omitempty"`
	}
	if err := json.Unmarshal(body, &tm); err != nil {
		return nil, badRequest("the object provided is unrecognized (must be of type %s): couldn't get version/kind; json parse error: %v (%s)", k.kind, err, wo.summary(body))
	}
	if k.newTyped != nil {
		return s.decodeTyped(k, body, tm.APIVersion, tm.Kind, wo)
	}
	obj, err := decodeMap(body)
	if err != nil {
		return nil, badRequest("the object provided is unrecognized (must be of type %s): %v (%s)", k.kind, err, wo.summary(body))
	}
	if tm.Kind == "" {
		return nil, badRequest("the object provided is unrecognized (must be of type %s): Object 'Kind' is missing in '%s' (%s)", k.kind, body, wo.summary(body))
	}
	gv, _ := schema.ParseGroupVersion(tm.APIVersion)
	if m, ok := obj["metadata"]; ok && m != nil {
		// Checked as kube-apiserver's decoder does, and with its messages:
		// the JSON of metadata read into ObjectMeta.
		raw, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("re-encoding metadata: %w", err)
		}
		var om metav1.ObjectMeta
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &om); err != nil {
			return nil, &decodeFailure{gvk: gv.WithKind(tm.Kind), target: k.kind, err: err}
		}
	}
	if tm.APIVersion != k.apiVersion() {
		if gv.Group == k.gvr.Group && k.crd != nil && !k.crd.hasVersion(gv.Version) {
			// kube-apiserver decodes the body as that version, which has
			// no schema: every field but apiVersion, kind and metadata is
			// unknown.
			var unknown []string
			for f := range obj {
				if f != "apiVersion" && f != "kind" && f != "metadata" {
					unknown = append(unknown, f)
				}
			}
			sort.Strings(unknown)
			if err := wo.unknownFields(k, unknownFieldMessages(unknown)); err != nil {
				return nil, err
			}
		}
		return nil, &versionMismatch{gvk: gv.WithKind(tm.Kind), name: jsontree.Str(obj, "metadata", "name"), k: k}
	}
	if tm.Kind != k.kind {
		// A custom resource of another kind fails validation.
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: gv.Group, Kind: tm.Kind}, jsontree.Str(obj, "metadata", "name"),
			field.ErrorList{field.Invalid(field.NewPath("kind"), tm.Kind, "must be "+k.kind)})
	}
	return obj, nil
}

// versionMismatch is a custom resource body of another apiVersion than the
// URL's. kube-apiserver refuses it with a 400 on a create or an update; a
// patch that changes apiVersion fails validation instead (invalid).
type versionMismatch struct {
	gvk  schema.GroupVersionKind // the body's
	name string
	k    *kind
}

func (v *versionMismatch) Error() string {
	return fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", v.gvk.GroupVersion(), v.k.apiVersion())
}

// Status makes a versionMismatch an API error (400 BadRequest).
func (v *versionMismatch) Status() metav1.Status {
	return apierrors.NewBadRequest(v.Error()).ErrStatus
}

// invalid is the 422 of a patched object whose apiVersion (and maybe kind)
// is not the URL's.
func (v *versionMismatch) invalid() error {
	var errs field.ErrorList
	if v.gvk.Kind != v.k.kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), v.gvk.Kind, "must be "+v.k.kind))
	}
	av := v.gvk.GroupVersion().String()
	if v.gvk.Empty() {
		av = ""
	}
	errs = append(errs, field.Invalid(field.NewPath("apiVersion"), av, "must be "+v.k.apiVersion()))
	return apierrors.NewInvalid(v.gvk.GroupKind(), v.name, errs)
}

// decodeFailure is a body that does not decode into its kind's Go type:
// kube-apiserver answers "<Kind> in version <v> cannot be handled as a
// <kind>: <reason>" (400), or, for the result of a patch, 422 Invalid.
type decodeFailure struct {
	gvk    schema.GroupVersionKind // the body's
	target string                  // the kind of the URL
	err    error
}

func (d *decodeFailure) Error() string {
	return fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", d.gvk.Kind, d.gvk.Version, d.target, d.err)
}

func (d *decodeFailure) Unwrap() error { return d.err }

// Status makes a decodeFailure an API error (400 BadRequest).
func (d *decodeFailure) Status() metav1.Status {
	return apierrors.NewBadRequest(d.Error()).ErrStatus
}

// decodeTyped decodes a built-in kind through its Go type. av and kd are
// the body's apiVersion and kind; missing ones are the URL's.
func (s *Server) decodeTyped(k *kind, body []byte, av, kd string, wo *writeOpts) (map[string]any, error) {
	gv, err := schema.ParseGroupVersion(av)
	if err != nil {
		return nil, badRequest("%v", err)
	}
	if av == "" {
		gv = k.gvr.GroupVersion()
	}
	if kd == "" {
		kd = k.kind
	}
	gvk := gv.WithKind(kd)
	if gvk != k.gvr.GroupVersion().WithKind(k.kind) {
		if !builtinScheme.Recognizes(gvk) {
			return nil, &decodeFailure{gvk: gvk, target: k.kind, err: fmt.Errorf("no kind %q is registered for version %q in scheme \"pkg/runtime/scheme.go:111\"", gvk.Kind, gvk.GroupVersion())}
		}
		return nil, &decodeFailure{gvk: gvk, target: k.kind, err: fmt.Errorf("converting (%s.%s) to (%s.%s): unknown conversion", gvk.Version, gvk.Kind, internalPackage(k.gvr.Group), k.kind)}
	}
	typed := k.newTyped()
	strict, err := sigsjson.UnmarshalStrict(body, typed, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, &decodeFailure{gvk: gvk, target: k.kind, err: err}
	}
	if wo != nil {
		var problems []string
		for _, e := range strict {
			problems = append(problems, e.Error())
		}
		if err := wo.unknownFields(k, problems); err != nil {
			return nil, err
		}
	}
	ro, ok := typed.(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not a runtime.Object", typed)
	}
	ro.GetObjectKind().SetGroupVersionKind(gvk)
	defaultTyped(typed)
	obj, err := toMap(typed)
	if err != nil {
		return nil, fmt.Errorf("re-encoding %s: %w", k.kind, err)
	}
	return obj, nil
}

// decodeTypedPlain is decodeTyped for the usual body, in one decoding: it
// decodes the body into k's Go type first and, when that finds nothing to
// say (no unknown or duplicate field), takes apiVersion and kind from it —
// what kube-apiserver's case-insensitive reading of them finds too, as no
// other key can match them. ok is false otherwise (nothing was decided:
// decodeBody goes the long way, for kube-apiserver's errors and warnings).
func (s *Server) decodeTypedPlain(k *kind, body []byte) (obj map[string]any, ok bool, err error) {
	typed := k.newTyped()
	strict, err := sigsjson.UnmarshalStrict(body, typed, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil || len(strict) > 0 {
		return nil, false, nil
	}
	ro, isObj := typed.(runtime.Object)
	if !isObj {
		return nil, false, nil
	}
	gvk := ro.GetObjectKind().GroupVersionKind()
	av, kd := gvk.GroupVersion().String(), gvk.Kind
	if gvk.Empty() {
		av = ""
	}
	if av == "" || kd == "" || gvk != k.gvr.GroupVersion().WithKind(k.kind) {
		return nil, false, nil // defaults or another kind: decodeTyped's errors
	}
	defaultTyped(typed)
	if obj, err = toMap(typed); err != nil {
		return nil, true, fmt.Errorf("re-encoding %s: %w", k.kind, err)
	}
	return obj, true, nil
}

// builtinScheme knows every built-in kind of kube-apiserver, to tell a
// body of another built-in kind from one of an unknown kind.
var builtinScheme = clientscheme.Scheme

// internalPackage names the internal API package of a group in
// kube-apiserver's conversion errors.
func internalPackage(group string) string {
	if group == "" {
		return "core"
	}
	name, _, _ := strings.Cut(group, ".")
	return name
}

// summarizeData is how kube-apiserver quotes a body it cannot decode.
func summarizeData(data []byte, maxLength int) string {
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		if len(data) > maxLength {
			return string(data[:maxLength]) + " ..."
		}
		return string(data)
	default:
		if len(data) > maxLength {
			return hex.EncodeToString(data[:maxLength]) + " ..."
		}
		return hex.EncodeToString(data)
	}
}

// toStorage converts a served object into its stored form.
func (s *Server) toStorage(k *kind, obj map[string]any) (map[string]any, error) {
	if k.convert != nil {
		var err error
		if obj, err = k.convert.toStorage(obj); err != nil {
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

// writeOpts are the options of a create, update or patch request.
type writeOpts struct {
	dryRun bool
	// fieldValidation is Strict (unknown fields are an error), Warn (a
	// Warning header) or Ignore; kube-apiserver's default is Warn.
	fieldValidation string
	// warnings collects the Warning headers of the response.
	warnings map[string]bool
	// original is the request body as sent when it was not JSON (YAML),
	// nil otherwise: decoding errors summarize it, as kube-apiserver's do.
	original []byte
}

// summary is kube-apiserver's summary of a request body that did not
// decode: of the body as sent.
func (wo *writeOpts) summary(body []byte) string {
	if wo != nil && wo.original != nil {
		body = wo.original
	}
	return summarizeData(body, 30)
}

// writeOptions reads the dryRun and fieldValidation parameters.
func writeOptions(q url.Values, verb string) (*writeOpts, error) {
	dry, fv, fm := q["dryRun"], q.Get("fieldValidation"), q.Get("fieldManager")
	if len(dry) == 0 && fv == "" && fm == "" { // nothing to validate
		return &writeOpts{fieldValidation: metav1.FieldValidationWarn}, nil
	}
	var errs field.ErrorList
	switch verb {
	case "Create":
		errs = metavalidation.ValidateCreateOptions(&metav1.CreateOptions{DryRun: dry, FieldValidation: fv, FieldManager: fm})
	case "Update":
		errs = metavalidation.ValidateUpdateOptions(&metav1.UpdateOptions{DryRun: dry, FieldValidation: fv, FieldManager: fm})
	default:
		errs = metavalidation.ValidatePatchOptions(&metav1.PatchOptions{DryRun: dry, FieldValidation: fv, FieldManager: fm}, types.MergePatchType)
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: verb + "Options"}, "", errs)
	}
	wo := &writeOpts{dryRun: len(dry) > 0, fieldValidation: metav1.FieldValidationWarn}
	if fv != "" {
		wo.fieldValidation = fv
	}
	return wo, nil
}

// unknownFields applies the field validation to the unknown (or duplicate)
// fields found while decoding an object of k.
func (wo *writeOpts) unknownFields(k *kind, problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	switch wo.fieldValidation {
	case metav1.FieldValidationStrict:
		return badRequest("%s in version %q cannot be handled as a %s: strict decoding error: %s", k.kind, k.gvr.Version, k.kind, strings.Join(problems, ", "))
	case metav1.FieldValidationWarn:
		if wo.warnings == nil {
			wo.warnings = map[string]bool{}
		}
		for _, p := range problems {
			wo.warnings[p] = true
		}
	}
	return nil
}

// strategyWarnings collects the warnings kube-apiserver's strategy for k
// gives about a valid object being written.
func (wo *writeOpts) strategyWarnings(k *kind, obj map[string]any) {
	if k.warnings == nil {
		return
	}
	for _, msg := range k.warnings(obj) {
		if wo.warnings == nil {
			wo.warnings = map[string]bool{}
		}
		wo.warnings[msg] = true
	}
}

// writeWarnings sets the Warning headers collected by wo.
func writeWarnings(w http.ResponseWriter, wo *writeOpts) {
	msgs := make([]string, 0, len(wo.warnings))
	for m := range wo.warnings {
		msgs = append(msgs, m)
	}
	sort.Strings(msgs)
	for _, m := range msgs {
		w.Header().Add("Warning", `299 - `+strconv.Quote(m))
	}
}

// warnOnError writes the warnings collected before a write failed: as
// kube-apiserver, a request's warnings are sent with its error too (an
// unknown field reported with the 422 of an invalid object).
func warnOnError(w http.ResponseWriter, wo *writeOpts, err *error) {
	if *err != nil {
		writeWarnings(w, wo)
	}
}

func unknownFieldMessages(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = fmt.Sprintf("unknown field %q", p)
	}
	return out
}

func (s *Server) serveCreate(w http.ResponseWriter, r *http.Request, k *kind, ns string, q url.Values) (err error) {
	wo, err := writeOptions(q, "Create")
	if err != nil {
		return err
	}
	defer warnOnError(w, wo, &err)
	body, original, err := s.readObjectBody(r, k.kind)
	if err != nil {
		return err
	}
	wo.original = original
	obj, err := s.decodeBody(k, body, wo)
	if err != nil {
		return err
	}
	if k.review != nil {
		out, err := k.review(obj, s.opts.Now())
		if err != nil {
			return err
		}
		writeWarnings(w, wo)
		writeObject(w, http.StatusCreated, out)
		return nil
	}
	if obj, err = s.toStorage(k, obj); err != nil {
		return err
	}
	o, err := s.create(k, obj, ns, wo)
	if err != nil {
		return err
	}
	out, err := s.output(k, o)
	if err != nil {
		return err
	}
	writeWarnings(w, wo)
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// create stores a new object (stored form) of k in namespace ns.
func (s *Server) create(k *kind, obj map[string]any, ns string, wo *writeOpts) (*storage.Object, error) {
	u := &unstructured.Unstructured{Object: obj}
	m := meta(obj)
	if k.namespaced {
		switch objNS := u.GetNamespace(); {
		case objNS == "":
			u.SetNamespace(ns)
		case objNS != ns:
			return nil, badRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
	} else {
		delete(m, "namespace")
	}
	if rv := u.GetResourceVersion(); rv != "" {
		// kube-apiserver's storage refuses it, with a 500.
		return nil, serverError(errors.New("resourceVersion should not be set on objects to be created"))
	}
	generate := u.GetName() == "" && u.GetGenerateName() != ""
	for _, f := range []string{"uid", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "managedFields", "generation"} {
		delete(m, f)
	}
	m["uid"] = string(uuid.NewUUID())
	m["creationTimestamp"] = s.opts.Now().UTC().Format(time.RFC3339)
	if k.generation || k.crd != nil {
		m["generation"] = int64(1)
	}
	if k.status && k.crd != nil {
		delete(obj, "status")
	}
	if k.prepareCreate != nil {
		k.prepareCreate(obj)
	}
	if k.crd != nil {
		if err := wo.unknownFields(k, unknownFieldMessages(k.crd.defaultAndPrune(obj))); err != nil {
			return nil, err
		}
	}
	if k.normalize != nil {
		var err error
		if obj, err = k.normalize(obj); err != nil {
			return nil, err
		}
		u.Object = obj
	}
	if k.gvr == namespaceGVR && u.GetName() != "" {
		lbls := u.GetLabels()
		if lbls == nil {
			lbls = map[string]string{}
		}
		lbls["kubernetes.io/metadata.name"] = u.GetName()
		u.SetLabels(lbls)
	}
	for attempt := 0; ; attempt++ {
		if generate {
			u.SetName(u.GetGenerateName() + randomSuffix())
		}
		if err := s.validate(k, u, nil); err != nil {
			return nil, err
		}
		wo.strategyWarnings(k, obj)
		if k.namespaced {
			if err := s.checkNamespace(u.GetNamespace()); err != nil {
				return nil, err
			}
		}
		if err := s.admitCreate(k, obj); err != nil {
			return nil, err
		}
		if wo.dryRun {
			s.undoAdmission(k, obj)
			enc, err := k.encoder(obj)(0)
			if err != nil {
				return nil, err
			}
			delete(meta(obj), "resourceVersion")
			enc.Data, err = json.Marshal(obj)
			return enc, err
		}
		o, err := s.store.Create(k.storageResource, u.GetNamespace(), u.GetName(), k.encoder(obj))
		if err != nil {
			s.undoAdmission(k, obj)
		}
		if generate && errors.Is(err, storage.ErrAlreadyExists) && attempt < 8 {
			continue
		}
		if errors.Is(err, storage.ErrAlreadyExists) {
			return nil, apierrors.NewAlreadyExists(k.groupResource(), u.GetName())
		}
		if err == nil {
			s.afterWrite(k, nil, o)
		}
		return o, err
	}
}

// validate runs metadata and kind validation; old is nil on create.
func (s *Server) validate(k *kind, u, old *unstructured.Unstructured) error {
	var errs field.ErrorList
	if old == nil {
		errs = apivalidation.ValidateObjectMetaAccessor(u, k.namespaced, k.nameValidation, field.NewPath("metadata"))
	} else {
		errs = validateMetaUpdate(u, old, field.NewPath("metadata"))
	}
	if k.validate != nil {
		errs = append(errs, k.validate(u.Object)...)
	}
	if old != nil && k.validateUpdate != nil {
		errs = append(errs, k.validateUpdate(u.Object, old.Object)...)
	}
	if k.crd != nil {
		errs = append(errs, k.crd.validate(u.Object)...)
		if k.scale != nil {
			errs = append(errs, k.scale.check(u.Object)...)
		}
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

// checkNamespace refuses writes into a namespace that is missing or terminating.
func (s *Server) checkNamespace(ns string) error {
	o, err := s.store.Get("/namespaces", "", ns)
	if errors.Is(err, storage.ErrNotFound) {
		return apierrors.NewNotFound(namespaceGVR.GroupResource(), ns)
	}
	if err != nil {
		return err
	}
	if terminating(o) {
		st := apierrors.NewForbidden(namespaceGVR.GroupResource(), ns, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", ns))
		st.ErrStatus.Details.Causes = append(st.ErrStatus.Details.Causes, metav1.StatusCause{Type: "NamespaceTerminating", Field: "metadata.namespace", Message: fmt.Sprintf("namespace %s is being terminated", ns)})
		return st
	}
	return nil
}

// terminating reports whether a stored object has a deletionTimestamp. It
// reads the bytes without decoding the whole object.
func terminating(o *storage.Object) bool {
	var m struct {
		Metadata struct {
			DeletionTimestamp *string `json:"deletionTimestamp"`
		} `json:"metadata"`
	}
	return json.Unmarshal(o.Data, &m) == nil && m.Metadata.DeletionTimestamp != nil
}

const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func randomSuffix() string {
	b := make([]byte, 5)
	for i := range b {
		b[i] = suffixAlphabet[rand.IntN(len(suffixAlphabet))]
	}
	return string(b)
}

func (s *Server) serveUpdate(w http.ResponseWriter, r *http.Request, k *kind, ri requestInfo, q url.Values) (err error) {
	wo, err := writeOptions(q, "Update")
	if err != nil {
		return err
	}
	defer warnOnError(w, wo, &err)
	body, original, err := s.readObjectBody(r, k.kind)
	if err != nil {
		return err
	}
	wo.original = original
	if ri.subresource == "scale" {
		return s.updateScale(w, k, ri.namespace, ri.name, body, nil, wo)
	}
	obj, err := s.decodeBody(k, body, wo)
	if err != nil {
		return err
	}
	if obj, err = s.toStorage(k, obj); err != nil {
		return err
	}
	o, err := s.update(k, ri, wo, func(*storage.Object) (map[string]any, error) {
		if obj != nil { // the first attempt takes the decoded body as it is
			next := obj
			obj = nil
			return next, nil
		}
		// Another attempt (the object changed meanwhile) starts again from
		// the body: the first one changed obj.
		next, err := s.decodeBody(k, body, wo)
		if err != nil {
			return nil, err
		}
		return s.toStorage(k, next)
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

// update writes a new state computed by next (stored form) from the current
// stored object, with kube-apiserver's update rules for the main resource or
// the status subresource. next may run more than once.
func (s *Server) update(k *kind, ri requestInfo, wo *writeOpts, next func(cur *storage.Object) (map[string]any, error)) (*storage.Object, error) {
	var dryResult *storage.Object
	var oldObj *storage.Object
	var written map[string]any // the state encoded by the last attempt
	o, deleted, err := s.store.Write(k.storageResource, ri.namespace, ri.name, func(cur *storage.Object) (storage.EncodeFunc, bool, error) {
		oldObj = cur
		obj, err := next(cur)
		if err != nil {
			return nil, false, err
		}
		old, ok := s.decoded.get(cur) // read-only
		if !ok {
			if old, err = decodeMap(cur.Data); err != nil {
				return nil, false, fmt.Errorf("decoding stored object: %w", err)
			}
		}
		obj, changed, del, err := s.prepareUpdate(k, ri, obj, old, cur, wo)
		if err != nil || !changed {
			return nil, false, err
		}
		if wo.dryRun {
			dryResult, err = k.encoder(obj)(cur.ResourceVersion)
			return nil, false, err
		}
		written = obj
		return k.encoder(obj), del, nil
	})
	if err != nil {
		return nil, err
	}
	if dryResult != nil {
		return dryResult, nil
	}
	if o != oldObj { // written
		if !deleted {
			s.decoded.put(o, written)
		}
		s.afterWrite(k, oldObj, o)
		if deleted {
			s.afterDelete(k, o)
			// kube-apiserver answers an update that ends a deletion (the
			// last finalizer removed) with the new state at the revision
			// it replaced.
			m, err := decodeMap(o.Data)
			if err != nil {
				return nil, fmt.Errorf("decoding stored object: %w", err)
			}
			meta(m)["resourceVersion"] = formatRV(oldObj.ResourceVersion)
			resp := *o
			if resp.Data, err = json.Marshal(m); err != nil {
				return nil, err
			}
			resp.ResourceVersion = oldObj.ResourceVersion
			return &resp, nil
		}
	}
	return o, nil
}

// prepareUpdate applies the update rules to obj (the requested new state,
// stored form) given the current state old, which it does not modify (it
// may be shared: see decodedCache). It reports whether anything
// changed and whether the object is now deleted (finalizers emptied while
// deleting).
func (s *Server) prepareUpdate(k *kind, ri requestInfo, obj, old map[string]any, cur *storage.Object, wo *writeOpts) (map[string]any, bool, bool, error) {
	u, oldU := &unstructured.Unstructured{Object: obj}, &unstructured.Unstructured{Object: old}
	gr := k.groupResource()
	if name := u.GetName(); name != ri.name {
		return nil, false, false, badRequest("the name of the object (%s) does not match the name on the URL (%s)", name, ri.name)
	}
	if k.namespaced {
		switch ns := u.GetNamespace(); {
		case ns == "":
			u.SetNamespace(ri.namespace)
		case ns != ri.namespace:
			return nil, false, false, badRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
	} else {
		delete(meta(obj), "namespace")
	}
	if u.GetResourceVersion() == "" && k.requireResourceVersion {
		// Leases, CRDs and custom resources take no unconditional update.
		return nil, false, false, apierrors.NewInvalid(schema.GroupKind{Group: k.gvr.Group, Kind: k.gvr.Resource}, ri.name,
			field.ErrorList{field.Invalid(field.NewPath("metadata", "resourceVersion"), 0, "must be specified for an update")})
	}
	if rv := u.GetResourceVersion(); rv != "" {
		if _, err := strconv.ParseUint(rv, 10, 64); err != nil {
			return nil, false, false, serverError(err) // kube-apiserver's storage answers 500
		}
	}
	if rv := u.GetResourceVersion(); rv != "" && rv != formatRV(cur.ResourceVersion) {
		return nil, false, false, apierrors.NewConflict(gr, ri.name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	switch {
	case ri.subresource == "status" && k.crd != nil:
		// Custom resources: only the status changes.
		next := runtime.DeepCopyJSON(old)
		if st, ok := obj["status"]; ok {
			next["status"] = st
		} else {
			delete(next, "status")
		}
		obj = next
		u = &unstructured.Unstructured{Object: obj}
	case ri.subresource == "status":
		// Built-ins: the spec (everything but metadata and status) stays;
		// metadata follows the update rules, except what the kind's status
		// strategy keeps (kube-apiserver's PrepareForUpdate).
		for key, v := range old {
			if key != "metadata" && key != "status" {
				obj[key] = runtime.DeepCopyJSONValue(v)
			}
		}
		for key := range obj {
			if _, ok := old[key]; !ok && key != "metadata" && key != "status" {
				delete(obj, key)
			}
		}
		m, om := meta(obj), meta(old)
		for _, f := range k.statusKeepsMeta {
			if v, ok := om[f]; ok {
				m[f] = runtime.DeepCopyJSONValue(v)
			} else {
				delete(m, f)
			}
		}
	case k.status:
		// The main resource ignores the status.
		if st, ok := old["status"]; ok {
			obj["status"] = runtime.DeepCopyJSONValue(st)
		} else {
			delete(obj, "status")
		}
	}
	m, om := meta(obj), meta(old)
	if u.GetUID() == "" {
		m["uid"] = om["uid"]
	}
	for _, f := range []string{"creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation", "managedFields"} {
		if v, ok := om[f]; ok {
			m[f] = runtime.DeepCopyJSONValue(v) // old is read-only
		} else {
			delete(m, f)
		}
	}
	delete(m, "selfLink")
	if k.crd != nil {
		if err := wo.unknownFields(k, unknownFieldMessages(k.crd.defaultAndPrune(obj))); err != nil {
			return nil, false, false, err
		}
	}
	if k.normalize != nil {
		var err error
		if obj, err = k.normalize(obj); err != nil {
			return nil, false, false, err
		}
		u.Object = obj
		m = meta(obj)
	}
	m["resourceVersion"] = om["resourceVersion"]
	if k.carryOver != nil {
		k.carryOver(obj, old)
	}
	if err := s.validate(k, u, oldU); err != nil {
		return nil, false, false, err
	}
	if ri.subresource == "" {
		wo.strategyWarnings(k, obj)
	}
	if _, ok := om["generation"]; ok && (specChanged(k, obj, old) ||
		k.annotationsMoveGeneration && ri.subresource == "" && !jsontree.Equal(m["annotations"], om["annotations"])) {
		m["generation"] = jsontree.Int(old, "metadata", "generation") + 1
	}
	if jsontree.Equal(obj, old) {
		return obj, false, false, nil
	}
	del := u.GetDeletionTimestamp() != nil && len(u.GetFinalizers()) == 0
	if del && k.gvr == namespaceGVR && !s.namespaceEmpty(ri.name) {
		del = false // a terminating namespace goes once its content is gone
	}
	return obj, true, del, nil
}

// specChanged reports whether anything outside metadata (and status, when it
// is a subresource) differs.
func specChanged(k *kind, obj, old map[string]any) bool {
	for key, v := range obj {
		if key == "metadata" || (k.status && key == "status") {
			continue
		}
		if ov, ok := old[key]; !ok || !jsontree.Equal(v, ov) {
			return true
		}
	}
	for key := range old {
		if key == "metadata" || (k.status && key == "status") {
			continue
		}
		if _, ok := obj[key]; !ok {
			return true
		}
	}
	return false
}

func (s *Server) serveDelete(w http.ResponseWriter, r *http.Request, k *kind, ns, name string, q url.Values) error {
	opts, err := s.deleteOptions(r, q)
	if err != nil {
		return err
	}
	o, deleted, err := s.delete(k, ns, name, opts)
	if err != nil {
		return err
	}
	if deleted && !k.returnsDeleted {
		// kube-apiserver answers the immediate deletion of most kinds with
		// a Success Status naming the object (details.kind is the resource).
		writeObject(w, http.StatusOK, &metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusSuccess,
			Details:  &metav1.StatusDetails{Name: name, Group: k.gvr.Group, Kind: k.gvr.Resource, UID: types.UID(o.UID)},
		})
		return nil
	}
	out, err := s.output(k, o)
	if err != nil {
		return err
	}
	code := http.StatusOK
	//nolint:staticcheck // kube-apiserver answers 202 only for the deprecated orphanDependents=false
	if !deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents {
		code = http.StatusAccepted
	}
	writeJSON(w, code, out)
	return nil
}

// deleteOptions reads DeleteOptions from the body (if any) and the query.
func (s *Server) deleteOptions(r *http.Request, q url.Values) (metav1.DeleteOptions, error) {
	var opts metav1.DeleteOptions
	body, _, err := s.readObjectBody(r, "DeleteOptions")
	if err != nil {
		return opts, err
	}
	if len(body) > 0 {
		// As kube-apiserver: options come from the body when there is one,
		// else from the query.
		var tm struct {
			APIVersion string `json:"apiVersion,omitempty"`
			Kind       string `json:"kind,omitempty"`
		}
		if err := json.Unmarshal(body, &tm); err != nil {
			return opts, badRequest("couldn't get version/kind; json parse error: %v", err)
		}
		if err := json.Unmarshal(body, &opts); err != nil {
			return opts, badRequest("%v", err)
		}
	} else {
		if v := q.Get("propagationPolicy"); v != "" {
			p := metav1.DeletionPropagation(v)
			opts.PropagationPolicy = &p
		}
		opts.DryRun = q["dryRun"]
		if v := q.Get("gracePeriodSeconds"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return opts, badRequest("%v", err)
			}
			opts.GracePeriodSeconds = &n
		}
	}
	if errs := metavalidation.ValidateDeleteOptions(&opts); len(errs) > 0 {
		return opts, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", errs)
	}
	return opts, nil
}

// delete deletes an object, or marks it deleted (deletionTimestamp) while it
// has finalizers. It reports whether the object is gone.
func (s *Server) delete(k *kind, ns, name string, opts metav1.DeleteOptions) (*storage.Object, bool, error) {
	dry := len(opts.DryRun) > 0
	var marked *storage.Object // the graceful deletion's first write
	if k.gracefulDelete && !dry {
		// As kube-apiserver deletes pods: an update first records the
		// deletion (deletionTimestamp, the grace period, generation + 1);
		// with a grace period of 0 (a pod no node runs, or asked for) the
		// object is then deleted, else it stays until a deletion with a
		// shorter period.
		proceed := false
		var cur *storage.Object
		o, _, err := s.store.Write(k.storageResource, ns, name, func(c *storage.Object) (storage.EncodeFunc, bool, error) {
			cur, proceed = c, false
			if err := checkDeletePreconditions(k, name, opts, c); err != nil {
				return nil, false, err
			}
			obj, err := decodeMap(c.Data)
			if err != nil {
				return nil, false, fmt.Errorf("decoding stored object: %w", err)
			}
			u := &unstructured.Unstructured{Object: obj}
			if ts := u.GetDeletionTimestamp(); ts != nil {
				d := u.GetDeletionGracePeriodSeconds()
				if d == nil || *d == 0 {
					proceed = true
					return nil, false, nil
				}
				if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds >= *d {
					return nil, false, nil // pending; only a shorter period changes it
				}
				period := max(*opts.GracePeriodSeconds, 0)
				next := ts.Add(-time.Duration(*d) * time.Second).Add(time.Duration(period) * time.Second)
				if now := s.opts.Now(); next.Before(now) {
					next = now
					if period != 0 {
						period = 1
					}
				}
				nts := metav1.NewTime(next)
				u.SetDeletionTimestamp(&nts)
				u.SetDeletionGracePeriodSeconds(&period)
				proceed = period == 0
				return k.encoder(obj), false, nil
			}
			grace := podGracePeriod(obj, opts)
			nts := metav1.NewTime(s.opts.Now().Add(time.Duration(grace) * time.Second))
			u.SetDeletionTimestamp(&nts)
			u.SetDeletionGracePeriodSeconds(&grace)
			if g := u.GetGeneration(); g > 0 {
				u.SetGeneration(g + 1)
			}
			proceed = grace == 0
			return k.encoder(obj), false, nil
		})
		if err != nil {
			return nil, false, err
		}
		if o != cur {
			s.afterWrite(k, cur, o)
			marked = o
			opts.Preconditions = nil // checked; the revision is now ours
		}
		if !proceed {
			return o, false, nil
		}
	}
	var before *storage.Object
	dryDeleted := false // a dry run that would delete at once
	gcPending := ""     // the garbage collector's finalizer this deletion added
	o, deleted, err := s.store.Write(k.storageResource, ns, name, func(cur *storage.Object) (storage.EncodeFunc, bool, error) {
		before = cur
		if err := checkDeletePreconditions(k, name, opts, cur); err != nil {
			return nil, false, err
		}
		obj, err := decodeMap(cur.Data)
		if err != nil {
			return nil, false, fmt.Errorf("decoding stored object: %w", err)
		}
		u := &unstructured.Unstructured{Object: obj}
		isNS, isCRD := k.gvr == namespaceGVR, k.gvr == crdGVR
		if dry {
			dryDeleted = !isNS && !isCRD && len(u.GetFinalizers()) == 0
			return nil, false, nil
		}
		if f := gcFinalizer(opts); f != "" && !isNS && !isCRD {
			// Foreground and orphan deletions wait for the garbage
			// collector, which removes their finalizer (below).
			if slices.Contains(u.GetFinalizers(), f) {
				return nil, false, nil
			}
			u.SetFinalizers(append(u.GetFinalizers(), f))
			if u.GetDeletionTimestamp() == nil {
				s.markDeleted(u)
			}
			gcPending = f
			return k.encoder(obj), false, nil
		}
		switch {
		case isNS && u.GetDeletionTimestamp() == nil:
			// A namespace first terminates: its content is deleted below.
		case isCRD && u.GetDeletionTimestamp() == nil:
			// A CRD keeps a finalizer until its objects are deleted below.
			if !slices.Contains(u.GetFinalizers(), crdCleanupFinalizer) {
				u.SetFinalizers(append(u.GetFinalizers(), crdCleanupFinalizer))
			}
		case len(u.GetFinalizers()) == 0 && (!isNS || s.namespaceEmpty(name)):
			return k.encoder(obj), true, nil
		case u.GetDeletionTimestamp() != nil:
			return nil, false, nil // deletion already in progress
		}
		s.markDeleted(u)
		if k.gvr == namespaceGVR {
			jsontree.Set(obj, "Terminating", "status", "phase")
		}
		return k.encoder(obj), false, nil
	})
	if err != nil {
		return nil, false, err
	}
	if dryDeleted {
		return o, true, nil
	}
	if deleted {
		s.decoded.forget(ns, name)
	}
	if marked != nil && deleted {
		// The answer is the deleted object: the marked state at the
		// deletion's revision, as kube-apiserver's.
		s.afterDelete(k, o)
		return o, true, nil
	}
	if gcPending != "" {
		// The answer shows the finalizer, as kube-apiserver's; then the
		// garbage collector's part runs at once. The embedded server
		// tracks no dependents (no garbage collection yet), so none
		// blocks the owner: the finalizer goes, and with it the object
		// if no other finalizer holds it.
		s.afterWrite(k, before, o)
		s.removeFinalizer(k, ns, name, gcPending)
		return o, false, nil
	}
	if o != before {
		s.afterWrite(k, before, o)
	}
	switch {
	case deleted:
		s.afterDelete(k, o)
	case dry || o == before:
	case k.gvr == namespaceGVR:
		s.deleteNamespaceContent(name)
	case k.gvr == crdGVR:
		s.deleteCRDContent(name)
	}
	return o, deleted, nil
}

// checkDeletePreconditions checks the uid and resourceVersion
// preconditions of a deletion, with kube-apiserver's messages (which name
// the kind, not the resource).
func checkDeletePreconditions(k *kind, name string, opts metav1.DeleteOptions, cur *storage.Object) error {
	p := opts.Preconditions
	if p == nil {
		return nil
	}
	gk := schema.GroupResource{Group: k.gvr.Group, Resource: k.kind}
	if p.UID != nil && string(*p.UID) != cur.UID {
		return apierrors.NewConflict(gk, name, fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, cur.UID))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != formatRV(cur.ResourceVersion) {
		return apierrors.NewConflict(gk, name, fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%d). The object might have been modified", *p.ResourceVersion, cur.ResourceVersion))
	}
	return nil
}

// gcFinalizer is the finalizer a deletion's propagation policy asks the
// garbage collector to handle: foregroundDeletion or orphan.
func gcFinalizer(opts metav1.DeleteOptions) string {
	p := opts.PropagationPolicy
	switch {
	case p != nil && *p == metav1.DeletePropagationForeground:
		return metav1.FinalizerDeleteDependents
	case p != nil && *p == metav1.DeletePropagationOrphan:
		return metav1.FinalizerOrphanDependents
	}
	return ""
}

// removeFinalizer removes a finalizer from an object, deleting the object if
// it is being deleted and nothing else holds it.
func (s *Server) removeFinalizer(k *kind, ns, name, finalizer string) {
	var before *storage.Object
	o, deleted, err := s.store.Write(k.storageResource, ns, name, func(cur *storage.Object) (storage.EncodeFunc, bool, error) {
		before = cur
		obj, err := decodeMap(cur.Data)
		if err != nil {
			return nil, false, fmt.Errorf("decoding stored object: %w", err)
		}
		u := &unstructured.Unstructured{Object: obj}
		fs := u.GetFinalizers()
		i := slices.Index(fs, finalizer)
		if i < 0 {
			return nil, false, nil
		}
		if fs = slices.Delete(fs, i, i+1); len(fs) == 0 {
			fs = nil // no empty list left behind
		}
		u.SetFinalizers(fs)
		return k.encoder(obj), u.GetDeletionTimestamp() != nil && len(u.GetFinalizers()) == 0, nil
	})
	if err != nil {
		if !errors.Is(err, storage.ErrNotFound) {
			s.opts.Logger.Error("apiserver: removing a finalizer", "resource", k.gvr.String(), "namespace", ns, "name", name, "finalizer", finalizer, "err", err)
		}
		return
	}
	if o != before {
		s.afterWrite(k, before, o)
		if deleted {
			s.afterDelete(k, o)
		}
	}
}

// podGracePeriod is the grace period of a pod's deletion, as kube-apiserver's
// pod strategy computes it: the one asked for, else the pod's
// terminationGracePeriodSeconds; 0 for a pod no node runs or that ended.
func podGracePeriod(obj map[string]any, opts metav1.DeleteOptions) int64 {
	var period int64
	if p := opts.GracePeriodSeconds; p != nil {
		period = *p
	} else if _, ok := jsontree.Get(obj, "spec", "terminationGracePeriodSeconds").(int64); ok {
		period = jsontree.Int(obj, "spec", "terminationGracePeriodSeconds")
	}
	if jsontree.Str(obj, "spec", "nodeName") == "" {
		period = 0
	}
	if ph := jsontree.Str(obj, "status", "phase"); ph == "Failed" || ph == "Succeeded" {
		period = 0
	}
	if period < 0 {
		period = 1
	}
	return period
}

// markDeleted records a deletion in an object's metadata: deletionTimestamp
// now, grace period 0, generation + 1 where generations are kept.
func (s *Server) markDeleted(u *unstructured.Unstructured) {
	now := metav1.NewTime(s.opts.Now())
	u.SetDeletionTimestamp(&now)
	zero := int64(0)
	u.SetDeletionGracePeriodSeconds(&zero)
	if g := u.GetGeneration(); g > 0 {
		u.SetGeneration(g + 1)
	}
}

func (s *Server) serveDeleteCollection(w http.ResponseWriter, r *http.Request, k *kind, ns string, q url.Values) error {
	opts, err := s.deleteOptions(r, q)
	if err != nil {
		return err
	}
	pred, err := s.predicate(k, q)
	if err != nil {
		return err
	}
	res, err := s.store.List(k.storageResource, storage.ListOptions{Namespace: ns, Predicate: pred})
	if err != nil {
		return err
	}
	// As kube-apiserver: the list of what was deleted, each item as it was
	// listed (or its new state if a finalizer holds it), at the list's
	// revision.
	var buf bytes.Buffer
	lm, err := json.Marshal(metav1.ListMeta{ResourceVersion: formatRV(res.Revision)})
	if err != nil {
		return err
	}
	fmt.Fprintf(&buf, `{"kind":%q,"apiVersion":%q,"metadata":%s,"items":[`, k.listKind, k.apiVersion(), lm)
	n := 0
	for _, o := range res.Objects {
		d, deleted, err := s.delete(k, o.Namespace, o.Name, opts)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if deleted {
			d = o
		}
		b, err := s.output(k, d)
		if err != nil {
			return err
		}
		if k.crd == nil {
			b = jsontree.StripTypeMeta(b)
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		buf.Write(b)
		n++
	}
	buf.WriteString("]}")
	writeJSON(w, http.StatusOK, buf.Bytes())
	return nil
}
