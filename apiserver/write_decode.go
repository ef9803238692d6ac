package apiserver

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	sigsjson "sigs.k8s.io/json"

	"kloop.dev/kloop/apiserver/internal/jsontree"
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
	if _, unique := jsontree.DecodeStrict(body); !unique && wo != nil {
		// kube-apiserver's strict decoding names the repeated fields,
		// for fieldValidation (the last value stays).
		if err := wo.unknownFields(k, duplicateFields(body)); err != nil {
			return nil, err
		}
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

// duplicateFields lists the repeated fields of a JSON object as
// kube-apiserver's strict decoding names them.
func duplicateFields(body []byte) []string {
	var v any
	strict, err := sigsjson.UnmarshalStrict(body, &v, sigsjson.DisallowDuplicateFields)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(strict))
	for _, e := range strict {
		out = append(out, e.Error())
	}
	return out
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
	k.applyDefaults(typed)
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
	k.applyDefaults(typed)
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
