package apiserver

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kloop.dev/kloop/apiserver/storage"
)

// writeOpts are the options of a create, update or patch request.
type writeOpts struct {
	dryRun bool
	// fieldValidation is Strict (unknown fields are an error), Warn (a
	// Warning header) or Ignore; kube-apiserver's default is Warn.
	fieldValidation string
	// warnings collects the Warning headers of the response, in order,
	// each once (warn).
	warnings []string
	// original is the request body as sent when it was not JSON (YAML),
	// nil otherwise: decoding errors summarize it, as kube-apiserver's do.
	original []byte
	// user makes the request, for the kinds that check it (reviews,
	// RBAC); nil for the server's own writes and for requests whose user
	// is not kept (see withUser).
	user *identity
	// manage: the write records its manager in managedFields (every
	// request's write; not the server's own). manager is its name
	// (managerName); force takes fields from other managers on apply.
	manage  bool
	manager string
	force   bool
	// applied: the object already went through the field manager (an
	// apply that creates), so create does not record it again.
	applied bool
	// keepManagedFields: a write of the server's own whose object carries
	// the managedFields to store (what kube-apiserver records for itself).
	keepManagedFields bool
	// adm is the request as admission webhooks see it (admission.go); its
	// zero value for the server's own writes, which no webhook sees.
	adm admissionCall
	// admissionWarnings are the webhooks' warnings, in the order they
	// came (mutating, then validating), as kube-apiserver sends them.
	admissionWarnings []string
}

// summary is kube-apiserver's summary of a request body that did not
// decode: of the body as sent.
func (wo *writeOpts) summary(body []byte) string {
	if wo != nil && wo.original != nil {
		body = wo.original
	}
	return summarizeData(body, 30)
}

// writeOptions reads the dryRun, fieldValidation and fieldManager
// parameters, and for a patch of type pt, force.
func writeOptions(q url.Values, verb string, pt types.PatchType) (*writeOpts, error) {
	dry, fv, fm, force := q["dryRun"], q.Get("fieldValidation"), q.Get("fieldManager"), q["force"]
	isApply := pt == types.ApplyYAMLPatchType || pt == types.ApplyCBORPatchType
	if len(dry) == 0 && fv == "" && fm == "" && len(force) == 0 && !isApply { // nothing to validate
		return &writeOpts{fieldValidation: metav1.FieldValidationWarn, manage: true}, nil
	}
	var forceOpt *bool
	if verb == "Patch" && len(force) > 0 {
		b, err := strconv.ParseBool(force[0])
		if err != nil {
			return nil, badRequest("%v", err)
		}
		forceOpt = &b
	}
	var errs field.ErrorList
	switch verb {
	case "Create":
		errs = metavalidation.ValidateCreateOptions(&metav1.CreateOptions{DryRun: dry, FieldValidation: fv, FieldManager: fm})
	case "Update":
		errs = metavalidation.ValidateUpdateOptions(&metav1.UpdateOptions{DryRun: dry, FieldValidation: fv, FieldManager: fm})
	default:
		errs = metavalidation.ValidatePatchOptions(&metav1.PatchOptions{DryRun: dry, FieldValidation: fv, FieldManager: fm, Force: forceOpt}, pt)
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: verb + "Options"}, "", errs)
	}
	wo := &writeOpts{dryRun: len(dry) > 0, fieldValidation: metav1.FieldValidationWarn, manage: true, manager: fm}
	if fv != "" {
		wo.fieldValidation = fv
	}
	if forceOpt != nil {
		wo.force = *forceOpt
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
		for _, p := range problems {
			wo.warn(p)
		}
	}
	return nil
}

// strategyWarnings collects the warnings kube-apiserver's strategy for k
// gives about a valid object being written (old: the object it replaces,
// nil on create).
func (wo *writeOpts) strategyWarnings(k *kind, obj, old map[string]any) {
	var msgs []string
	switch {
	case old != nil && k.warningsUpdate != nil:
		msgs = k.warningsUpdate(obj, old)
	case k.warnings != nil:
		msgs = k.warnings(obj)
	}
	for _, msg := range msgs {
		wo.warn(msg)
	}
}

// warn adds a warning, unless it was given already: kube-apiserver's
// warning recorder keeps each text once, in the order they came.
func (wo *writeOpts) warn(msg string) {
	if !slices.Contains(wo.warnings, msg) {
		wo.warnings = append(wo.warnings, msg)
	}
}

// writeWarnings sets the Warning headers collected by wo: the server's
// own, in the order they came, then the admission webhooks', in theirs.
func writeWarnings(w http.ResponseWriter, wo *writeOpts) {
	msgs := append(slices.Clip(wo.warnings), wo.admissionWarnings...)
	for _, h := range warningHeaders(msgs) {
		w.Header().Add("Warning", h)
	}
}

// writeRequest reads what a create or an update (verb "Create", "Update")
// sends: its options, and its object body as JSON. wo is nil only when the
// options are invalid.
func (s *Server) writeRequest(r *http.Request, k *kind, q url.Values, verb string) (wo *writeOpts, body []byte, err error) {
	if wo, err = writeOptions(q, verb, ""); err != nil {
		return nil, nil, err
	}
	wo.user = userFrom(r)
	wo.manager = managerName(wo.manager, r.UserAgent())
	wo.adm = newAdmissionCall(r, verb+"Options")
	body, wo.original, err = s.readObjectBody(r, k.kind)
	return wo, body, err
}

// decodeStored decodes a write's object body (decodeBody) into its stored
// form.
func (s *Server) decodeStored(k *kind, body []byte, wo *writeOpts) (map[string]any, error) {
	obj, err := s.decodeBody(k, body, wo)
	if err != nil {
		return nil, err
	}
	return s.toStorage(k, obj)
}

// respond answers a write with o, the object it stored, in its served form,
// with code and the warnings wo collected.
func (s *Server) respond(w http.ResponseWriter, k *kind, o *storage.Object, code int, wo *writeOpts) error {
	out, err := s.output(k, o)
	if err != nil {
		return err
	}
	writeWarnings(w, wo)
	writeJSON(w, code, out)
	return nil
}

// warnOnError writes the warnings collected before a write failed: as
// kube-apiserver, a request's warnings are sent with its error too (an
// unknown field reported with the 422 of an invalid object).
func warnOnError(w http.ResponseWriter, wo *writeOpts, err *error) {
	if *err != nil && wo != nil {
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
