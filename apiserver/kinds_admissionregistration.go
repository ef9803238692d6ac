package apiserver

import (
	"net/url"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// admissionregistration.k8s.io/v1 ValidatingWebhookConfigurations and
// MutatingWebhookConfigurations, after kube-apiserver v1.37's defaults and
// validation (pkg/apis/admissionregistration). The server calls the
// webhooks they configure on every write they match (admission.go).

// webhook is what the two kinds' webhooks share, for defaults and
// validation.
type webhook struct {
	Name                    string
	ClientConfig            *admissionregistrationv1.WebhookClientConfig
	Rules                   []admissionregistrationv1.RuleWithOperations
	FailurePolicy           **admissionregistrationv1.FailurePolicyType
	MatchPolicy             **admissionregistrationv1.MatchPolicyType
	NamespaceSelector       **metav1.LabelSelector
	ObjectSelector          **metav1.LabelSelector
	SideEffects             *admissionregistrationv1.SideEffectClass
	TimeoutSeconds          **int32
	AdmissionReviewVersions []string
}

func validatingHooks(c *admissionregistrationv1.ValidatingWebhookConfiguration) []webhook {
	out := make([]webhook, len(c.Webhooks))
	for i := range c.Webhooks {
		h := &c.Webhooks[i]
		out[i] = webhook{h.Name, &h.ClientConfig, h.Rules, &h.FailurePolicy, &h.MatchPolicy, &h.NamespaceSelector, &h.ObjectSelector, h.SideEffects, &h.TimeoutSeconds, h.AdmissionReviewVersions}
	}
	return out
}

func mutatingHooks(c *admissionregistrationv1.MutatingWebhookConfiguration) []webhook {
	out := make([]webhook, len(c.Webhooks))
	for i := range c.Webhooks {
		h := &c.Webhooks[i]
		out[i] = webhook{h.Name, &h.ClientConfig, h.Rules, &h.FailurePolicy, &h.MatchPolicy, &h.NamespaceSelector, &h.ObjectSelector, h.SideEffects, &h.TimeoutSeconds, h.AdmissionReviewVersions}
	}
	return out
}

func defaultWebhook(h webhook) {
	if *h.FailurePolicy == nil {
		*h.FailurePolicy = ptrTo(admissionregistrationv1.Fail)
	}
	if *h.MatchPolicy == nil {
		*h.MatchPolicy = ptrTo(admissionregistrationv1.Equivalent)
	}
	if *h.NamespaceSelector == nil {
		*h.NamespaceSelector = &metav1.LabelSelector{}
	}
	if *h.ObjectSelector == nil {
		*h.ObjectSelector = &metav1.LabelSelector{}
	}
	if *h.TimeoutSeconds == nil {
		*h.TimeoutSeconds = ptrTo[int32](10)
	}
	for i := range h.Rules {
		if h.Rules[i].Scope == nil {
			h.Rules[i].Scope = ptrTo(admissionregistrationv1.AllScopes)
		}
	}
	if s := h.ClientConfig.Service; s != nil && s.Port == nil {
		s.Port = ptrTo[int32](443)
	}
}

// validateWebhooks is kube-apiserver's validation of a new configuration's
// webhooks (unique names, side effects None or NoneOnDryRun, a recognized
// AdmissionReview version).
func validateWebhooks(hooks []webhook) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, h := range hooks {
		p := field.NewPath("webhooks").Index(i)
		errs = append(errs, validation.IsFullyQualifiedName(p.Child("name"), h.Name)...)
		for j, r := range h.Rules {
			errs = append(errs, validateWebhookRule(r, p.Child("rules").Index(j))...)
		}
		if f := *h.FailurePolicy; f != nil && *f != admissionregistrationv1.Ignore && *f != admissionregistrationv1.Fail {
			errs = append(errs, field.NotSupported(p.Child("failurePolicy"), string(*f), []string{"Fail", "Ignore"}))
		}
		if m := *h.MatchPolicy; m != nil && *m != admissionregistrationv1.Exact && *m != admissionregistrationv1.Equivalent {
			errs = append(errs, field.NotSupported(p.Child("matchPolicy"), string(*m), []string{"Equivalent", "Exact"}))
		}
		allowed := []string{"None", "NoneOnDryRun"}
		switch {
		case h.SideEffects == nil:
			errs = append(errs, field.Required(p.Child("sideEffects"), "must specify one of "+strings.Join(allowed, ", ")))
		case !slices.Contains(allowed, string(*h.SideEffects)):
			errs = append(errs, field.NotSupported(p.Child("sideEffects"), string(*h.SideEffects), allowed))
		}
		if t := *h.TimeoutSeconds; t != nil && (*t > 30 || *t < 1) {
			errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), int64(*t), "the timeout value must be between 1 and 30 seconds"))
		}
		for _, sel := range []struct {
			name string
			s    *metav1.LabelSelector
		}{{"namespaceSelector", *h.NamespaceSelector}, {"objectSelector", *h.ObjectSelector}} {
			if sel.s != nil {
				errs = append(errs, metav1validation.ValidateLabelSelector(sel.s, metav1validation.LabelSelectorValidationOptions{}, p.Child(sel.name))...)
			}
		}
		cc := h.ClientConfig
		switch {
		case (cc.URL == nil) == (cc.Service == nil):
			errs = append(errs, field.Required(p.Child("clientConfig"), "exactly one of url or service is required"))
		case cc.URL != nil:
			errs = append(errs, validateWebhookURL(p.Child("clientConfig", "url"), *cc.URL)...)
		default:
			sp := p.Child("clientConfig", "service")
			if cc.Service.Name == "" {
				errs = append(errs, field.Required(sp.Child("name"), ""))
			}
			if cc.Service.Namespace == "" {
				errs = append(errs, field.Required(sp.Child("namespace"), ""))
			}
			port := deref(cc.Service.Port)
			if msgs := validation.IsValidPortNum(int(port)); msgs != nil {
				errs = append(errs, field.Invalid(sp.Child("port"), int64(port), "port is not valid: "+strings.Join(msgs, ", ")))
			}
		}
		vp := p.Child("admissionReviewVersions")
		if len(h.AdmissionReviewVersions) == 0 {
			errs = append(errs, field.Required(vp, "must specify one of v1, v1beta1"))
		} else {
			known, dup := false, map[string]bool{}
			for j, v := range h.AdmissionReviewVersions {
				if dup[v] {
					errs = append(errs, field.Invalid(vp.Index(j), v, "duplicate version"))
					continue
				}
				dup[v] = true
				for _, msg := range validation.IsDNS1035Label(v) {
					errs = append(errs, field.Invalid(vp.Index(j), v, msg))
				}
				known = known || v == "v1" || v == "v1beta1"
			}
			if !known {
				errs = append(errs, field.Invalid(vp, h.AdmissionReviewVersions, "must include at least one of v1, v1beta1"))
			}
		}
		if h.Name != "" {
			if seen[h.Name] {
				errs = append(errs, field.Duplicate(p.Child("name"), h.Name))
			}
			seen[h.Name] = true
		}
	}
	return errs
}

