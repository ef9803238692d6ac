// Package admission serves admission webhooks: the defaulting and
// validation that a CRD schema cannot express, called by the API server on
// every write of the kinds a MutatingWebhookConfiguration or
// ValidatingWebhookConfiguration names.
//
// A Handler answers one Request (an AdmissionRequest: the operation, the
// object and the old one, the user, dryRun) with a Response: Allowed,
// Denied (403 with a message), Errored (a code of its own), Patched (a JSON
// patch that mutates the object), each with optional Warnings that the API
// server passes on to the client as Warning headers.
//
// Most webhooks are typed, as controller-runtime's:
//
//	type widgetDefaulter struct{}
//
//	func (widgetDefaulter) Default(ctx context.Context, w *v1.Widget) error {
//		if w.Spec.Color == "" {
//			w.Spec.Color = "blue"
//		}
//		return nil
//	}
//
//	h, err := admission.WithDefaulter[*v1.Widget](widgetDefaulter{})
//
// WithDefaulter decodes the object, calls Default and answers with the JSON
// patch from the object the API server sent to the defaulted one
// (CreatePatch): only what Default changed, not what a round trip through
// the Go type would (unknown fields removed, zero values added).
// WithValidator calls ValidateCreate, ValidateUpdate (old and new object) or
// ValidateDelete (the object being deleted); an error denies the request
// (a Kubernetes API error such as apierrors.NewInvalid keeps its Status),
// warnings go back either way. Both put the Request in the context
// (RequestFromContext) for the user, dryRun or sub-resource.
//
// New makes a Handler an http.Handler (Webhook): it reads AdmissionReview
// v1 (or v1beta1, for a configuration whose admissionReviewVersions asks
// for it; the answer has the request's version), bounded to
// MaxRequestBytes, recovers a handler's panic as a 500 refusal (counted:
// Panics), and fills the response's UID and code. Register it on a
// kloop.dev/kloop/webhook Server, or let kloop.dev/kloop/builder's
// WebhookManagedBy do it.
package admission
