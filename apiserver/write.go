package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"

	"kloop.dev/kloop/apiserver/storage"
)

// decodeBody decodes a request body into the served form of an object of k:
// a JSON object with this kind's apiVersion and kind. Built-in kinds go
// through their Go type, which checks field types and drops unknown fields
// as kube-apiserver does.
func (s *Server) decodeBody(k *kind, body []byte, wo *writeOpts) (map[string]any, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, badRequest("the body of the request was in an unknown format: expected a JSON object (%q)", truncate(body, 100))
	}
	if k.newTyped != nil {
		return s.decodeTyped(k, body, wo)
	}
	obj, err := decodeMap(body)
	if err != nil {
		return nil, badRequest("the body of the request was in an unknown format: %v", err)
	}
	av, _ := obj["apiVersion"].(string)
	kd, _ := obj["kind"].(string)
	if err := checkTypeMeta(k, av, kd, body); err != nil {
		return nil, err
	}
	if m, ok := obj["metadata"]; ok && m != nil {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil, badRequest("invalid metadata: must be an object")
		}
		var om metav1.ObjectMeta
		if err := fromMap(mm, &om); err != nil {
			return nil, badRequest("invalid metadata: %v", err)
		}
	}
	return obj, nil
}

// decodeTyped decodes a built-in kind through its Go type.
func (s *Server) decodeTyped(k *kind, body []byte, wo *writeOpts) (map[string]any, error) {
	typed := k.newTyped()
	strict, err := sigsjson.UnmarshalStrict(body, typed, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, badRequest("the body of the request was in an unknown format: %v", err)
	}
	ro, ok := typed.(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not a runtime.Object", typed)
	}
	gvk := ro.GetObjectKind().GroupVersionKind()
	if err := checkTypeMeta(k, gvk.GroupVersion().String(), gvk.Kind, body); err != nil {
		return nil, err
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
	obj, err := toMap(typed)
	if err != nil {
		return nil, fmt.Errorf("re-encoding %s: %w", k.kind, err)
	}
	return obj, nil
}

// checkTypeMeta checks the apiVersion and kind of a request body.
func checkTypeMeta(k *kind, av, kd string, body []byte) error {
	switch {
	case kd == "":
		return badRequest("Object 'Kind' is missing in '%s'", truncate(body, 200))
	case av == "" || av == "/":
		return badRequest("Object 'apiVersion' is missing in '%s'", truncate(body, 200))
	case av != k.apiVersion():
		return badRequest("the API version in the data (%s) does not match the expected API version (%s)", av, k.apiVersion())
	case kd != k.kind:
		return badRequest("the kind in the data (%s) does not match the expected kind (%s)", kd, k.kind)
	}
	return nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// toStorage converts a served object into its stored form.
func (s *Server) toStorage(k *kind, obj map[string]any) (map[string]any, error) {
	if k.convert != nil {
		var err error
		if obj, err = k.convert.toStorage(obj); err != nil {
			return nil, badRequest("converting %s: %v", k.kind, err)
		}
	}
	gv, kd := k.storageVersion, k.kind
	obj["apiVersion"], obj["kind"] = gv, kd
	return obj, nil
}

// encoder returns the EncodeFunc storing obj (stored form) at a revision.
func (k *kind) encoder(obj map[string]any) storage.EncodeFunc {
	return func(rev int64) (*storage.Object, error) {
		m := meta(obj)
		m["resourceVersion"] = formatRV(rev)
		data, err := json.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", k.kind, err)
		}
		return &storage.Object{
			Namespace:  str(m, "namespace"),
			Name:       str(m, "name"),
			UID:        str(m, "uid"),
			Data:       data,
			APIVersion: str(obj, "apiVersion"),
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
}

// writeOptions reads the dryRun and fieldValidation parameters.
func writeOptions(q url.Values) (*writeOpts, error) {
	dry, err := dryRun(q)
	if err != nil {
		return nil, err
	}
	wo := &writeOpts{dryRun: dry, fieldValidation: metav1.FieldValidationWarn}
	switch v := q.Get("fieldValidation"); v {
	case "":
	case metav1.FieldValidationIgnore, metav1.FieldValidationWarn, metav1.FieldValidationStrict:
		wo.fieldValidation = v
	default:
		return nil, badRequest("fieldValidation must be one of %q, %q or %q, got %q", metav1.FieldValidationIgnore, metav1.FieldValidationWarn, metav1.FieldValidationStrict, v)
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

func unknownFieldMessages(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = fmt.Sprintf("unknown field %q", p)
	}
	return out
}

// dryRun reports whether the request asks for a dry run; only "All" is valid.
func dryRun(q url.Values) (bool, error) {
	vals := q["dryRun"]
	for _, v := range vals {
		if v != metav1.DryRunAll {
			return false, badRequest("invalid dryRun value %q: only %q is supported", v, metav1.DryRunAll)
		}
	}
	return len(vals) > 0, nil
}

func (s *Server) serveCreate(w http.ResponseWriter, r *http.Request, k *kind, ns string, q url.Values) error {
	wo, err := writeOptions(q)
	if err != nil {
		return err
	}
	body, err := s.readObjectBody(r)
	if err != nil {
		return err
	}
	obj, err := s.decodeBody(k, body, wo)
	if err != nil {
		return err
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
		return nil, badRequest("resourceVersion should not be set on objects to be created")
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
		errs = apivalidation.ValidateObjectMetaAccessorUpdate(u, old, field.NewPath("metadata"))
	}
	if k.validate != nil {
		errs = append(errs, k.validate(u.Object)...)
	}
	if old != nil && k.validateUpdate != nil {
		errs = append(errs, k.validateUpdate(u.Object, old.Object)...)
	}
	if k.crd != nil {
		errs = append(errs, k.crd.validate(u.Object)...)
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: k.gvr.Group, Kind: k.kind}, u.GetName(), errs)
	}
	return nil
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

func (s *Server) serveUpdate(w http.ResponseWriter, r *http.Request, k *kind, ri requestInfo, q url.Values) error {
	wo, err := writeOptions(q)
	if err != nil {
		return err
	}
	body, err := s.readObjectBody(r)
	if err != nil {
		return err
	}
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
		return runtime.DeepCopyJSON(obj), nil
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
	o, deleted, err := s.store.Write(k.storageResource, ri.namespace, ri.name, func(cur *storage.Object) (storage.EncodeFunc, bool, error) {
		oldObj = cur
		obj, err := next(cur)
		if err != nil {
			return nil, false, err
		}
		old, err := decodeMap(cur.Data)
		if err != nil {
			return nil, false, fmt.Errorf("decoding stored object: %w", err)
		}
		obj, changed, del, err := s.prepareUpdate(k, ri, obj, old, cur, wo)
		if err != nil || !changed {
			return nil, false, err
		}
		if wo.dryRun {
			dryResult, err = k.encoder(obj)(cur.ResourceVersion)
			return nil, false, err
		}
		return k.encoder(obj), del, nil
	})
	if err != nil {
		return nil, err
	}
	if dryResult != nil {
		return dryResult, nil
	}
	if o != oldObj { // written
		s.afterWrite(k, oldObj, o)
		if deleted {
			s.afterDelete(k, o)
		}
	}
	return o, nil
}

// prepareUpdate applies the update rules to obj (the requested new state,
// stored form) given the current state old. It reports whether anything
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
	if rv := u.GetResourceVersion(); rv != "" && rv != formatRV(cur.ResourceVersion) {
		return nil, false, false, apierrors.NewConflict(gr, ri.name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	switch {
	case ri.subresource == "status":
		// Only the status changes.
		next := runtime.DeepCopyJSON(old)
		if st, ok := obj["status"]; ok {
			next["status"] = st
		} else {
			delete(next, "status")
		}
		obj = next
		u = &unstructured.Unstructured{Object: obj}
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
			m[f] = v
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
	if _, ok := om["generation"]; ok && specChanged(k, obj, old) {
		m["generation"] = integer(old, "metadata", "generation") + 1
	}
	if reflect.DeepEqual(obj, old) {
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
		if ov, ok := old[key]; !ok || !reflect.DeepEqual(v, ov) {
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
	out, err := s.output(k, o)
	if err != nil {
		return err
	}
	code := http.StatusOK
	if !deleted && opts.PropagationPolicy != nil && *opts.PropagationPolicy == metav1.DeletePropagationForeground {
		code = http.StatusAccepted
	}
	writeJSON(w, code, out)
	return nil
}

// deleteOptions reads DeleteOptions from the body (if any) and the query.
func (s *Server) deleteOptions(r *http.Request, q url.Values) (metav1.DeleteOptions, error) {
	var opts metav1.DeleteOptions
	body, err := s.readObjectBody(r)
	if err != nil {
		return opts, err
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &opts); err != nil {
			return opts, badRequest("invalid DeleteOptions: %v", err)
		}
	}
	if v := q.Get("propagationPolicy"); v != "" {
		p := metav1.DeletionPropagation(v)
		opts.PropagationPolicy = &p
	}
	if p := opts.PropagationPolicy; p != nil && !slices.Contains([]metav1.DeletionPropagation{metav1.DeletePropagationForeground, metav1.DeletePropagationBackground, metav1.DeletePropagationOrphan}, *p) {
		return opts, apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind("DeleteOptions").GroupKind(), "", field.ErrorList{field.NotSupported(field.NewPath("propagationPolicy"), *p, []string{"Foreground", "Background", "Orphan"})})
	}
	if dr, err := dryRun(q); err != nil {
		return opts, err
	} else if dr {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	for _, v := range opts.DryRun {
		if v != metav1.DryRunAll {
			return opts, badRequest("invalid dryRun value %q", v)
		}
	}
	return opts, nil
}

// delete deletes an object, or marks it deleted (deletionTimestamp) while it
// has finalizers. It reports whether the object is gone.
func (s *Server) delete(k *kind, ns, name string, opts metav1.DeleteOptions) (*storage.Object, bool, error) {
	gr := k.groupResource()
	dry := len(opts.DryRun) > 0
	var before *storage.Object
	o, deleted, err := s.store.Write(k.storageResource, ns, name, func(cur *storage.Object) (storage.EncodeFunc, bool, error) {
		before = cur
		if p := opts.Preconditions; p != nil {
			if p.UID != nil && string(*p.UID) != cur.UID {
				return nil, false, apierrors.NewConflict(gr, name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, cur.UID))
			}
			if p.ResourceVersion != nil && *p.ResourceVersion != formatRV(cur.ResourceVersion) {
				return nil, false, apierrors.NewConflict(gr, name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, cur.ResourceVersion))
			}
		}
		if dry {
			return nil, false, nil
		}
		obj, err := decodeMap(cur.Data)
		if err != nil {
			return nil, false, fmt.Errorf("decoding stored object: %w", err)
		}
		u := &unstructured.Unstructured{Object: obj}
		isNS, isCRD := k.gvr == namespaceGVR, k.gvr == crdGVR
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
		now := metav1.NewTime(s.opts.Now())
		u.SetDeletionTimestamp(&now)
		zero := int64(0)
		u.SetDeletionGracePeriodSeconds(&zero)
		if g := u.GetGeneration(); g > 0 {
			u.SetGeneration(g + 1)
		}
		if k.gvr == namespaceGVR {
			setPath(obj, "Terminating", "status", "phase")
		}
		return k.encoder(obj), false, nil
	})
	if err != nil {
		return nil, false, err
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
	var items []json.RawMessage
	for _, o := range res.Objects {
		d, _, err := s.delete(k, o.Namespace, o.Name, opts)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		b, err := s.output(k, d)
		if err != nil {
			return err
		}
		items = append(items, b)
	}
	writeObject(w, http.StatusOK, map[string]any{
		"kind": k.listKind, "apiVersion": k.apiVersion(),
		"metadata": metav1.ListMeta{ResourceVersion: formatRV(s.store.Revision())},
		"items":    append([]json.RawMessage{}, items...),
	})
	return nil
}