func validateWebhookRule(r admissionregistrationv1.RuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.Operations) == 0 {
		errs = append(errs, field.Required(p.Child("operations"), ""))
	}
	for i, op := range r.Operations {
		switch op {
		case admissionregistrationv1.OperationAll, admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete, admissionregistrationv1.Connect:
		default:
			errs = append(errs, field.NotSupported(p.Child("operations").Index(i), string(op), []string{"*", "CONNECT", "CREATE", "DELETE", "UPDATE"}))
		}
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), ""))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(p.Child("apiVersions"), ""))
	}
	if len(r.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), ""))
	}
	if s := r.Scope; s != nil && *s != admissionregistrationv1.AllScopes && *s != admissionregistrationv1.ClusterScope && *s != admissionregistrationv1.NamespacedScope {
		errs = append(errs, field.NotSupported(p.Child("scope"), string(*s), []string{"*", "Cluster", "Namespaced"}))
	}
	return errs
}

// validateWebhookURL is k8s.io/apiserver's ValidateWebhookURL (https only).
func validateWebhookURL(p *field.Path, raw string) field.ErrorList {
	const form = "; desired format: https://host[/path]"
	u, err := url.Parse(raw)
	if err != nil {
		return field.ErrorList{field.Required(p, "url must be a valid URL: "+err.Error()+form)}
	}
	var errs field.ErrorList
	if u.Scheme != "https" {
		errs = append(errs, field.Invalid(p, u.Scheme, "'https' is the only allowed URL scheme"+form))
	}
	if u.Host == "" {
		errs = append(errs, field.Invalid(p, u.Host, "host must be specified"+form))
	}
	if u.User != nil {
		errs = append(errs, field.Invalid(p, u.User.String(), "user information is not permitted in the URL"))
	}
	if u.Fragment != "" {
		errs = append(errs, field.Invalid(p, u.Fragment, "fragments are not permitted in the URL"))
	}
	if u.RawQuery != "" {
		errs = append(errs, field.Invalid(p, u.RawQuery, "query parameters are not permitted in the URL"))
	}
	return errs
}

func webhookColumns() []column {
	return defCols(def("Webhooks", "integer", "Webhooks indicates the number of webhooks registered in this configuration"), ageColumn().def)
}

func setupValidatingWebhookConfiguration(k *kind) {
	k.defaults = typedDefaults(func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
		for _, h := range validatingHooks(c) {
			defaultWebhook(h)
		}
	})
	k.validate = typedValidation(func(c *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
		return validateWebhooks(validatingHooks(c))
	})
	k.columns = webhookColumns()
	k.cells = typedCells(func(c *admissionregistrationv1.ValidatingWebhookConfiguration, now time.Time) []any {
		return []any{int64(len(c.Webhooks)), since(c.CreationTimestamp, now)}
	})
}

func setupMutatingWebhookConfiguration(k *kind) {
	k.defaults = typedDefaults(func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
		for i, h := range mutatingHooks(c) {
			defaultWebhook(h)
			if c.Webhooks[i].ReinvocationPolicy == nil {
				c.Webhooks[i].ReinvocationPolicy = ptrTo(admissionregistrationv1.NeverReinvocationPolicy)
			}
		}
	})
	k.validate = typedValidation(func(c *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
		errs := validateWebhooks(mutatingHooks(c))
		for i, h := range c.Webhooks {
			if p := h.ReinvocationPolicy; p != nil && *p != admissionregistrationv1.NeverReinvocationPolicy && *p != admissionregistrationv1.IfNeededReinvocationPolicy {
				errs = append(errs, field.NotSupported(field.NewPath("webhooks").Index(i).Child("reinvocationPolicy"), string(*p), []string{"IfNeeded", "Never"}))
			}
		}
		return errs
	})
	k.columns = webhookColumns()
	k.cells = typedCells(func(c *admissionregistrationv1.MutatingWebhookConfiguration, now time.Time) []any {
		return []any{int64(len(c.Webhooks)), since(c.CreationTimestamp, now)}
	})
}
