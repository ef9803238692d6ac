// Package webhook serves a process's webhooks over TLS on a port of its
// own: admission webhooks (defaulting and validation: subpackage
// admission) and CRD conversion (subpackage conversion), each at a path,
// called by the API server as a MutatingWebhookConfiguration,
// ValidatingWebhookConfiguration or a CRD's spec.conversion.webhook says.
//
// The manager holds one Server (kloop.dev/kloop/manager's
// Options.Webhook, Manager.WebhookServer) and runs it on every replica;
// kloop.dev/kloop/builder's WebhookManagedBy registers a kind's webhooks on
// it at controller-runtime's paths:
//
//	err := builder.WebhookManagedBy(mgr, &v1.Widget{}).
//		WithDefaulter(widgetDefaulter{}).  // /mutate-example-com-v1-widget
//		WithValidator(widgetValidator{}).  // /validate-example-com-v1-widget
//		Complete()                         // + /convert if Widget's versions convert
//
// The certificate and key come from Options.CertDir (tls.crt, tls.key: a
// cert-manager Secret mounted there), read at Start and again at the first
// handshake after they change, so that a rotation needs no restart; without
// CertDir the server makes a self-signed certificate at Start, for
// development and tests, whose PEM CABundle returns for the webhook
// configurations' caBundle.
//
// Each path's requests are counted (pull style: a MetricsProvider reads
// Stats at scrape time) under controller-runtime's names by
// kloop.dev/kloop/metrics's Webhook, which the manager registers:
//
//	controller_runtime_webhook_requests_total{webhook,code}
//	controller_runtime_webhook_latency_seconds{webhook}
//	controller_runtime_webhook_requests_in_flight{webhook}
//	controller_runtime_webhook_panics_total
//	controller_runtime_conversion_webhook_panics_total
//
// ReadyCheck answers once the server completes TLS handshakes (the
// manager's "webhook" readiness check).
package webhook
