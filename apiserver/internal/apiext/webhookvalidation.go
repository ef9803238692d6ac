package apiext

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/transport"
)

// ValidateClientConfig validates how a webhook is reached (a CRD's
// conversion webhook, an admission webhook), with kube-apiserver's rules
// and messages: exactly one of url (https, a host, no user, query or
// fragment) and service (name, namespace, a valid port, a path of DNS
// subdomain segments), and a caBundle that parses as PEM certificates.
// both is the message when both or neither are set.
func ValidateClientConfig(u *string, svc *ServiceReference, caBundle []byte, p *field.Path, both string) field.ErrorList {
	var errs field.ErrorList
	switch {
	case (u == nil) == (svc == nil):
		errs = append(errs, field.Required(p, both))
	case u != nil:
		errs = append(errs, validateWebhookURL(*u, p.Child("url"))...)
	default:
		port := int32(443)
		if svc.Port != nil {
			port = *svc.Port
		}
		errs = append(errs, validateWebhookService(svc.Namespace, svc.Name, svc.Path, port, p.Child("service"))...)
	}
	if len(caBundle) > 0 {
		if _, err := transport.TLSConfigFor(&transport.Config{TLS: transport.TLSConfig{CAData: caBundle}}); err != nil {
			errs = append(errs, field.Invalid(p.Child("caBundle"), caBundle, err.Error()))
		}
	}
	return errs
}

func validateWebhookURL(raw string, p *field.Path) field.ErrorList {
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

func validateWebhookService(namespace, name string, path *string, port int32, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	if namespace == "" {
		errs = append(errs, field.Required(p.Child("namespace"), ""))
	}
	if e := validation.IsValidPortNum(int(port)); e != nil {
		errs = append(errs, field.Invalid(p.Child("port"), port, "port is not valid: "+strings.Join(e, ", ")))
	}
	if path == nil || *path == "" || *path == "/" {
		return errs
	}
	urlPath := *path
	if urlPath == "//" {
		return append(errs, field.Invalid(p.Child("path"), urlPath, "segment[0] may not be empty"))
	}
	if !strings.HasPrefix(urlPath, "/") {
		errs = append(errs, field.Invalid(p.Child("path"), urlPath, "must start with a '/'"))
	}
	for i, seg := range strings.Split(strings.TrimSuffix(urlPath[1:], "/"), "/") {
		if seg == "" {
			errs = append(errs, field.Invalid(p.Child("path"), urlPath, fmt.Sprintf("segment[%d] may not be empty", i)))
			continue
		}
		for _, msg := range validation.IsDNS1123Subdomain(seg) {
			errs = append(errs, field.Invalid(p.Child("path"), urlPath, fmt.Sprintf("segment[%d]: %v", i, msg)))
		}
	}
	return errs
}

// ValidateReviewVersions validates a webhook's review versions
// (conversionReviewVersions, admissionReviewVersions): required, no
// duplicates, DNS labels, and at least one the server accepts.
func ValidateReviewVersions(versions, accepted []string, p *field.Path) field.ErrorList {
	if len(versions) == 0 {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	seen := map[string]bool{}
	ok := false
	for i, v := range versions {
		if seen[v] {
			errs = append(errs, field.Invalid(p.Index(i), v, "duplicate version"))
			continue
		}
		seen[v] = true
		for _, msg := range validation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, msg))
		}
		for _, a := range accepted {
			ok = ok || v == a
		}
	}
	if !ok {
		errs = append(errs, field.Invalid(p, versions, "must include at least one of "+strings.Join(accepted, ", ")))
	}
	return errs
}
