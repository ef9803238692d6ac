package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Request is one admission request: the operation, the object (and the old
// one for updates and deletes), the user, and whether it is a dry run.
type Request struct {
	admissionv1.AdmissionRequest
}

// Response is a handler's verdict. Patches, when set, are the JSON patch
// of a mutating webhook: they replace AdmissionResponse.Patch when the
// response is written.
type Response struct {
	// Patches are the JSON patch (RFC 6902) operations that mutate the
	// object, in order.
	Patches []PatchOperation
	admissionv1.AdmissionResponse
}

// Handler answers admission requests. It is called concurrently.
type Handler interface {
	Handle(ctx context.Context, req Request) Response
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(ctx context.Context, req Request) Response

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, req Request) Response { return f(ctx, req) }

// Warnings are messages for the client of the request, returned with the
// verdict (kube-apiserver passes them on as Warning headers: kubectl prints
// them).
type Warnings []string

// Allowed admits the request, with an optional message.
func Allowed(message string) Response { return verdict(true, message) }

// Denied refuses the request with kube's 403 Forbidden and the message as
// its reason; kube-apiserver answers the client
// `admission webhook "<name>" denied the request: <message>`.
func Denied(message string) Response { return verdict(false, message) }

// Errored refuses the request with the given HTTP code and err's message,
// for a request the handler could not process (400 for one it could not
// decode, 500 for its own failure).
func Errored(code int32, err error) Response {
	return Response{AdmissionResponse: admissionv1.AdmissionResponse{
		Allowed: false,
		Result:  &metav1.Status{Code: code, Message: err.Error()},
	}}
}

// Patched admits the request and mutates the object with the patch.
func Patched(message string, patches ...PatchOperation) Response {
	r := Allowed(message)
	r.Patches = patches
	return r
}

// Refused turns a handler's error into a refusal: a Kubernetes API error
// (apierrors.NewInvalid, NewForbidden, …) keeps its Status, anything else
// is Denied with its message.
func Refused(err error) Response {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		return Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &s}}
	}
	return Denied(err.Error())
}

func verdict(allowed bool, message string) Response {
	code, reason := int32(http.StatusForbidden), metav1.StatusReasonForbidden
	if allowed {
		code, reason = http.StatusOK, ""
	}
	r := Response{AdmissionResponse: admissionv1.AdmissionResponse{
		Allowed: allowed,
		Result:  &metav1.Status{Code: code, Reason: reason, Message: message},
	}}
	return r
}

// WithWarnings returns r with warnings added after its own.
func (r Response) WithWarnings(warnings ...string) Response {
	if len(warnings) > 0 {
		r.Warnings = append(append([]string(nil), r.Warnings...), warnings...)
	}
	return r
}

// complete fills what the handler left out: the request's UID, a status
// code (200), and Patch from Patches.
func (r *Response) complete(req *Request) error {
	r.UID = req.UID
	if r.Result == nil {
		r.Result = &metav1.Status{}
	}
	if r.Result.Code == 0 {
		r.Result.Code = http.StatusOK
	}
	if len(r.Patches) == 0 {
		return nil
	}
	patch, err := json.Marshal(r.Patches)
	if err != nil {
		return fmt.Errorf("encoding the patch: %w", err)
	}
	r.Patch = patch
	pt := admissionv1.PatchTypeJSONPatch
	r.PatchType = &pt
	return nil
}

type requestKey struct{}

// RequestFromContext returns the admission request a handler's context
// carries (the typed handlers' contexts do: a Defaulter or Validator reads
// the user, the dry-run flag or the sub-resource there).
func RequestFromContext(ctx context.Context) (Request, bool) {
	r, ok := ctx.Value(requestKey{}).(Request)
	return r, ok
}

// NewContextWithRequest returns ctx carrying req, for RequestFromContext.
func NewContextWithRequest(ctx context.Context, req Request) context.Context {
	return context.WithValue(ctx, requestKey{}, req)
}
