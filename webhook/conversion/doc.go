// Package conversion serves CRD conversion webhooks: the API server calls
// one (a ConversionReview) whenever an object of a CRD with
// spec.conversion.strategy Webhook must change version, on reads and
// writes of a version other than the stored one and on watches.
//
// Two ways to say how versions convert:
//
//   - hub and spoke, as controller-runtime users know it: one version's Go
//     type is the Hub (an empty Hub() method), every other one is
//     Convertible (ConvertTo(Hub) and ConvertFrom(Hub)); a conversion
//     between two spokes goes through the hub. HubAndSpoke checks that a
//     kind's versions in a scheme make such a set. A kind with no
//     registered Converter is converted this way too.
//   - plain functions, one per pair of versions: Funcs(scheme,
//     NewFunc(func(ctx, src *v1alpha1.Widget, dst *v1.Widget) error {…}),
//     NewFunc(…v1 to v1alpha1…)).
//
// New makes the http.Handler (Webhook) of a scheme; Register sets a kind's
// Converter. It reads ConversionReview v1 (or v1beta1, answered in the
// version asked), decodes each object into its version's Go type, converts
// it into a new object of the desired version and answers with the
// converted objects in order, or a failure status naming the object that
// did not convert (the API server then fails the request with it). A
// converter's panic is a failure too, counted by Panics. Register it on a
// kloop.dev/kloop/webhook Server at "/convert", or let
// kloop.dev/kloop/builder's WebhookManagedBy do it for a kind whose
// versions convert.
//
// A converter must keep the object's metadata (name, namespace, uid,
// resourceVersion, …) as it is: the API server refuses a conversion that
// changes more than labels and annotations.
package conversion
